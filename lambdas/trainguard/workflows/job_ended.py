"""A training job ended: describe it again, decide, act at most once, tell its owners."""

from __future__ import annotations

from trainguard.domain.checkpoints import CheckpointState
from trainguard.domain.job_end import assess_job_end
from trainguard.domain.messages import compose_job_end_notification
from trainguard.domain.model import Decision, TrainingJob
from trainguard.domain.outcome import Outcome, OutcomeKind, skipped
from trainguard.domain.policy import read_job_policy
from trainguard.workflows.ports import GuardPorts, StepState
from trainguard.workflows.relaunch import relaunch_or_schedule

STEP = "end"


def handle_job_end(ports: GuardPorts, job_name: str) -> Outcome:
    now = ports.clock()
    job = ports.describe_fresh(job_name)
    if job is None:
        return skipped(job_name, "the job no longer exists (DescribeTrainingJob: not found)")
    policy = read_job_policy(job.tags, ports.config.policy_defaults, ports.keys)
    assessment = assess_job_end(job, policy)
    if not assessment.opted_in:
        return skipped(job.name, assessment.reason)
    if not job.is_terminal:
        return skipped(job.name, f"the job is {job.status} now; the event was an old or early one")
    if assessment.decision is Decision.IGNORE:
        return Outcome(
            OutcomeKind.SKIPPED,
            job.name,
            assessment.reason,
            assessment.decision.value,
            assessment.classification.category.value,
        )

    start = ports.ledger.begin_step(job.name, STEP, now)
    if start.state is StepState.DONE:
        return Outcome(
            OutcomeKind.ALREADY_HANDLED,
            job.name,
            f"already handled: {start.recorded.get('kind', 'done')}",
            assessment.decision.value,
            assessment.classification.category.value,
            start.recorded.get("new_job_name", ""),
        )
    try:
        checkpoint = ports.checkpoints.read(job.checkpoint_s3_uri)
        if assessment.decision is Decision.RETRY:
            outcome = relaunch_or_schedule(ports, job, assessment, policy, checkpoint, now)
        else:
            outcome = Outcome(
                OutcomeKind.NOTIFIED,
                job.name,
                assessment.reason,
                assessment.decision.value,
                assessment.classification.category.value,
            )
        tell(ports, job, outcome, checkpoint, tuple(p.describe() for p in policy.problems))
        ports.ledger.finish_step(job.name, STEP, outcome, now)
    except Exception:
        ports.ledger.abandon_step(job.name, STEP)
        raise
    return outcome


def tell(
    ports: GuardPorts,
    job: TrainingJob,
    outcome: Outcome,
    checkpoint: CheckpointState | None,
    tag_problems: tuple[str, ...],
) -> None:
    if outcome.notifies:
        notification = compose_job_end_notification(
            job, outcome, checkpoint, tag_problems, ports.region, ports.clock()
        )
        ports.notifier.publish(notification)
