"""The steps every workflow shares: describe the job again and read its policy; act on it at most once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from trainguard.domain.checkpoints import CheckpointState
from trainguard.domain.fallbacks import read_fallback_options
from trainguard.domain.job_end import Assessment, assess_job_end
from trainguard.domain.messages import compose_job_end_notification
from trainguard.domain.model import TrainingJob
from trainguard.domain.outcome import Outcome, OutcomeKind, skipped
from trainguard.domain.policy import JobPolicy, read_job_policy
from trainguard.workflows.function_ports import EndedJobPorts
from trainguard.workflows.ports import StepState, fresh


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


def act_once(ports: EndedJobPorts, facts: Reassessed, step: str, act: Callable[[CheckpointState], Outcome]) -> Outcome:
    """Run `act` for this job and step only if no earlier delivery did; tell the owners; record it."""
    now = ports.clock()
    job, assessment = facts.job, facts.assessment
    start = ports.ledger.begin_step(job.name, step, now)
    if start.state is StepState.DONE:
        done = start.recorded.get("kind", "done")
        return assessment.outcome(
            OutcomeKind.ALREADY_HANDLED,
            f"already handled ({step}): {done}",
            start.recorded.get("new_job_name", ""),
        )
    try:
        checkpoint = ports.checkpoints.read(job.checkpoint_s3_uri)
        outcome = act(checkpoint)
        # Told before the step is marked done: a failure in between means told twice, never not told (the
        # redelivery acts again idempotently, and tells again).
        problems = facts.policy.problems + read_fallback_options(job.tags, ports.keys).problems
        _tell(ports, job, outcome, checkpoint, tuple(p.describe() for p in problems))
        ports.ledger.finish_step(job.name, step, outcome, now)
    except Exception:
        ports.ledger.abandon_step(job.name, step)
        raise
    return outcome


def _tell(
    ports: EndedJobPorts,
    job: TrainingJob,
    outcome: Outcome,
    checkpoint: CheckpointState,
    tag_problems: tuple[str, ...],
) -> None:
    if outcome.notifies:
        notification = compose_job_end_notification(job, outcome, checkpoint, tag_problems, ports.region, ports.clock())
        ports.notifier.publish(notification)
