"""A training job ended: describe it again, decide, act at most once, tell its owners."""

from __future__ import annotations

from trainguard.domain.model import Decision
from trainguard.domain.outcome import Outcome, OutcomeKind, skipped
from trainguard.workflows.ended_job import already_handled, reassess, tell_job_end
from trainguard.workflows.function_ports import JobEventsPorts
from trainguard.workflows.once import once
from trainguard.workflows.relaunch import relaunch_after_quota, relaunch_or_schedule

STEP = "end"


def handle_job_end(ports: JobEventsPorts, job_name: str) -> Outcome:
    facts = reassess(ports, job_name)
    if isinstance(facts, Outcome):
        return facts
    job, assessment = facts.job, facts.assessment
    if not assessment.opted_in:
        return skipped(job.name, assessment.reason)
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
        if assessment.decision is Decision.RETRY:
            outcome = relaunch_or_schedule(ports, job, assessment, facts.policy, checkpoint, now)
        elif assessment.decision is Decision.QUOTA:
            outcome = relaunch_after_quota(ports, job, assessment, facts.policy, checkpoint, now)
        else:
            outcome = assessment.outcome(OutcomeKind.NOTIFIED)
        tell_job_end(ports, facts, outcome, checkpoint)
        return step.record(outcome)
