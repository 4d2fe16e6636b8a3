"""What teams use today, as models built from the documentation (they are models, not the services).

- `none`: nothing acts. A person on call notices a failure, a stop or a hang after a response time
  and relaunches from the checkpoint (requesting the quota first at a quota wall). A hang bills
  until the person stops it, or until MaxRuntimeInSeconds (default 1 day) stops it if sooner.
  Source: docs/aws-facts.md, "Anchors' behaviour": "Nothing in SageMaker acts on a job that hangs without
  failing: it runs until MaxRuntimeInSeconds"; https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_StoppingCondition.html
- `sagemaker_retry`: SageMaker's RetryStrategy retries a job that fails with InternalServerError, and
  nothing else, up to MaximumRetryAttempts times (1-30); the retry is the same job, so MaxRuntime
  covers all attempts; it resumes from the checkpoint. Everything else as `none`.
  Source: docs/aws-facts.md, "Anchors' behaviour"; https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_RetryStrategy.html
- `debugger_rule`: Debugger's StalledTrainingRule with the StopTraining action stops a job whose hook
  saved nothing for `threshold` seconds (default 1800), and never relaunches. It needs the Debugger
  hook (not from PyTorch 2.0 on), and its actions work neither in a VPC (nor with network isolation)
  nor on spot jobs. After its stop, the person relaunches. Everything else as `none`.
  Source: docs/aws-facts.md, "Anchors' behaviour"; https://docs.aws.amazon.com/sagemaker/latest/dg/debugger-built-in-rules.html
  (StalledTrainingRule); https://docs.aws.amazon.com/sagemaker/latest/dg/debugger-built-in-actions.html
  ("Considerations": no network isolation or VPC, no spot training interruptions).

- `aws_batch`: every job submitted to an AWS Batch job queue for SageMaker Training (service jobs, 2025),
  what a team would pick instead of a guard today. Modelled from its documentation:
  * queueing: jobs wait RUNNABLE until the service environment has room, "started as soon as sufficient
    resources are available" (https://docs.aws.amazon.com/batch/latest/userguide/service-job-status.html);
    the model assumes a service environment large enough for the trace (no queueing delay), FIFO
    ("defaults to a first-in, first-out (FIFO) strategy", .../job_scheduling.html), so priorities and fair
    share never reorder its jobs;
  * capacity: "When a SageMaker Training job fails due to insufficient capacity, AWS Batch retries the job
    automatically until capacity becomes available [...] These capacity-based retries don't consume your
    configured retry attempts" (.../service-job-retries.html): each retry is a new training job, refused
    again while the trace's repeats last;
  * per-reason retry rules: `retryStrategy` with `attempts` (1-10) and `evaluateOnExit` rules on
    `onStatusReason`; the model uses the documented example: RETRY on "Received status from SageMaker:
    InternalServerError*", EXIT on everything else, 3 attempts (.../service-job-retries.html,
    API_ServiceJobRetryStrategy.html). Hardware faults, NCCL timeouts and spot stops past MaxWait exit;
  * no stall detection: a hang bills until the attempt's timeout (the SDK's default attemptDurationSeconds,
    86400 s, as MaxRuntime's default day) or the person;
  * no quota requests: a quota wall is the person's, as in `none`.
  Everything else as `none`.

Parents (every strategy): a job a SageMaker Pipelines step or an AWS Batch queue launched is retried by
its parent where its owner configured it (Pipelines RetryPolicies SageMaker.JOB_INTERNAL_ERROR and
SageMaker.CAPACITY_ERROR start a new job, pipelines-retry-policy.html; Batch retries capacity errors
always, internal errors when configured), a new job a minute later; a job launched with InstancePreferences
starts on the first listed type with capacity (ResourceConfig.InstancePreferences), so its capacity
error does not happen when an alternative has capacity.

Every strategy meets the same person (`person.py`).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from trainguard_local.fleet.model import ActionKind, JobOutcome, JobTimeline, State
from trainguard_local.fleet.person import PersonOnCall, person_rng
from trainguard_local.simulation.fault_table import FAULT_TABLE, USER_ERROR_KINDS, Ending, FaultKind
from trainguard_local.simulation.trace import Fault, JobSpec, Trace, sync_failure

PERSON, SAGEMAKER_RETRY, DEBUGGER_RULE, AWS_BATCH = "person", "sagemaker_retry", "debugger_rule", "aws_batch"
CAPACITY_REFUSAL_MINUTES = 5.0  # a launch refused for capacity fails after this long, without instances (assumption)
PARENT_RETRY_MINUTES = 1.0  # a parent's retry starts the new job this long after the failure (assumption)
_MAX_LAUNCHES = 100  # a guard against a model that never ends


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


@dataclass(frozen=True)
class AnchorStrategy:
    name: str
    model_of: str
    sources: tuple[str, ...]
    person: PersonOnCall = field(default_factory=PersonOnCall)
    retry_strategy: RetryStrategy | None = None
    stall_rule: StalledTrainingRule | None = None
    batch: BatchRetries | None = None

    def describe(self) -> dict[str, Any]:
        """What the report says about this strategy: that it is a model, of what, from which sources."""
        parameters: dict[str, Any] = {
            "person_median_response_hours": self.person.median_response_hours,
            "person_response_sigma": self.person.response_sigma,
            "person_longest_response_hours": self.person.longest_response_hours,
            "person_fix_hours": self.person.fix_hours,
        }
        if self.retry_strategy is not None:
            parameters["maximum_retry_attempts"] = self.retry_strategy.maximum_retry_attempts
        if self.stall_rule is not None:
            parameters["threshold_seconds"] = self.stall_rule.threshold_seconds
        if self.batch is not None:
            parameters["retry_attempts"] = self.batch.attempts
            parameters["retried_on"] = sorted(kind.value for kind in self.batch.retried_kinds)
        return {"model": True, "model_of": self.model_of, "sources": list(self.sources), "parameters": parameters}

    def run(self, trace: Trace) -> list[JobOutcome]:
        return [
            _JobLife(self, job, trace.fault_of(job.name), person_rng(trace.seed, job.name)).run() for job in trace.jobs
        ]


_FACTS = "docs/aws-facts.md, Anchors' behaviour"


def no_guard(person: PersonOnCall | None = None) -> AnchorStrategy:
    return AnchorStrategy(
        "none",
        "no guard: a person on call notices and relaunches",
        (_FACTS, "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_StoppingCondition.html"),
        person or PersonOnCall(),
    )


def sagemaker_retry(person: PersonOnCall | None = None, attempts: int = 3) -> AnchorStrategy:
    return AnchorStrategy(
        "sagemaker_retry",
        "SageMaker's RetryStrategy (InternalServerError only); a person for the rest",
        (_FACTS, "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_RetryStrategy.html"),
        person or PersonOnCall(),
        retry_strategy=RetryStrategy(attempts),
    )


def debugger_rule(person: PersonOnCall | None = None, threshold_seconds: int = 1800) -> AnchorStrategy:
    return AnchorStrategy(
        "debugger_rule",
        "Debugger's StalledTrainingRule with StopTraining, no relaunch; a person for the rest",
        (
            _FACTS,
            "https://docs.aws.amazon.com/sagemaker/latest/dg/debugger-built-in-rules.html",
            "https://docs.aws.amazon.com/sagemaker/latest/dg/debugger-built-in-actions.html",
        ),
        person or PersonOnCall(),
        stall_rule=StalledTrainingRule(threshold_seconds),
    )


def aws_batch(person: PersonOnCall | None = None, attempts: int = 3) -> AnchorStrategy:
    return AnchorStrategy(
        "aws_batch",
        "AWS Batch for SageMaker Training: capacity retried without attempts, InternalServerError by rule; a person "
        "for the rest",
        (
            "https://docs.aws.amazon.com/batch/latest/userguide/service-job-retries.html",
            "https://docs.aws.amazon.com/batch/latest/APIReference/API_ServiceJobRetryStrategy.html",
            "https://docs.aws.amazon.com/batch/latest/userguide/service-job-status.html",
            "https://docs.aws.amazon.com/batch/latest/userguide/job_scheduling.html",
        ),
        person or PersonOnCall(),
        batch=BatchRetries(attempts),
    )


def anchor_strategies(person: PersonOnCall | None = None) -> tuple[AnchorStrategy, ...]:
    return no_guard(person), sagemaker_retry(person), debugger_rule(person), aws_batch(person)


class _JobLife:
    """One job under one anchor: launch after launch until the work is done."""

    def __init__(self, anchor: AnchorStrategy, job: JobSpec, fault: Fault | None, rng: random.Random) -> None:
        self.anchor, self.job, self.rng = anchor, job, rng
        self.tl = JobTimeline(job, anchor.name)
        capacity = fault is not None and fault.kind is FaultKind.CAPACITY_ERROR
        self.capacity_refusals = self.capacity_refusals_in_fault = fault.repeats + 1 if fault and capacity else 0
        if starts_on_an_alternative(job, fault):
            self.capacity_refusals = self.capacity_refusals_in_fault = 0
        self.fault = None if capacity else fault  # pending until it strikes
        self.sagemaker_retries = 0
        self.batch_attempts = 1
        self.next_is_new_job = True

    def run(self) -> JobOutcome:
        for _ in range(_MAX_LAUNCHES):
            self.tl.launch(new_job=self.next_is_new_job)
            if self.next_is_new_job:
                self.sagemaker_retries = 0
            self.next_is_new_job = True
            self._run_launch()
            if self.tl.completed_at is not None:
                return self.tl.outcome()
        raise RuntimeError(f"{self.job.name}: no completion after {_MAX_LAUNCHES} launches")

    def _run_launch(self) -> None:
        tl = self.tl
        if self.capacity_refusals:
            self._refused_for_capacity()
            return
        tl.start()
        while True:
            fault = self.fault
            if not tl.train_to(fault.at_work_hours if fault else self.job.work_hours):
                self._stopped_at_max_runtime()
                return
            if fault is None:
                tl.complete()
                return
            self.fault = None
            if self._strike(fault):
                return

    def _strike(self, fault: Fault) -> bool:
        """The fault strikes, as its row of the fault table says; True when the launch ended."""
        row = FAULT_TABLE[fault.kind]
        if row.ending is Ending.TRAINS_ON and not row.silent:
            # Nobody notices that its checkpoints stopped reaching S3: the job trains on, and its hardware failure
            # strikes later (a fault of its own).
            self.tl.sync_stopped_after = fault.at_work_hours
            self.fault = sync_failure(fault)
            return False
        if row.ending is Ending.TRAINS_ON:
            return self._silent_but_healthy(fault)
        if row.ending is Ending.HANGS:
            self._hangs(fault.kind)
        elif row.ending is Ending.INTERRUPTED:
            self.tl.lose_work_since_checkpoint()  # the instances are reclaimed
            self.tl.wait_until(State.QUEUED, self.tl.now + fault.spot_wait_hours)  # Interrupted, until MaxWait
            self.tl.struck(fault.kind, self.tl.now)
            self._person_relaunches(fault.kind, self.tl.now)
        else:
            struck = self.tl.now  # an NCCL timeout strikes when its collective hangs, and fails at the timeout
            self.tl.hang_until(self.tl.now + fault.hung_minutes / 60)
            self._fails(fault, struck)
        return True

    def _refused_for_capacity(self) -> None:
        tl = self.tl
        tl.wait_until(State.QUEUED, tl.now + CAPACITY_REFUSAL_MINUTES / 60)
        if self.capacity_refusals == self.capacity_refusals_in_fault:  # the fault's recovery runs from the first
            tl.struck(FaultKind.CAPACITY_ERROR, tl.now)
        self.capacity_refusals -= 1
        if not self._retried_automatically(FaultKind.CAPACITY_ERROR, tl.now):
            self._person_relaunches(FaultKind.CAPACITY_ERROR, tl.now)

    def _retried_automatically(self, kind: FaultKind, struck: float) -> bool:
        """AWS Batch (the strategy) or the job's parent starts a new job by itself; True when one did."""
        batch, tl = self.anchor.batch, self.tl
        if batch is not None and kind is FaultKind.CAPACITY_ERROR:
            actor = AWS_BATCH  # "capacity-based retries don't consume your configured retry attempts"
        elif batch is not None and kind in batch.retried_kinds and self.batch_attempts < batch.attempts:
            self.batch_attempts += 1
            actor = AWS_BATCH
        elif parent_retries(self.job, kind):
            actor = self.job.owner
        else:
            return False
        tl.wait_until(State.FAILED, tl.now + PARENT_RETRY_MINUTES / 60)
        tl.detect(kind, struck, actor)
        tl.act(ActionKind.RELAUNCH, actor, note="a new job, by its own retry rules")
        return True

    def _fails(self, fault: Fault, struck: float) -> None:
        tl, retry = self.tl, self.anchor.retry_strategy
        tl.lose_work_since_checkpoint()
        tl.struck(fault.kind, struck)
        if (
            retry is not None
            and retry.retries(fault.kind)
            and self.sagemaker_retries < retry.maximum_retry_attempts
            and tl.runtime_left > self.job.startup_minutes / 60
        ):
            self.sagemaker_retries += 1
            tl.detect(fault.kind, struck, SAGEMAKER_RETRY)
            tl.act(ActionKind.RELAUNCH, SAGEMAKER_RETRY, note="RetryStrategy: the same job starts again")
            self.next_is_new_job = False
        elif fault.kind is FaultKind.QUOTA_WALL:
            self._quota_wall(fault, struck)
        elif self._retried_automatically(fault.kind, struck):
            pass
        else:
            self._person_relaunches(fault.kind, tl.now, struck_at=struck, fix=fault.kind in USER_ERROR_KINDS)

    def _hangs(self, kind: FaultKind) -> None:
        tl, rule = self.tl, self.anchor.stall_rule
        struck = tl.now
        tl.struck(kind, struck)
        response = self.anchor.person.response_hours(self.rng)
        rule_fires = struck + rule.threshold_hours if rule is not None and rule.can_stop(self.job) else math.inf
        if rule_fires < struck + response and tl.hang_until(rule_fires):
            tl.detect(kind, struck, DEBUGGER_RULE)
            tl.act(ActionKind.STOP, DEBUGGER_RULE)
            tl.lose_work_since_checkpoint()
            self._person_relaunches(None, tl.now, response=response)
            return
        if tl.hang_until(struck + response):
            tl.act(ActionKind.STOP, PERSON)
        tl.lose_work_since_checkpoint()  # stopped by the person, or by MaxRuntime before
        self._person_relaunches(kind, struck, response=response)

    def _silent_but_healthy(self, fault: Fault) -> bool:
        tl, rule = self.tl, self.anchor.stall_rule
        if rule is None or not rule.can_stop(self.job) or fault.silent_minutes * 60 <= rule.threshold_seconds:
            return False  # the silence passes, training goes on
        if not tl.train_to(tl.progress + rule.threshold_hours):
            self._stopped_at_max_runtime()
            return True
        tl.detect(fault.kind, tl.now - rule.threshold_hours, DEBUGGER_RULE)
        tl.act(ActionKind.STOP, DEBUGGER_RULE, right=False, note="a healthy job, silent for a while")
        tl.lose_work_since_checkpoint(no_checkpoint_after=fault.at_work_hours)  # none is written while silent
        self._person_relaunches(None, tl.now)
        return True

    def _quota_wall(self, fault: Fault, struck: float) -> None:
        tl, person = self.tl, self.anchor.person
        tl.wait_until(State.WAITING_FOR_PERSON, tl.now + person.response_hours(self.rng))
        tl.detect(fault.kind, struck, PERSON)
        tl.act(ActionKind.RELAUNCH, PERSON, succeeded=False, note=fault.launch_refusal or "")
        tl.act(ActionKind.QUOTA_REQUEST, PERSON, target=fault.quota_name)
        tl.wait_until(State.WAITING_FOR_QUOTA, tl.now + fault.quota_approval_hours)
        tl.wait_until(State.WAITING_FOR_PERSON, tl.now + person.response_hours(self.rng))
        tl.act(ActionKind.RELAUNCH, PERSON, note="after the quota increase")

    def _stopped_at_max_runtime(self) -> None:
        self.tl.lose_work_since_checkpoint()
        self._person_relaunches(None, self.tl.now)

    def _person_relaunches(
        self,
        kind: FaultKind | None,
        since: float,
        *,
        struck_at: float | None = None,
        fix: bool = False,
        response: float | None = None,
    ) -> None:
        """The person notices, a response time after `since`, what happened then, and relaunches. `kind`:
        the fault they detect (struck at `struck_at`, default `since`); None when it was detected before."""
        tl, person = self.tl, self.anchor.person
        response = person.response_hours(self.rng) if response is None else response
        tl.wait_until(State.WAITING_FOR_PERSON, since + response)
        if kind is not None:
            tl.detect(kind, since if struck_at is None else struck_at, PERSON)
        if fix:
            tl.wait_until(State.WAITING_FOR_PERSON, tl.now + person.fix_hours)
        tl.act(ActionKind.RELAUNCH, PERSON, note="after a fix" if fix else "from the newest checkpoint")
