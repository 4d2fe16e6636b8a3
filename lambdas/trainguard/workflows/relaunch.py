"""Relaunch a failed job from its last checkpoint: plan it, then create it or schedule it."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from trainguard.domain.checkpoints import CheckpointState
from trainguard.domain.classification import classify_text
from trainguard.domain.fallbacks import FallbackKind, without_the_short_type
from trainguard.domain.job_end import (
    Assessment,
    EndedJob,
    Refusal,
    RelaunchPlan,
    RelaunchSettings,
    plan_relaunch,
)
from trainguard.domain.lineage import lineage_root_to_describe, lineage_start
from trainguard.domain.model import TextSource, TrainingJob
from trainguard.domain.outcome import Outcome
from trainguard.domain.quotas import read_quota_error
from trainguard.domain.relaunch_outcomes import (
    not_relaunched,
    quota_wall_met,
    relaunch_refused,
    relaunch_scheduled,
    relaunched,
)
from trainguard.workflows.function_ports import EndedJobPorts, JobEventsPorts
from trainguard.workflows.launch_budget import budget_spent, kept_if_launched, take_launch_unit
from trainguard.workflows.ports import LaunchRefused, NameTaken, fresh
from trainguard.workflows.quota_wall import BlockedLaunch, QuotaWallResult, meet_quota_wall

QUOTA_ERROR_CODE = "ResourceLimitExceeded"


def relaunch_settings(ports: EndedJobPorts) -> RelaunchSettings:
    return RelaunchSettings(
        passable_role_arns=ports.config.passable_role_arns,
        capacity_backoff_minutes=ports.config.capacity_backoff_minutes,
        capacity_backoff_max_minutes=ports.config.capacity_backoff_max_minutes,
        infra_check_after_host_faults=ports.config.infra_check_after_host_faults,
        launchable_instance_types=ports.config.launchable_instance_types,
    )


def lineage_start_of(ports: EndedJobPorts, job: TrainingJob) -> dict[str, Any] | None:
    """What the lineage's first job was launched with (domain/lineage.lineage_start): its root is described again
    when this job is a relaunch and the deployment allows type changes at all (else nothing can grow)."""
    root_name = lineage_root_to_describe(job, ports.keys) if ports.config.launchable_instance_types else ""
    root = fresh(ports.jobs.describe(root_name)) if root_name else None
    start = lineage_start(job, ports.keys, root)
    return dict(start) if start is not None else None


def plan_for(
    ports: EndedJobPorts, ended: EndedJob, checkpoint: CheckpointState, now: datetime
) -> RelaunchPlan | Refusal:
    return plan_relaunch(
        ended.job,
        ended.assessment,
        ended.policy,
        checkpoint,
        relaunch_settings(ports),
        ports.keys,
        ports.create_request_shape,
        now,
        lineage_start=lineage_start_of(ports, ended.job),
    )


def planned_within_budget(
    ports: EndedJobPorts, ended: EndedJob, checkpoint: CheckpointState, now: datetime
) -> RelaunchPlan | Outcome:
    """The relaunch plan, with a unit of the launch budget when it is launched now (a delayed one takes its
    unit when its schedule fires: scheduled_relaunch.py); or the outcome that says why not."""
    plan = plan_for(ports, ended, checkpoint, now)
    if isinstance(plan, Refusal):
        return not_relaunched(ended.assessment, plan.reason, plan.would_be_job_name, plan.would_send)
    return plan if plan.delay else within_budget(ports, ended, plan, now)


def within_budget(ports: EndedJobPorts, ended: EndedJob, plan: RelaunchPlan, now: datetime) -> RelaunchPlan | Outcome:
    """The plan, holding a unit of the launch budget (trainguard.workflows.launch_budget); or why not."""
    if take_launch_unit(ports, plan.new_job_name, now) or _launched_before(ports, ended.job, plan):
        # A redelivery holds the unit its earlier delivery took; one that comes after that unit's hour has passed,
        # and finds the budget spent, still finishes the work of a delivery that created the relaunch and died
        # before the ledger write (launch() finds the job), rather than record "not relaunched" beside it.
        return plan
    return not_relaunched(ended.assessment, budget_spent(ports), plan.new_job_name)


def _launched_before(ports: EndedJobPorts, job: TrainingJob, plan: RelaunchPlan) -> bool:
    existing = fresh(ports.jobs.describe(plan.new_job_name))
    return existing is not None and existing.tags.get(ports.keys.retry_of) == job.name


def relaunch(ports: JobEventsPorts, ended: EndedJob, checkpoint: CheckpointState, now: datetime) -> Outcome:
    """Plan the relaunch within the launch budget; then schedule it (a capacity backoff) or launch it now. A job
    that failed on a quota is launched again as it was: a quota request is sized only from the error AWS returns to
    that launch (`launch`), never from a FailureReason (domain/quotas.py). A unit taken for it stays only if it was
    launched."""
    plan = planned_within_budget(ports, ended, checkpoint, now)
    if isinstance(plan, Outcome):
        return plan
    outcome = _relaunch_as_planned(ports, ended, plan, now)
    return outcome if plan.delay else kept_if_launched(ports, plan.new_job_name, outcome, now)


def _relaunch_as_planned(ports: JobEventsPorts, ended: EndedJob, plan: RelaunchPlan, now: datetime) -> Outcome:
    job, assessment = ended.job, ended.assessment
    if plan.delay:
        launch_at = now + plan.delay
        schedule = ports.scheduler.schedule_relaunch(job.name, launch_at, assessment.reason)
        return relaunch_scheduled(assessment, plan, launch_at, schedule)
    return launch(ports, ended, plan, now)


def launch(ports: EndedJobPorts, ended: EndedJob, plan: RelaunchPlan, now: datetime) -> Outcome:
    job, assessment, policy = ended.job, ended.assessment, ended.policy
    try:
        result = ports.jobs.create(plan.request, job.name, ports.keys.retry_of)
    except LaunchRefused as refused:
        narrower = _without_the_short_type(plan, refused)
        if narrower is not None:  # an alternative's quota is short: try the others, never request it
            return launch(ports, ended, narrower, now)
        if refused.code == QUOTA_ERROR_CODE:
            wall = meet_quota_wall(ports, blocked_relaunch(plan, refused.message), policy)
            if wall.is_quota:
                return quota_wall_outcome(ports, assessment, plan, wall, now)
        reading = classify_text(str(refused), TextSource.API_ERROR)
        return not_relaunched(assessment, relaunch_refused(plan.new_job_name, str(refused), reading), plan.new_job_name)
    except NameTaken as taken:
        return not_relaunched(assessment, str(taken), plan.new_job_name)
    # Also when an earlier delivery created the job and died before this write: `trainguard history` reads it.
    ports.ledger.record_lineage(plan.lineage.root_job, plan.lineage.attempt, plan.new_job_name, job.name, now)
    return relaunched(assessment, plan, result.value, plan.dropped_fields)


def _without_the_short_type(plan: RelaunchPlan, refused: LaunchRefused) -> RelaunchPlan | None:
    """The plan without the preference whose quota the refusal names (each call drops one: bounded by the list)."""
    if refused.code != QUOTA_ERROR_CODE or plan.fallback is None:
        return None
    if plan.fallback.kind not in (FallbackKind.INSTANCE_PREFERENCES, FallbackKind.ON_DEMAND):
        return None
    demand = read_quota_error(refused.message)
    narrowed = without_the_short_type(plan.request, demand.quota_name) if demand else None
    return replace(plan, request=narrowed) if narrowed is not None else None


def blocked_relaunch(plan: RelaunchPlan, error_text: str) -> BlockedLaunch:
    return BlockedLaunch(
        job_name=plan.new_job_name,
        request=plan.request,
        origin="relaunch",
        blocked_job=plan.failed_job,
        error_text=error_text,
        lineage_root=plan.lineage.root_job,
        attempt=plan.lineage.attempt,
        bounds=plan.bounds,
    )


def quota_wall_outcome(
    ports: EndedJobPorts, assessment: Assessment, plan: RelaunchPlan, wall: QuotaWallResult, now: datetime
) -> Outcome:
    if wall.launched_on:  # relaunched meanwhile on an alternative whose quota has room
        ports.ledger.record_lineage(
            plan.lineage.root_job, plan.lineage.attempt, plan.new_job_name, plan.failed_job, now
        )
    return quota_wall_met(assessment, plan, wall)
