"""The periodic check of quota walls: follow the open increase requests, and launch what waited for them."""

from __future__ import annotations

from datetime import datetime

from trainguard.domain.messages import compose_notification
from trainguard.domain.model import Category, Decision
from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard.domain.quotas import (
    WaitingLaunch,
    WaitVerdict,
    format_value,
    judge_waiting_launch,
    normalize_quota_name,
)
from trainguard.workflows.function_ports import QuotaWatchPorts
from trainguard.workflows.ports import (
    LaunchRefused,
    NameTaken,
    QuotaRequestState,
    StepInProgress,
    StepState,
)
from trainguard.workflows.quota_wall import ask_for_what_is_still_missing

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
    approved = state.status == "APPROVED"
    ports.notifier.publish(
        compose_notification(
            headline=f"quota request {state.status.lower()}: {{job}}",
            job_name=state.quota_name,
            happened=f"The request to raise '{state.quota_name}' to {format_value(state.desired_value)} "
            f"(request {state.request_id}, case {state.case_id or 'none'}) is {state.status}.",
            did="It launches the jobs that waited for this quota at its next check."
            if approved
            else "It gives up the launches that waited for this quota, and tells you about each.",
            why="trainguard follows the quota requests it filed until AWS decides them.",
            outcome=f"quota-request-{state.status.lower()}",
            decision="quota",
            region=ports.region,
            now=now,
        )
    )


def _launch(ports: QuotaWatchPorts, waiting: WaitingLaunch, now: datetime) -> Outcome | None:
    try:
        start = ports.ledger.begin_step(waiting.job_name, STEP, now)
    except StepInProgress:
        return None  # another check is launching it right now
    if start.state is StepState.DONE:
        ports.quota_ledger.remove_waiting(waiting.job_name)
        return None
    try:
        # The tag that proves a job of this name is this very launch (a redelivery, not a stranger's job).
        owner_tag = ports.keys.retry_of if waiting.origin == "relaunch" else ports.keys.blocked_launch
        ports.jobs.create(waiting.request, waiting.blocked_job, owner_tag)  # created, or already there: both go on
    except LaunchRefused as refused:
        if refused.code == QUOTA_ERROR_CODE:
            ports.ledger.abandon_step(waiting.job_name, STEP)  # still short: try again at the next check
            ask_for_what_is_still_missing(ports, refused.message)
            return None
        return _finish(ports, waiting, OutcomeKind.NOT_RELAUNCHED, f"SageMaker refused the launch: {refused}", now)
    except NameTaken as taken:
        return _finish(ports, waiting, OutcomeKind.NOT_RELAUNCHED, str(taken), now)
    if waiting.origin == "relaunch":  # created now or by an earlier check that died before this write
        ports.ledger.record_lineage(waiting.lineage_root, waiting.attempt, waiting.job_name, waiting.blocked_job, now)
    return _finish(ports, waiting, OutcomeKind.RELAUNCHED, f"the quota '{waiting.quota_name}' now allows it", now)


def _finish(ports: QuotaWatchPorts, waiting: WaitingLaunch, kind: OutcomeKind, why: str, now: datetime) -> Outcome:
    launched = kind is OutcomeKind.RELAUNCHED
    outcome = Outcome(
        kind, waiting.blocked_job, why, Decision.QUOTA, Category.QUOTA, waiting.job_name if launched else ""
    )
    ports.notifier.publish(
        compose_notification(
            headline="launched {job} after a quota wall" if launched else "{job} not launched after a quota wall",
            job_name=waiting.job_name,
            happened=f"{waiting.job_name} waited since {waiting.since.strftime('%Y-%m-%d %H:%M UTC')} "
            f"for the quota '{waiting.quota_name}'.",
            did=f"Launched {waiting.job_name}." if launched else "Did not launch it.",
            why=why,
            outcome=kind.value,
            decision="quota",
            region=ports.region,
            now=now,
        )
    )
    ports.ledger.finish_step(waiting.job_name, STEP, outcome, now)
    ports.quota_ledger.remove_waiting(waiting.job_name)
    return outcome


def _give_up(
    ports: QuotaWatchPorts, waiting: WaitingLaunch, request: QuotaRequestState | None, verdict: WaitVerdict
) -> Outcome:
    if verdict is WaitVerdict.EXPIRE:
        why = f"it waited until {waiting.give_up_at.strftime('%Y-%m-%d %H:%M UTC')} (setting quota_wait_hours)"
    else:
        status = request.status if request else "closed"
        why = f"the quota request for '{waiting.quota_name}' ended {status}"
    return _finish(ports, waiting, OutcomeKind.NOT_RELAUNCHED, f"trainguard gave up the launch: {why}", ports.clock())
