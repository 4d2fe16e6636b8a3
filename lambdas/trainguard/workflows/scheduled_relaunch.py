"""A delayed relaunch fires (capacity backoff): check that job-events scheduled it and that it is still wanted, then
launch it within the launch budget.

The retry launcher can be invoked by anyone allowed lambda:InvokeFunction on it, with any failed job's name: it
acts only on a relaunch that job-events recorded as scheduled (the failed job's `end` step in the ledger, of kind
relaunch-scheduled, naming the job this relaunch would create). Anything else is skipped and counted (the skipped
outcome's metric), and nothing is launched, even for a job whose relaunch job-events refused (a spent budget, a
dry run)."""

from __future__ import annotations

from datetime import datetime

from trainguard.domain.checkpoints import CheckpointState
from trainguard.domain.job_end import EndedJob, Refusal
from trainguard.domain.model import Decision
from trainguard.domain.outcome import Outcome, OutcomeKind, skipped
from trainguard.workflows.function_ports import EndedJobPorts
from trainguard.workflows.job_ended import STEP as END_STEP
from trainguard.workflows.job_ended import already_handled, reassess, tell_job_end
from trainguard.workflows.launch_budget import kept_if_launched
from trainguard.workflows.once import once
from trainguard.workflows.recheck import RELAUNCH, why_not_launch
from trainguard.workflows.relaunch import launch, plan_for, within_budget

STEP = "relaunch"


def handle_scheduled_relaunch(ports: EndedJobPorts, failed_job_name: str) -> Outcome:
    scheduled = scheduled_relaunch_of(ports, failed_job_name)
    if not scheduled:
        return skipped(failed_job_name, "job-events scheduled no relaunch of it: nothing is launched")
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
        outcome = _relaunch_now(ports, facts, scheduled, checkpoint, now)
        tell_job_end(ports, facts, outcome, checkpoint)
        return step.record(outcome)


def _relaunch_now(
    ports: EndedJobPorts, facts: EndedJob, scheduled: str, checkpoint: CheckpointState, now: datetime
) -> Outcome:
    """Launch the scheduled relaunch if it is still wanted (the job was described again just now, by reassess)
    and the budget has a unit for it; or the outcome that says why not."""
    why_not = why_not_launch(ports, facts.job.tags, RELAUNCH)
    if why_not:
        return _not_relaunched_now(facts, why_not)
    plan = plan_for(ports, facts, checkpoint, now)
    if isinstance(plan, Refusal):
        return _not_relaunched_now(facts, plan.reason)
    if plan.new_job_name != scheduled:
        return _not_relaunched_now(facts, f"it would launch {plan.new_job_name}, not the {scheduled} scheduled")
    budgeted = within_budget(ports, facts, plan, now)
    if isinstance(budgeted, Outcome):
        return budgeted
    return kept_if_launched(ports, plan.new_job_name, launch(ports, facts, plan, now), now)


def _not_relaunched_now(facts: EndedJob, why_not: str) -> Outcome:
    reason = f"{facts.assessment.reason} Not relaunched at the scheduled time: {why_not}"
    return facts.assessment.outcome(OutcomeKind.NOT_RELAUNCHED, reason)


def scheduled_relaunch_of(ports: EndedJobPorts, failed_job_name: str) -> str:
    """The job the relaunch job-events scheduled for this failure would create ("" when it scheduled none)."""
    recorded = ports.ledger.step_record(failed_job_name, END_STEP) or {}
    if recorded.get("kind") != OutcomeKind.RELAUNCH_SCHEDULED.value:
        return ""
    return str(recorded.get("new_job_name") or "")
