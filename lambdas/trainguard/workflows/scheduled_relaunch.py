"""A delayed relaunch fires (capacity backoff): check again that it is still wanted, then launch."""

from __future__ import annotations

from trainguard.domain.job_end import RelaunchPlan
from trainguard.domain.model import Decision
from trainguard.domain.outcome import Outcome, OutcomeKind, skipped
from trainguard.workflows.function_ports import EndedJobPorts
from trainguard.workflows.job_ended import already_handled, reassess, tell_job_end
from trainguard.workflows.once import once
from trainguard.workflows.relaunch import launch, plan_for

STEP = "relaunch"


def handle_scheduled_relaunch(ports: EndedJobPorts, failed_job_name: str) -> Outcome:
    facts = reassess(ports, failed_job_name)
    if isinstance(facts, Outcome):
        return facts  # gone, or no longer opted in
    job, assessment = facts.job, facts.assessment
    if assessment.decision is not Decision.RETRY:
        return skipped(job.name, f"the relaunch is no longer wanted: {assessment.reason}")

    now = ports.clock()
    with once(ports, job.name, STEP, now) as step:
        if step.done:
            return already_handled(assessment, step)
        checkpoint = ports.checkpoints.read(job.checkpoint_s3_uri)
        plan = plan_for(ports, facts, checkpoint, now)
        if isinstance(plan, RelaunchPlan):
            outcome = launch(ports, facts, plan, now)
        else:
            outcome = assessment.outcome(
                OutcomeKind.NOT_RELAUNCHED, f"{assessment.reason} Not relaunched at the scheduled time: {plan.reason}"
            )
        tell_job_end(ports, facts, outcome, checkpoint)
        return step.record(outcome)
