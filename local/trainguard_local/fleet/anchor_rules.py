"""The rules the anchors follow (anchors.py says where each comes from): SageMaker's RetryStrategy, Debugger's
StalledTrainingRule, AWS Batch's retries, a parent's retries, InstancePreferences at launch."""

from __future__ import annotations

from dataclasses import dataclass

from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.trace import Fault, JobSpec

SAGEMAKER_RETRY, DEBUGGER_RULE, AWS_BATCH = "sagemaker_retry", "debugger_rule", "aws_batch"


@dataclass(frozen=True)
class RetryStrategy:
    """SageMaker's RetryStrategy: InternalServerError only, MaximumRetryAttempts (1-30), one MaxRuntime."""

    maximum_retry_attempts: int = 3

    def retries(self, kind: FaultKind) -> bool:
        return kind is FaultKind.INTERNAL_ERROR


@dataclass(frozen=True)
class StalledTrainingRule:
    """Debugger's StalledTrainingRule with StopTraining: fires after `threshold_seconds` without output."""

    threshold_seconds: int = 1800

    @property
    def threshold_hours(self) -> float:
        return self.threshold_seconds / 3600

    def can_stop(self, job: JobSpec) -> bool:
        return job.uses_debugger_hook and not job.spot and not job.in_vpc


@dataclass(frozen=True)
class BatchRetries:
    """AWS Batch's service-job retries: capacity always, without attempts; `attempts` for the rule's reasons."""

    attempts: int = 3
    retried_kinds: frozenset[FaultKind] = frozenset({FaultKind.INTERNAL_ERROR})  # the docs' example rule


def parent_retries(job: JobSpec, kind: FaultKind) -> bool:
    """Whether the job's parent starts a new job after this failure by itself."""
    if job.owner == "aws_batch" and kind is FaultKind.CAPACITY_ERROR:
        return True
    return job.owner_retries and kind in (FaultKind.INTERNAL_ERROR, FaultKind.CAPACITY_ERROR)


def starts_on_an_alternative(job: JobSpec, fault: Fault | None) -> bool:
    """A job launched with InstancePreferences whose capacity error an alternative with capacity avoids."""
    return (
        fault is not None
        and fault.kind is FaultKind.CAPACITY_ERROR
        and job.launched_with_preferences
        and bool(fault.alternatives_with_capacity)
    )
