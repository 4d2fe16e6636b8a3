"""A delayed relaunch fires (capacity backoff): check again that it is still wanted, then launch."""

from __future__ import annotations

from trainguard.domain.checkpoints import CheckpointState
from trainguard.domain.job_end import RelaunchPlan
from trainguard.domain.model import Decision
from trainguard.domain.outcome import Outcome, OutcomeKind, skipped
from trainguard.workflows.function_ports import EndedJobPorts
from trainguard.workflows.once import act_once, reassess
from trainguard.workflows.relaunch import launch, plan_for

STEP = "relaunch"


def handle_scheduled_relaunch(ports: EndedJobPorts, failed_job_name: str) -> Outcome:
    facts = reassess(ports, failed_job_name)
    if isinstance(facts, Outcome):
        return facts
    job, assessment = facts.job, facts.assessment
    if not assessment.opted_in or assessment.decision is not Decision.RETRY:
        return skipped(job.name, f"the relaunch is no longer wanted: {assessment.reason}")

    def act(checkpoint: CheckpointState) -> Outcome:
        plan = plan_for(ports, job, assessment, facts.policy, checkpoint, ports.clock())
        if isinstance(plan, RelaunchPlan):
            return launch(ports, job, assessment, facts.policy, plan, ports.clock())
        return assessment.outcome(
            OutcomeKind.NOT_RELAUNCHED,
            f"{assessment.reason} Not relaunched at the scheduled time: {plan.reason}",
        )

    return act_once(ports, facts, STEP, act)
