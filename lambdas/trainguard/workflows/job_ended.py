"""A training job ended: describe it again, decide, act at most once, tell its owners.

The scheduled relaunch (scheduled_relaunch.py) shares the steps below `handle_job_end`."""

from __future__ import annotations

from datetime import datetime

from trainguard.domain.checkpoint_health import advise_lineage
from trainguard.domain.checkpoints import CheckpointState
from trainguard.domain.fallback_options import LaunchBounds, read_fallback_options, within_bounds
from trainguard.domain.job_end import Assessment, EndedJob, assess_job_end
from trainguard.domain.messages import compose_job_end_notification
from trainguard.domain.model import Decision, TrainingJob
from trainguard.domain.outcome import Outcome, OutcomeKind, skipped
from trainguard.domain.policy import read_job_policy
from trainguard.workflows.function_ports import EndedJobPorts, JobEventsPorts
from trainguard.workflows.once import Step, once
from trainguard.workflows.ports import fresh
from trainguard.workflows.relaunch import lineage_start_of, relaunch

STEP = "end"


def handle_job_end(ports: JobEventsPorts, job_name: str) -> Outcome:
    facts = reassess(ports, job_name)
    if isinstance(facts, Outcome):
        return facts
    job, assessment = facts.job, facts.assessment
    if not job.is_terminal:
        return skipped(job.name, f"the job is {job.status} now; the event was an old or early one")
    if assessment.decision is Decision.IGNORE:
        # An opted-in job's end is recorded even when nothing is done (a person stopped it, its
        # tuning job owns it): the ledger has every decision about a guarded job, with its reason.
        outcome = assessment.outcome(OutcomeKind.SKIPPED)
        ports.ledger.finish_step(job.name, STEP, outcome, ports.clock())
        return outcome

    now = ports.clock()
    with once(ports, job.name, STEP, now) as step:
        if step.done:
            return already_handled(assessment, step)
        checkpoint = ports.checkpoints.read(job.checkpoint_s3_uri)
        if assessment.decision in (Decision.RETRY, Decision.QUOTA):
            outcome = relaunch(ports, facts, checkpoint, now)
        else:
            outcome = assessment.outcome(OutcomeKind.NOTIFIED)
        tell_job_end(ports, facts, outcome, checkpoint)
        return step.record(outcome)


def reassess(ports: EndedJobPorts, job_name: str) -> EndedJob | Outcome:
    """The job as it is now (the event was only a hint), its policy, and what its end calls for; or the
    skip that says why it is not trainguard's to act on (gone, or not opted in)."""
    job = fresh(ports.jobs.describe(job_name))
    if job is None:
        return skipped(job_name, "the job no longer exists (DescribeTrainingJob: not found)")
    policy = read_job_policy(job.tags, ports.config.policy_defaults, ports.keys)
    stall = ports.stall_ledger.stall_record(job.name) if job.status == "Stopped" else None
    stall_reason = str(stall.get("reason", "stalled")) if stall else ""
    assessment = assess_job_end(job, policy, stall_reason, str(stall.get("finding", "")) if stall else "")
    if not assessment.opted_in:
        return skipped(job.name, assessment.reason)
    return EndedJob(job, policy, assessment)


def already_handled(assessment: Assessment, step: Step) -> Outcome:
    return assessment.outcome(
        OutcomeKind.ALREADY_HANDLED,
        f"already handled ({step.name}): {step.recorded.get('kind', 'done')}",
        step.recorded.get("new_job_name", ""),
    )


def tell_job_end(ports: EndedJobPorts, facts: EndedJob, outcome: Outcome, checkpoint: CheckpointState) -> None:
    """Told before the step is recorded: a failure in between means told twice, never not told (the
    redelivery acts again idempotently, and tells again)."""
    job = facts.job
    if outcome.notifies:
        now = ports.clock()
        advice = lineage_advice(ports, job, outcome, checkpoint, now)
        notification = compose_job_end_notification(
            job, outcome, checkpoint, tag_notes(ports, facts), ports.region, now, advice
        )
        ports.notifier.publish(notification)


def tag_notes(ports: EndedJobPorts, facts: EndedJob) -> tuple[str, ...]:
    """The job's tags that could not be read, and what its fallback tags asked beyond the deployment's bounds."""
    options = read_fallback_options(facts.job.tags, ports.keys)
    bounds = LaunchBounds(ports.config.launchable_instance_types, lineage_start_of(ports, facts.job))
    bounded = within_bounds(options, facts.job.description, bounds)
    keys = f"{ports.keys.fallback_types} / {ports.keys.on_demand_after}"
    return (
        *(p.describe() for p in facts.policy.problems + options.problems),
        *(f"tag {keys} not followed: {note}" for note in bounded.not_followed),
    )


def lineage_advice(
    ports: EndedJobPorts, job: TrainingJob, outcome: Outcome, checkpoint: CheckpointState, now: datetime
) -> str:
    """With a relaunch, the lineage's checkpoint advice when it differs much from its interval: its failures so
    far (the relaunch's attempt number) since its root was created (one more DescribeTrainingJob)."""
    if outcome.kind not in (OutcomeKind.RELAUNCHED, OutcomeKind.RELAUNCH_SCHEDULED) or not checkpoint.configured:
        return ""
    root_name = str(outcome.details.get("root_job") or job.name)
    root = job if root_name == job.name else fresh(ports.jobs.describe(root_name))
    if root is None or root.creation_time is None:
        return ""
    hours = (now - root.creation_time).total_seconds() / 3600
    return advise_lineage(job, int(outcome.details.get("attempt") or 1), hours, checkpoint).sentence()
