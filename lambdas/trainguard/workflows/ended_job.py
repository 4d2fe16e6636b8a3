"""What the workflows of an ended job share: describe the job again and read its policy; tell its owners."""

from __future__ import annotations

from dataclasses import dataclass

from trainguard.domain.checkpoints import CheckpointState
from trainguard.domain.fallbacks import read_fallback_options
from trainguard.domain.job_end import Assessment, assess_job_end
from trainguard.domain.messages import compose_job_end_notification
from trainguard.domain.model import TrainingJob
from trainguard.domain.outcome import Outcome, OutcomeKind, skipped
from trainguard.domain.policy import JobPolicy, read_job_policy
from trainguard.workflows.function_ports import EndedJobPorts
from trainguard.workflows.once import Step
from trainguard.workflows.ports import fresh


@dataclass(frozen=True)
class Reassessed:
    job: TrainingJob
    policy: JobPolicy
    assessment: Assessment


def reassess(ports: EndedJobPorts, job_name: str) -> Reassessed | Outcome:
    """The job as it is now (the event was only a hint), its policy, and what its end calls for."""
    job = fresh(ports.jobs.describe(job_name))
    if job is None:
        return skipped(job_name, "the job no longer exists (DescribeTrainingJob: not found)")
    policy = read_job_policy(job.tags, ports.config.policy_defaults, ports.keys)
    stall = ports.stall_ledger.stall_record(job.name) if job.status == "Stopped" else None
    stall_reason = str(stall.get("reason", "stalled")) if stall else ""
    return Reassessed(job, policy, assess_job_end(job, policy, stall_reason))


def already_handled(assessment: Assessment, step: Step) -> Outcome:
    return assessment.outcome(
        OutcomeKind.ALREADY_HANDLED,
        f"already handled ({step.name}): {step.recorded.get('kind', 'done')}",
        step.recorded.get("new_job_name", ""),
    )


def tell_job_end(ports: EndedJobPorts, facts: Reassessed, outcome: Outcome, checkpoint: CheckpointState) -> None:
    """Told before the step is recorded: a failure in between means told twice, never not told (the
    redelivery acts again idempotently, and tells again)."""
    job = facts.job
    problems = facts.policy.problems + read_fallback_options(job.tags, ports.keys).problems
    if outcome.notifies:
        notification = compose_job_end_notification(
            job, outcome, checkpoint, tuple(p.describe() for p in problems), ports.region, ports.clock()
        )
        ports.notifier.publish(notification)
