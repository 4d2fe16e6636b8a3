"""A delayed relaunch fires (capacity backoff): check again that it is still wanted, then launch."""

from __future__ import annotations

from trainguard.domain.job_end import RelaunchPlan, assess_job_end
from trainguard.domain.model import Decision
from trainguard.domain.outcome import Outcome, OutcomeKind, skipped
from trainguard.domain.policy import read_job_policy
from trainguard.workflows.job_ended import tell
from trainguard.workflows.ports import GuardPorts, StepState
from trainguard.workflows.relaunch import launch, plan_for

STEP = "relaunch"


def handle_scheduled_relaunch(ports: GuardPorts, failed_job_name: str) -> Outcome:
    now = ports.clock()
    job = ports.describe_fresh(failed_job_name)
    if job is None:
        return skipped(failed_job_name, "the failed job no longer exists; nothing to relaunch")
    policy = read_job_policy(job.tags, ports.config.policy_defaults, ports.keys)
    assessment = assess_job_end(job, policy)
    if not assessment.opted_in or assessment.decision is not Decision.RETRY:
        return skipped(job.name, f"the relaunch is no longer wanted: {assessment.reason}")

    start = ports.ledger.begin_step(job.name, STEP, now)
    if start.state is StepState.DONE:
        return Outcome(
            OutcomeKind.ALREADY_HANDLED,
            job.name,
            "the scheduled relaunch already ran",
            assessment.decision.value,
            assessment.classification.category.value,
            start.recorded.get("new_job_name", ""),
        )
    try:
        checkpoint = ports.checkpoints.read(job.checkpoint_s3_uri)
        plan = plan_for(ports, job, assessment, policy, checkpoint, now)
        if isinstance(plan, RelaunchPlan):
            outcome = launch(ports, job, assessment, plan, now)
        else:
            outcome = Outcome(
                OutcomeKind.NOT_RELAUNCHED,
                job.name,
                f"{assessment.reason} Not relaunched at the scheduled time: {plan.reason}",
                assessment.decision.value,
                assessment.classification.category.value,
            )
        tell(ports, job, outcome, checkpoint, tuple(p.describe() for p in policy.problems))
        ports.ledger.finish_step(job.name, STEP, outcome, now)
    except Exception:
        ports.ledger.abandon_step(job.name, STEP)
        raise
    return outcome
