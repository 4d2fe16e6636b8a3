"""A launch hit a quota: request the increase it needs (once), and keep the launch until it is granted."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from trainguard.domain.fallback_options import (
    Alternative,
    FallbackOptions,
    LaunchBounds,
    read_fallback_options,
    within_bounds,
)
from trainguard.domain.fallbacks import quota_fallback_request
from trainguard.domain.model import instances_of
from trainguard.domain.policy import JobPolicy, parse_tag_list
from trainguard.domain.preflight import PlannedLaunch
from trainguard.domain.quota_messages import (
    NOT_A_QUOTA,
    QuotaWallResult,
    dry_run_summary,
    increase_requested,
    launched_on_alternative,
    no_increase_needed,
    no_increase_possible,
    no_such_quota,
    wait_sentence,
)
from trainguard.domain.quotas import (
    NoQuotaRequest,
    QuotaDemand,
    QuotaRequestPlan,
    WaitingLaunch,
    launch_demand,
    plan_quota_request,
    read_quota_error,
)
from trainguard.workflows.function_ports import QuotaWallPorts
from trainguard.workflows.launch_budget import give_back_launch_unit, take_launch_unit
from trainguard.workflows.ports import LaunchRefused, NameTaken, QuotaRequestState

QUOTA_ERROR_CODE = "ResourceLimitExceeded"


@dataclass(frozen=True)
class BlockedLaunch:
    job_name: str  # the name the launch will create
    request: dict[str, Any]
    origin: str  # "relaunch" or "user-launch"
    blocked_job: str
    error_text: str
    lineage_root: str = ""
    attempt: int = 0
    # Why trainguard cannot launch it later itself ("" when it can): the quota is still requested.
    not_launchable: str = ""
    # What an alternative may grow to; None: a user's own launch, which starts its lineage.
    bounds: LaunchBounds | None = None

    def launch_bounds(self, launchable: tuple[str, ...]) -> LaunchBounds:
        return self.bounds or LaunchBounds.of_a_first_launch(launchable, self.request)


def meet_quota_wall(ports: QuotaWallPorts, blocked: BlockedLaunch, policy: JobPolicy) -> QuotaWallResult:
    """`blocked.error_text` is the error AWS returned to the launch (never a FailureReason: quotas.py)."""
    now = ports.clock()
    read = read_quota_error(blocked.error_text)
    if read is None:
        return QuotaWallResult(NOT_A_QUOTA, is_quota=False)
    demand = launch_demand(read, blocked.request)
    if isinstance(demand, NoQuotaRequest):
        return QuotaWallResult(no_increase_possible(demand.reason))
    quota = ports.quotas.find(demand.quota_name)
    if quota is None:
        return QuotaWallResult(no_such_quota(demand.quota_name))
    plan = plan_quota_request(
        demand,
        current_value=ports.quotas.current_value(quota.code),
        launch_instance_count=_instance_count(blocked.request),
        ceilings=ports.config.quota_ceilings,
        default_ceiling=ports.config.default_quota_ceiling,
        quota_code=quota.code,
    )
    if not policy.allows("quota"):
        return _dry_run(ports, blocked, plan)
    wait = _waiting(ports, blocked, demand, now)
    if isinstance(plan, NoQuotaRequest):
        launched = _launch_on_an_alternative(ports, blocked, policy)
        if launched:
            return QuotaWallResult(no_increase_needed(plan.reason, launched), None, False, True, launched)
        _keep(ports, blocked, wait)
        return QuotaWallResult(no_increase_needed(plan.reason, _wait_sentence(blocked, wait)), None, _can_wait(blocked))
    return _request_and_wait(ports, blocked, demand, plan, quota.code, policy, wait)


def _request_and_wait(
    ports: QuotaWallPorts,
    blocked: BlockedLaunch,
    demand: QuotaDemand,
    plan: QuotaRequestPlan,
    quota_code: str,
    policy: JobPolicy,
    wait: WaitingLaunch,
) -> QuotaWallResult:
    """Request the increase (or find the open request), then run on an alternative with room or keep the launch."""
    existing = _known_open_request(ports, quota_code)
    state = existing or ports.quotas.request_increase(
        quota_code, plan.desired_value, ports.config.quota_support_case_allowed
    )
    ports.quota_ledger.save_request(state, ports.clock())
    launched = _launch_on_an_alternative(ports, blocked, policy)
    if not launched:
        _keep(ports, blocked, wait)
    summary = increase_requested(
        found_open=existing is not None,
        quota_name=state.quota_name or demand.quota_name,
        desired_value=state.desired_value,
        request_id=state.request_id,
        case_id=state.case_id,
        status=state.status,
        plan_reason=plan.reason,
        then=launched or _wait_sentence(blocked, wait),
    )
    details = {**plan.as_dict(), "request_id": state.request_id, "case_id": state.case_id, "status": state.status}
    if launched:
        return QuotaWallResult(summary, details, False, True, launched)
    return QuotaWallResult(summary, details, _can_wait(blocked))


def _dry_run(ports: QuotaWallPorts, blocked: BlockedLaunch, plan: QuotaRequestPlan | NoQuotaRequest) -> QuotaWallResult:
    options = read_fallback_options(parse_tag_list(blocked.request.get("Tags")), ports.keys)
    bounded = within_bounds(options, blocked.request, blocked.launch_bounds(ports.config.launchable_instance_types))
    alternatives = [a.describe(_instance_count(blocked.request) or 1) for a in bounded.alternatives]
    would_ask_for = plan.desired_value if isinstance(plan, QuotaRequestPlan) else None
    return QuotaWallResult(
        dry_run_summary(would_ask_for, alternatives, plan.reason, bounded.not_followed),
        plan.as_dict() if isinstance(plan, QuotaRequestPlan) else None,
    )


def _launch_on_an_alternative(ports: QuotaWallPorts, blocked: BlockedLaunch, policy: JobPolicy) -> str:
    """While the quota is short, launch on the first alternative the job's tag lists whose quota has room; the
    sentence that says so, or "" when none could be launched (the launch then waits, as without fallbacks).

    Room is judged in two steps: GetServiceQuota rules out types whose quota is below the count (most GPU types
    are at 0 in a new account), and SageMaker's own CreateTrainingJob decides the rest (it counts the usage of
    every running job, which the functions do not list). A refusal for a quota moves on to the next alternative
    and requests nothing: an alternative is a way around the wall, not a second wall to climb. The launch takes
    the waiting launch's name, so the approval later finds the job there and launches no second copy. It takes
    the launch's unit of the budget (one a relaunch holds already counts) and gives it back if none launched."""
    options = read_fallback_options(parse_tag_list(blocked.request.get("Tags")), ports.keys)
    if not options.alternatives or blocked.not_launchable or not policy.allows("retry"):
        return ""
    now = ports.clock()
    if not take_launch_unit(ports, blocked.job_name, now):
        return ""
    launched = _first_alternative_with_room(ports, blocked, options)
    if not launched:
        give_back_launch_unit(ports, blocked.job_name, now)
    return launched


def _first_alternative_with_room(ports: QuotaWallPorts, blocked: BlockedLaunch, options: FallbackOptions) -> str:
    spot = blocked.request.get("EnableManagedSpotTraining") is True
    own_count = instances_of(blocked.request.get("ResourceConfig"))[1]
    owner_tag = ports.keys.retry_of if blocked.origin == "relaunch" else ports.keys.blocked_launch
    for alternative in options.alternatives:
        candidate = quota_fallback_request(
            blocked.request,
            FallbackOptions((alternative,)),
            {alternative.instance_type: True},
            blocked.launch_bounds(ports.config.launchable_instance_types),
        )
        if candidate is None or not _quota_allows(ports, alternative, own_count, spot):
            continue
        try:
            ports.jobs.create(candidate[0], blocked.blocked_job, owner_tag)
        except LaunchRefused as refused:
            if refused.code == QUOTA_ERROR_CODE:
                continue
            return ""
        except NameTaken:
            return ""
        return launched_on_alternative(blocked.job_name, alternative.describe(own_count))
    return ""


def _quota_allows(ports: QuotaWallPorts, alternative: Alternative, own_count: int, spot: bool) -> bool:
    count = alternative.count_for(own_count)
    quota = ports.quotas.find(PlannedLaunch(alternative.instance_type, count, spot=spot).type_quota_name)
    return quota is not None and ports.quotas.current_value(quota.code) >= count


def _can_wait(blocked: BlockedLaunch) -> bool:
    return not blocked.not_launchable


def _keep(ports: QuotaWallPorts, blocked: BlockedLaunch, wait: WaitingLaunch) -> None:
    if _can_wait(blocked):
        ports.quota_ledger.save_waiting(wait)


def ask_for_what_is_still_missing(
    ports: QuotaWallPorts, error_text: str, request: dict[str, Any]
) -> QuotaRequestState | None:
    """A waiting launch (`request`) was refused again after its quota request closed (approved, but for less than
    it needs now, e.g. a request filed for another launch on the same quota): file a new request sized to this
    refusal and the launch, unless one is open. Only for a quota of the launch; the ceilings still cap it."""
    read = read_quota_error(error_text)
    demand = None if read is None else launch_demand(read, request)
    if demand is None or isinstance(demand, NoQuotaRequest):
        return None
    quota = ports.quotas.find(demand.quota_name)
    if quota is None or _known_open_request(ports, quota.code):
        return None
    plan = plan_quota_request(
        demand,
        current_value=ports.quotas.current_value(quota.code),
        launch_instance_count=None,
        ceilings=ports.config.quota_ceilings,
        default_ceiling=ports.config.default_quota_ceiling,
        quota_code=quota.code,
    )
    if isinstance(plan, NoQuotaRequest):
        return None
    state = ports.quotas.request_increase(quota.code, plan.desired_value, ports.config.quota_support_case_allowed)
    ports.quota_ledger.save_request(state, ports.clock())
    return state


def _known_open_request(ports: QuotaWallPorts, quota_code: str) -> QuotaRequestState | None:
    """An open request for this quota, whoever filed it: never ask twice."""
    for state in ports.quota_ledger.requests():
        if state.quota_code == quota_code and state.is_open:
            return state
    return ports.quotas.open_request(quota_code)


def _waiting(ports: QuotaWallPorts, blocked: BlockedLaunch, demand: QuotaDemand, now: datetime) -> WaitingLaunch:
    return WaitingLaunch(
        job_name=blocked.job_name,
        quota_name=demand.quota_name,
        request=blocked.request,
        origin=blocked.origin,
        blocked_job=blocked.blocked_job,
        since=now,
        give_up_at=now + timedelta(hours=ports.config.quota_wait_hours),
        lineage_root=blocked.lineage_root,
        attempt=blocked.attempt,
    )


def _wait_sentence(blocked: BlockedLaunch, wait: WaitingLaunch) -> str:
    return wait_sentence(wait.job_name, wait.give_up_at, blocked.not_launchable)


def _instance_count(request: dict[str, Any]) -> int | None:
    return instances_of(request.get("ResourceConfig"))[1] or None
