"""The samples of the messages about a job's end (relaunched, with each fallback, scheduled, not relaunched, blocked
by a quota, not retried, left to its owner): the sample job's end assessed and its relaunch planned by the domain
(trainguard.domain.job_end), the outcome built by trainguard.domain.relaunch_outcomes and rendered by
messages.compose_job_end_notification, as the job-events function does (workflows/job_ended.py, relaunch.py)."""

from __future__ import annotations

from datetime import datetime

from trainguard.domain.checkpoint_health import advise_lineage
from trainguard.domain.fallback_options import read_fallback_options
from trainguard.domain.job_end import RelaunchPlan
from trainguard.domain.messages import Notification, compose_job_end_notification
from trainguard.domain.model import Decision, TrainingJob
from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard.domain.quota_messages import QuotaWallResult, launched_on_alternative, wait_sentence
from trainguard.domain.relaunch_outcomes import not_relaunched, quota_wall_met, relaunch_scheduled, relaunched
from trainguard_cli.sample_facts import (
    ALTERNATIVES_TAG,
    CAPACITY_ERROR,
    INTERNAL_ERROR,
    KEYS,
    OUT_OF_MEMORY,
    PIPELINE_TAGS,
    SAMPLE_JOB,
    job_end,
    relaunch_plan,
    sample_checkpoints,
    sample_job,
)
from trainguard_cli.sample_quota_messages import give_up_at, increase_requested_wall

SPOT = {
    "EnableManagedSpotTraining": True,
    "StoppingCondition": {"MaxRuntimeInSeconds": 86400, "MaxWaitTimeInSeconds": 172800},
}


def _told(job: TrainingJob, outcome: Outcome, region: str, now: datetime) -> Notification:
    """The job-end message, with the lineage's checkpoint advice a relaunch carries (workflows/job_ended.py)."""
    checkpoint = sample_checkpoints(now)
    advice = ""
    if outcome.kind in (OutcomeKind.RELAUNCHED, OutcomeKind.RELAUNCH_SCHEDULED) and job.creation_time is not None:
        hours = (now - job.creation_time).total_seconds() / 3600
        advice = advise_lineage(job, int(outcome.details.get("attempt") or 1), hours, checkpoint).sentence()
    return compose_job_end_notification(job, outcome, checkpoint, (), region, now, advice)


def _ended(job: TrainingJob, region: str, now: datetime) -> Notification:
    """What the job-events function does at the job's end: relaunch when its end calls for one (now, later, or
    not, as the domain plans it), else only tell."""
    _, assessment = job_end(job)
    if assessment.decision not in (Decision.RETRY, Decision.QUOTA):
        return _told(job, assessment.outcome(OutcomeKind.NOTIFIED), region, now)
    plan = relaunch_plan(job, now)
    if not isinstance(plan, RelaunchPlan):
        outcome = not_relaunched(assessment, plan.reason, plan.would_be_job_name, plan.would_send)
    elif plan.delay:
        outcome = relaunch_scheduled(assessment, plan, now + plan.delay, f"trainguard-relaunch-{SAMPLE_JOB}")
    else:
        outcome = relaunched(assessment, plan)
    return _told(job, outcome, region, now)


def _quota_wall(region: str, now: datetime, on_an_alternative: bool) -> Notification:
    """The relaunch refused for the sample quota: the increase requested, and the relaunch launched meanwhile on
    the first alternative the job's tag lists (whose quota has room), or kept until the quota allows it."""
    tags = ALTERNATIVES_TAG if on_an_alternative else None
    job = sample_job("Failed", INTERNAL_ERROR, now, tags)
    _, assessment = job_end(job)
    plan = relaunch_plan(job, now)
    if not isinstance(plan, RelaunchPlan):
        raise AssertionError(f"the domain does not relaunch the sample: {plan.reason}")
    own_count = int(job.description["ResourceConfig"]["InstanceCount"])
    if on_an_alternative:
        [first, *_] = read_fallback_options(job.tags, KEYS).alternatives
        meanwhile = launched_on_alternative(plan.new_job_name, first.describe(own_count))
    else:
        meanwhile = wait_sentence(plan.new_job_name, give_up_at(now))
    requested = increase_requested_wall(plan.request, meanwhile)
    wall = QuotaWallResult(
        requested.summary, requested.quota_request, not on_an_alternative, True, meanwhile if on_an_alternative else ""
    )
    return _told(job, quota_wall_met(assessment, plan, wall), region, now)


def relaunched_as_it_was(region: str, now: datetime) -> Notification:
    return _ended(sample_job("Failed", INTERNAL_ERROR, now), region, now)


def relaunched_with_preferences(region: str, now: datetime) -> Notification:
    return _ended(sample_job("Failed", CAPACITY_ERROR, now, ALTERNATIVES_TAG), region, now)


def relaunched_on_next_type(region: str, now: datetime) -> Notification:
    return _ended(sample_job("Failed", CAPACITY_ERROR, now, ALTERNATIVES_TAG, **SPOT), region, now)


def relaunched_on_demand(region: str, now: datetime) -> Notification:
    """A spot job stopped past its MaxWaitTimeInSeconds, tagged to move to on-demand after 1 spot failure."""
    end = {"TrainingEndTime": now, "BillableTimeInSeconds": 3000, "TrainingTimeInSeconds": 10000}
    tags = {**ALTERNATIVES_TAG, KEYS.on_demand_after: "1"}
    job = sample_job("Stopped", "", now, tags, SecondaryStatus="MaxWaitTimeExceeded", **SPOT, **end)
    return _ended(job, region, now)


def relaunched_on_quota_room(region: str, now: datetime) -> Notification:
    return _quota_wall(region, now, on_an_alternative=True)


def relaunch_scheduled_after_backoff(region: str, now: datetime) -> Notification:
    return _ended(sample_job("Failed", CAPACITY_ERROR, now), region, now)


def not_relaunched_at_its_limit(region: str, now: datetime) -> Notification:
    return _ended(sample_job("Failed", INTERNAL_ERROR, now, {KEYS.max_retries: "0"}), region, now)


def blocked_by_a_quota(region: str, now: datetime) -> Notification:
    return _quota_wall(region, now, on_an_alternative=False)


def not_retried(region: str, now: datetime) -> Notification:
    return _ended(sample_job("Failed", OUT_OF_MEMORY, now), region, now)


def left_to_owner(region: str, now: datetime) -> Notification:
    return _ended(sample_job("Failed", INTERNAL_ERROR, now, PIPELINE_TAGS), region, now)
