"""The words of the messages about a launch a quota blocked: what trainguard did about the wall (requested an
increase, launched on an alternative, keeps the launch), a user's launch refused, and a launch that waited for its
quota. The workflows (quota_wall.py, launch_blocked.py, quota_watch.py) pass in what AWS answered them; `trainguard
test-notification` passes in sample facts, so both send the same sentences (docs/operations.md, "How messages are
written")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from trainguard.domain.message_kinds import MessageKind
from trainguard.domain.messages import Notification, compose_notification
from trainguard.domain.model import Category, Decision
from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard.domain.quotas import WaitingLaunch, instances
from trainguard.domain.wording import sentence

NOT_A_QUOTA = (
    "ResourceLimitExceeded, but the message names no quota, as when the instance type is not offered in the region: "
    "no increase can fix it, so trainguard requests nothing."
)
_WHEN = "%Y-%m-%d %H:%M UTC"


@dataclass(frozen=True)
class QuotaWallResult:
    """What was done about the wall: `summary` is the sentence for the notification."""

    summary: str
    quota_request: dict[str, Any] | None = None
    waiting: bool = False
    is_quota: bool = True
    # The sentence that says it launched meanwhile on an alternative whose quota has room ("" when it did not).
    launched_on: str = ""


def no_increase_needed(reason: str, then: str) -> str:
    """No request filed (`reason`: quotas.plan_quota_request's), and what happens instead."""
    return f"No increase requested: {reason}. {then}"


def no_increase_possible(reason: str) -> str:
    """No request can be sized for this launch (`reason`: quotas.launch_demand's)."""
    return f"No increase requested: {reason}; a person must decide."


def no_such_quota(quota_name: str) -> str:
    return f"Service Quotas has no SageMaker quota named '{quota_name}'; nothing requested."


def increase_requested(
    *,
    found_open: bool,
    quota_name: str,
    desired_value: float,
    request_id: str,
    case_id: str,
    status: str,
    plan_reason: str,
    then: str,
) -> str:
    """An increase requested (or an open request found: never ask twice), and what happens meanwhile (`then`)."""
    verb = "Found an open request" if found_open else "Requested an increase"
    return (
        f"{verb} of '{quota_name}' to {instances(desired_value)}. Request {request_id}, support case "
        f"{case_id or 'none yet'}, status {status}. {sentence(plan_reason)} {then}"
    )


def dry_run_summary(
    would_ask_for: float | None, alternatives: Sequence[str], plan_reason: str, not_followed: Sequence[str]
) -> str:
    """`would_ask_for`: the instances a request would ask for (None: none would be filed); `alternatives`: the
    alternatives the job's tag lists, described (fallback_options.Alternative.describe)."""
    would = f"ask for {instances(would_ask_for)}" if would_ask_for is not None else "request nothing"
    meanwhile = (
        f", launch meanwhile on the first of {', '.join(alternatives)} whose quota has room," if alternatives else ""
    )
    notes = "".join(f" Not followed: {note}." for note in not_followed)
    return (
        f"Dry run: trainguard does nothing. It would {would}{meanwhile} and keep the launch until the quota allows "
        f"it. {sentence(plan_reason)}{notes}"
    )


def launched_on_alternative(job_name: str, alternative: str) -> str:
    """`alternative`: described as fallback_options.Alternative.describe writes it ("2 x ml.p5.48xlarge")."""
    return (
        f"Meanwhile trainguard launched {job_name} on {alternative}, an alternative the job's tag lists whose quota "
        "has room; the request stays open, and its approval launches no second copy."
    )


def wait_sentence(job_name: str, give_up_at: datetime, not_launchable: str = "") -> str:
    """What becomes of the blocked launch: kept until `give_up_at`, or (`not_launchable`: why) left to a person."""
    if not_launchable:
        return f"trainguard will not launch {job_name} itself: {not_launchable}"
    return f"trainguard will launch {job_name} when the quota allows it, until {give_up_at.strftime(_WHEN)}."


def compose_blocked_launch_notification(
    job_name: str, error_code: str, error_message: str, wall: QuotaWallResult, region: str, now: datetime
) -> Notification:
    """A user's CreateTrainingJob refused (seen through CloudTrail), and what trainguard did about it (`wall`)."""
    kind = OutcomeKind.QUOTA_WALL if wall.is_quota else OutcomeKind.NOTIFIED
    return compose_notification(
        kind=MessageKind.LAUNCH_BLOCKED_BY_QUOTA if wall.is_quota else MessageKind.LAUNCH_REFUSED,
        headline="{job}: launch blocked by a quota" if wall.is_quota else "{job}: launch refused",
        job_name=job_name,
        happened=f"CreateTrainingJob for {job_name} failed with {error_code}: {error_message}",
        did=wall.summary,
        why="The job is tagged to be guarded by trainguard; the launch's own tags opted it in.",
        outcome=kind.value,
        decision=Decision.QUOTA if wall.is_quota else Decision.NOTIFY,
        region=region,
        now=now,
    )


def compose_launch_left_to_owner_notification(
    job_name: str, error_code: str, error_message: str, owner: str, why: str, region: str, now: datetime
) -> Notification:
    """A launch made by its parent (`owner`: ownership.Parent.describe) hit a wall: left to the parent."""
    return compose_notification(
        kind=MessageKind.LAUNCH_LEFT_TO_OWNER,
        headline="{job}: launch blocked, left to its owner",
        job_name=job_name,
        happened=f"CreateTrainingJob for {job_name} failed with {error_code}: {error_message}",
        did=f"Nothing: the launch belongs to {owner}; no quota request, no launch later.",
        why=why,
        outcome=OutcomeKind.NOTIFIED.value,
        decision=Decision.NOTIFY.value,
        region=region,
        now=now,
    )


def now_allowed(quota_name: str) -> str:
    """Why a launch that waited was made."""
    return f"the quota '{quota_name}' now allows it"


def given_up(why: str) -> str:
    """Why a launch that waited was not made: `why` is one of the clauses below, or what SageMaker answered."""
    return f"trainguard gave up the launch: {why}"


def waited_until(give_up_at: datetime) -> str:
    return f"it waited until {give_up_at.strftime(_WHEN)} (setting quota_wait_hours)"


def request_ended(quota_name: str, status: str) -> str:
    return f"the quota request for '{quota_name}' ended {status}"


def launch_refused(refusal: str) -> str:
    return f"SageMaker refused the launch: {refusal}"


def waiting_launch_outcome(waiting: WaitingLaunch, kind: OutcomeKind, why: str) -> Outcome:
    """The outcome of a launch that waited for its quota: launched (OutcomeKind.RELAUNCHED) or not."""
    launched = kind is OutcomeKind.RELAUNCHED
    new_job = waiting.job_name if launched else ""
    return Outcome(kind, waiting.blocked_job, why, Decision.QUOTA, Category.QUOTA, new_job)
