"""The samples of the messages about quotas and launches (a request decided, a launch that waited for its quota,
a user's launch refused): sample facts put through the domain's own quota decisions (trainguard.domain.quotas,
ownership) and rendered by its composers (trainguard.domain.quota_messages, messages)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from trainguard.domain.classification import classify_text
from trainguard.domain.messages import (
    Notification,
    compose_quota_request_closed_notification,
    compose_waiting_launch_notification,
)
from trainguard.domain.model import TextSource
from trainguard.domain.naming import retry_job_name
from trainguard.domain.outcome import OutcomeKind
from trainguard.domain.ownership import decide_for_owned_job, find_parent
from trainguard.domain.quota_messages import (
    NOT_A_QUOTA,
    QuotaWallResult,
    compose_blocked_launch_notification,
    compose_launch_left_to_owner_notification,
    given_up,
    increase_requested,
    now_allowed,
    request_ended,
    wait_sentence,
    waiting_launch_outcome,
)
from trainguard.domain.quotas import (
    QuotaDemand,
    QuotaRequestPlan,
    WaitingLaunch,
    launch_demand,
    plan_quota_request,
    read_quota_error,
)
from trainguard.domain.wording import format_value
from trainguard_cli.sample_facts import (
    KEYS,
    NOT_OFFERED_ERROR,
    PIPELINE_TAGS,
    QUOTA_ERROR,
    QUOTA_ERROR_CODE,
    SAMPLE_JOB,
    SAMPLE_QUOTA,
    SETTINGS,
    sample_job,
)

SAMPLE_REQUEST_ID = "sample-request"  # Service Quotas' request ID (RequestServiceQuotaIncrease's RequestedQuota.Id)
DENIED = "DENIED"  # a RequestStatus of Service Quotas (botocore's service model, service-quotas)


def quota_request_plan(request: Mapping[str, Any]) -> QuotaRequestPlan:
    """The increase the domain sizes for `request` from the sample quota error, the quota at its 4 instances."""
    read = read_quota_error(QUOTA_ERROR)
    demand = launch_demand(read, request) if read is not None else None
    if not isinstance(demand, QuotaDemand):
        raise AssertionError(f"the sample quota error names no quota of the sample launch: {demand}")
    plan = plan_quota_request(
        demand,
        current_value=4,
        launch_instance_count=4,
        ceilings={},
        default_ceiling=SETTINGS.default_quota_ceiling,
    )
    if not isinstance(plan, QuotaRequestPlan):
        raise AssertionError(f"the domain files no request for the sample: {plan.reason}")
    return plan


def increase_requested_wall(request: Mapping[str, Any], then: str) -> QuotaWallResult:
    """What the quota-wall workflow tells after it requested the increase: `then` says what happens meanwhile."""
    plan = quota_request_plan(request)
    summary = increase_requested(
        found_open=False,
        quota_name=plan.quota_name,
        desired_value=plan.desired_value,
        request_id=SAMPLE_REQUEST_ID,
        case_id="",
        status="PENDING",
        plan_reason=plan.reason,
        then=then,
    )
    return QuotaWallResult(summary, {**plan.as_dict(), "request_id": SAMPLE_REQUEST_ID, "status": "PENDING"})


def give_up_at(since: datetime) -> datetime:
    return since + timedelta(hours=SETTINGS.quota_wait_hours)


def _desired(now: datetime) -> str:
    return format_value(quota_request_plan(sample_job("Failed", "", now).description).desired_value)


def quota_request_approved(region: str, now: datetime) -> Notification:
    return compose_quota_request_closed_notification(
        SAMPLE_QUOTA, _desired(now), SAMPLE_REQUEST_ID, "", "APPROVED", region, now
    )


def quota_request_not_approved(region: str, now: datetime) -> Notification:
    return compose_quota_request_closed_notification(
        SAMPLE_QUOTA, _desired(now), SAMPLE_REQUEST_ID, "", DENIED, region, now
    )


def _waiting(now: datetime) -> WaitingLaunch:
    """The sample job's relaunch, blocked by the sample quota 5 hours ago and kept."""
    since = now - timedelta(hours=5)
    name = retry_job_name(SAMPLE_JOB, 1)
    return WaitingLaunch(name, SAMPLE_QUOTA, {}, "relaunch", SAMPLE_JOB, since, give_up_at(since))


def waiting_launch_launched(region: str, now: datetime) -> Notification:
    waiting = _waiting(now)
    outcome = waiting_launch_outcome(waiting, OutcomeKind.RELAUNCHED, now_allowed(waiting.quota_name))
    return compose_waiting_launch_notification(
        waiting.job_name, waiting.quota_name, waiting.since, outcome, region, now
    )


def waiting_launch_given_up(region: str, now: datetime) -> Notification:
    waiting = _waiting(now)
    why = given_up(request_ended(waiting.quota_name, DENIED))
    outcome = waiting_launch_outcome(waiting, OutcomeKind.NOT_RELAUNCHED, why)
    return compose_waiting_launch_notification(
        waiting.job_name, waiting.quota_name, waiting.since, outcome, region, now
    )


def launch_blocked_by_quota(region: str, now: datetime) -> Notification:
    """A user's own CreateTrainingJob for the sample job, refused for the sample quota, kept until the increase."""
    request = sample_job("Failed", "", now).description
    wall = increase_requested_wall(request, wait_sentence(SAMPLE_JOB, give_up_at(now)))
    return compose_blocked_launch_notification(SAMPLE_JOB, QUOTA_ERROR_CODE, QUOTA_ERROR, wall, region, now)


def launch_refused(region: str, now: datetime) -> Notification:
    """The same error code for an instance type the region does not offer: no quota can help."""
    wall = QuotaWallResult(NOT_A_QUOTA, is_quota=read_quota_error(NOT_OFFERED_ERROR) is not None)
    return compose_blocked_launch_notification(SAMPLE_JOB, QUOTA_ERROR_CODE, NOT_OFFERED_ERROR, wall, region, now)


def launch_left_to_owner(region: str, now: datetime) -> Notification:
    """A launch a SageMaker pipeline made, refused for the sample quota: the pipeline's to handle."""
    tags = {KEYS.enabled: "true", **PIPELINE_TAGS}
    parent = find_parent(job_name=SAMPLE_JOB, description={}, tags=tags, caller_arn="")
    if parent is None:
        raise AssertionError(f"the domain finds no owner in the sample's tags {tags}")
    reading = classify_text(f"{QUOTA_ERROR_CODE}: {QUOTA_ERROR}", TextSource.API_ERROR)
    _, why = decide_for_owned_job(reading, parent)
    return compose_launch_left_to_owner_notification(
        SAMPLE_JOB, QUOTA_ERROR_CODE, QUOTA_ERROR, parent.describe(), why, region, now
    )
