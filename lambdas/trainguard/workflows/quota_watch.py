"""The periodic check of quota walls: follow the open increase requests, and launch what waited for them."""

from __future__ import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compose_quota_request_closed_notification,
    compose_waiting_launch_notification,
)
from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard.domain.policy import parse_tag_list
from trainguard.domain.quota_messages import (
    given_up,
    launch_refused,
    now_allowed,
    request_ended,
    waited_until,
    waiting_launch_outcome,
)
from trainguard.domain.quotas import (
    WaitingLaunch,
    WaitVerdict,
    judge_waiting_launch,
    normalize_quota_name,
)
from trainguard.domain.wording import format_value
from trainguard.workflows.function_ports import QuotaWatchPorts
from trainguard.workflows.launch_budget import give_back_launch_unit, take_launch_unit
from trainguard.workflows.once import once
from trainguard.workflows.ports import (
    LaunchRefused,
    NameTaken,
    QuotaRequestState,
)
from trainguard.workflows.quota_wall import ask_for_what_is_still_missing
from trainguard.workflows.recheck import WAITING_RELAUNCH, WAITING_USER_LAUNCH, why_not_launch, why_not_relaunch

STEP = "quota-launch"
QUOTA_ERROR_CODE = "ResourceLimitExceeded"


def check_quota_walls(ports: QuotaWatchPorts) -> list[Outcome]:
    now = ports.clock()
    requests = {normalize_quota_name(state.quota_name): state for state in _follow_requests(ports, now)}
    outcomes = []
    for waiting in ports.quota_ledger.waiting():
        request = requests.get(normalize_quota_name(waiting.quota_name))
        verdict = judge_waiting_launch(waiting, request.status if request else None, now)
        if verdict is WaitVerdict.WAIT:
            continue
        if verdict is WaitVerdict.LAUNCH:
            outcome = _launch(ports, waiting, now)
        else:
            outcome = _give_up(ports, waiting, request, verdict)
        if outcome is not None:
            outcomes.append(outcome)
    return outcomes


def _follow_requests(ports: QuotaWatchPorts, now: datetime) -> list[QuotaRequestState]:
    """Every recorded request, with the open ones read again; a request that closed is told once."""
    states = []
    for recorded in ports.quota_ledger.requests():
        state = recorded
        if recorded.is_open:
            state = ports.quotas.request_state(recorded.request_id)
            if state != recorded:
                ports.quota_ledger.save_request(state, now)
            if not state.is_open:
                _tell_request_closed(ports, state, now)
        states.append(state)
    return states


def _tell_request_closed(ports: QuotaWatchPorts, state: QuotaRequestState, now: datetime) -> None:
    value = format_value(state.desired_value)
    ports.notifier.publish(
        compose_quota_request_closed_notification(
            state.quota_name, value, state.request_id, state.case_id, state.status, ports.region, now
        )
    )


def _launch(ports: QuotaWatchPorts, waiting: WaitingLaunch, now: datetime) -> Outcome | None:
    with once(ports, waiting.job_name, STEP, now, skip_if_busy=True) as step:
        if step.busy:
            return None  # another check is launching it right now
        if not step.done:
            why_not = _why_not_now(ports, waiting)
            outcome: Outcome | None
            if why_not:  # given up: told once, recorded, and the entry removed below; never launched
                outcome = _told(ports, waiting, OutcomeKind.NOT_RELAUNCHED, given_up(why_not), now)
            else:
                outcome = _attempt(ports, waiting, now)
            if outcome is None:
                step.give_back()  # still short of quota: the next check tries again
                return None
            step.record(outcome)
    # After the record: a check that dies in between leaves the entry, and the next one finds the step done.
    ports.quota_ledger.remove_waiting(waiting.job_name)
    return step.outcome


def _why_not_now(ports: QuotaWatchPorts, waiting: WaitingLaunch) -> str:
    """The kill switches read again before the launch (trainguard.workflows.recheck): a relaunch's failed job is
    described again; a user's launch has no job, and the tags read are those of the stored request it would send."""
    if waiting.origin == "relaunch":
        return why_not_relaunch(ports, waiting.blocked_job, WAITING_RELAUNCH)
    return why_not_launch(ports, parse_tag_list(waiting.request.get("Tags")), WAITING_USER_LAUNCH)


def _attempt(ports: QuotaWatchPorts, waiting: WaitingLaunch, now: datetime) -> Outcome | None:
    """Launch it within the launch budget and tell; None while the budget is spent or the quota still short
    (and ask for what is still missing); its unit is given back unless it launched."""
    if not take_launch_unit(ports, waiting.job_name, now):
        return None  # it waits for a unit as it waits for its quota, until give_up_at
    outcome = _create(ports, waiting, now)
    if outcome is None or outcome.kind is not OutcomeKind.RELAUNCHED:
        give_back_launch_unit(ports, waiting.job_name, now)
    return outcome


def _create(ports: QuotaWatchPorts, waiting: WaitingLaunch, now: datetime) -> Outcome | None:
    try:
        # The tag that proves a job of this name is this very launch (a redelivery, not a stranger's job).
        owner_tag = ports.keys.retry_of if waiting.origin == "relaunch" else ports.keys.blocked_launch
        ports.jobs.create(waiting.request, waiting.blocked_job, owner_tag)  # created, or already there: both go on
    except LaunchRefused as refused:
        if refused.code == QUOTA_ERROR_CODE:
            ask_for_what_is_still_missing(ports, refused.message, waiting.request)
            return None
        return _told(ports, waiting, OutcomeKind.NOT_RELAUNCHED, launch_refused(str(refused)), now)
    except NameTaken as taken:
        return _told(ports, waiting, OutcomeKind.NOT_RELAUNCHED, str(taken), now)
    if waiting.origin == "relaunch":  # created now or by an earlier check that died before this write
        ports.ledger.record_lineage(waiting.lineage_root, waiting.attempt, waiting.job_name, waiting.blocked_job, now)
    return _told(ports, waiting, OutcomeKind.RELAUNCHED, now_allowed(waiting.quota_name), now)


def _told(ports: QuotaWatchPorts, waiting: WaitingLaunch, kind: OutcomeKind, why: str, now: datetime) -> Outcome:
    outcome = waiting_launch_outcome(waiting, kind, why)
    ports.notifier.publish(
        compose_waiting_launch_notification(
            waiting.job_name, waiting.quota_name, waiting.since, outcome, ports.region, now
        )
    )
    return outcome


def _give_up(
    ports: QuotaWatchPorts, waiting: WaitingLaunch, request: QuotaRequestState | None, verdict: WaitVerdict
) -> Outcome:
    """No lease: giving up twice tells twice and records the same outcome, and launches nothing."""
    if verdict is WaitVerdict.EXPIRE:
        why = waited_until(waiting.give_up_at)
    else:
        why = request_ended(waiting.quota_name, request.status if request else "closed")
    now = ports.clock()
    outcome = _told(ports, waiting, OutcomeKind.NOT_RELAUNCHED, given_up(why), now)
    ports.ledger.finish_step(waiting.job_name, STEP, outcome, now)
    ports.quota_ledger.remove_waiting(waiting.job_name)
    return outcome
