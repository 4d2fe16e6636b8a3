"""The SNS message for one decision: a short subject, a body a person reads, filterable attributes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from trainguard.domain.checkpoint_health import redo_sentence
from trainguard.domain.checkpoints import CheckpointState
from trainguard.domain.console_links import Link, console_links
from trainguard.domain.fallbacks import FallbackKind
from trainguard.domain.message_kinds import MessageKind
from trainguard.domain.model import TrainingJob
from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard.domain.user_text import shown, shown_on_one_line
from trainguard.domain.wording import full_stop, sentence

# SNS Publish, Subject: "Subjects must be UTF-8 text with no line breaks or control characters, and less
# than 100 characters long" (botocore 1.44 service model, sns Publish).
SUBJECT_LIMIT = 100
EVENT_TYPE_JOB_ENDED = "training-job-ended"
EVENT_TYPE_QUOTA = "quota-wall"
EVENT_TYPE_STALL = "stall"
_REASON_SHOWN = 1200


@dataclass(frozen=True)
class Notification:
    """`body` is the plain-text message (sections of indented text, then the links); `links` are the same links
    as data, which the chat copy turns into its next steps (trainguard.domain.chat_messages)."""

    subject: str
    body: str
    attributes: dict[str, str]
    links: tuple[Link, ...] = ()
    kind: MessageKind | None = None  # which message this is (message_kinds.py); None for a hand-made one


Section = tuple[str, Sequence[str]]  # a title, and its paragraphs


def render_body(sections: Sequence[Section], links: Sequence[Link], now: datetime) -> str:
    """The plain-text body: each title on a line of its own, each paragraph under it indented by two spaces and
    its later lines by four (a list, every line starting "- ", keeps its items in line), the links, a signature.
    Every paragraph goes through user_text.shown (a failure reason, a log line, a tag or a name may be in any of
    them), so no text starts a line of its own."""
    lines: list[str] = []
    for title, paragraphs in sections:
        lines += [*([""] if lines else []), shown_on_one_line(title)]
        for paragraph in paragraphs:
            first, *rest = shown(paragraph).split("\n")
            later = "  " if all(line.startswith("- ") for line in (first, *rest)) else "    "
            lines += [f"  {first}", *(f"{later}{line}" for line in rest)]
    if links:
        lines += ["", "Links", *(f"  {(link.label.capitalize() + ':').ljust(5)} {link.url}" for link in links)]
    lines += ["", f"-- trainguard, {now.strftime('%Y-%m-%d %H:%M:%S UTC')}"]
    return "\n".join(lines)


_HEADLINES = {
    MessageKind.JOB_RELAUNCHED: "relaunched {job}",
    MessageKind.JOB_RELAUNCHED_WITH_PREFERENCES: "relaunched {job}",
    MessageKind.JOB_RELAUNCHED_ON_NEXT_TYPE: "relaunched {job}",
    MessageKind.JOB_RELAUNCHED_ON_DEMAND: "relaunched {job}",
    MessageKind.JOB_RELAUNCHED_ON_QUOTA_ROOM: "relaunched {job}",
    MessageKind.JOB_RELAUNCH_SCHEDULED: "relaunch of {job} scheduled",
    MessageKind.JOB_NOT_RELAUNCHED: "{job} failed, not relaunched",
    MessageKind.JOB_QUOTA_WALL: "{job} blocked by a quota",
    MessageKind.JOB_NOT_RETRIED: "{job} ended: {category}, not retried",
    MessageKind.JOB_LEFT_TO_OWNER: "{job} ended: {category}, left to its owner",
}
_RELAUNCHED_BY_FALLBACK = {
    FallbackKind.INSTANCE_PREFERENCES.value: MessageKind.JOB_RELAUNCHED_WITH_PREFERENCES,
    FallbackKind.NEXT_INSTANCE_TYPE.value: MessageKind.JOB_RELAUNCHED_ON_NEXT_TYPE,
    FallbackKind.ON_DEMAND.value: MessageKind.JOB_RELAUNCHED_ON_DEMAND,
    FallbackKind.QUOTA_ROOM.value: MessageKind.JOB_RELAUNCHED_ON_QUOTA_ROOM,
}
_JOB_END_KINDS = {
    OutcomeKind.RELAUNCH_SCHEDULED: MessageKind.JOB_RELAUNCH_SCHEDULED,
    OutcomeKind.NOT_RELAUNCHED: MessageKind.JOB_NOT_RELAUNCHED,
    OutcomeKind.QUOTA_WALL: MessageKind.JOB_QUOTA_WALL,
}


def job_end_kind(outcome: Outcome) -> MessageKind:
    """Which message a job's end makes: its owner's, a relaunch (by the fallback it took), or its outcome's."""
    if outcome.details.get("owner"):
        return MessageKind.JOB_LEFT_TO_OWNER
    if outcome.kind is OutcomeKind.RELAUNCHED:
        return _RELAUNCHED_BY_FALLBACK.get(str(outcome.details.get("fallback", "")), MessageKind.JOB_RELAUNCHED)
    return _JOB_END_KINDS.get(outcome.kind, MessageKind.JOB_NOT_RETRIED)


def compose_job_end_notification(
    job: TrainingJob,
    outcome: Outcome,
    checkpoint: CheckpointState | None,
    tag_problems: tuple[str, ...],
    region: str,
    now: datetime,
    advice: str = "",
) -> Notification:
    """`advice`: the lineage's checkpoint advice (checkpoint_health.advise_lineage), told with a relaunch."""
    category = outcome.category or "unknown"
    kind = job_end_kind(outcome)
    subject = fit_subject("[trainguard] " + _HEADLINES[kind], job.name, category)
    secondary = f", secondary status {job.secondary_status}" if job.secondary_status not in ("", job.status) else ""
    happened = [f"Training job {job.name} ended with status {job.status}{secondary}."]
    if job.failure_reason:
        reason = job.failure_reason
        happened.append(
            "Failure reason: " + (reason if len(reason) <= _REASON_SHOWN else reason[:_REASON_SHOWN] + " [...]")
        )
    happened.append(f"trainguard's reading: {category}.")
    sections: list[Section] = [("What happened", happened), ("What trainguard did", [_did(outcome)])]
    sections.append(("Why", [outcome.reason]))
    if checkpoint is not None:
        told = [sentence(checkpoint.describe(now))]
        relaunching = outcome.kind in (OutcomeKind.RELAUNCHED, OutcomeKind.RELAUNCH_SCHEDULED)
        if relaunching and (redo := redo_sentence(checkpoint, now)):
            told.append(redo)
        if relaunching and advice:
            told.append(f"Advice: {advice}.")
        sections.append(("Checkpoint", told))
    if tag_problems:
        sections.append(("Tags trainguard could not read or did not follow", [f"- {p}" for p in tag_problems]))
    links = console_links(region, job.name, new_job=outcome.new_job_name)
    attributes = {
        "event_type": EVENT_TYPE_JOB_ENDED,
        "job_name": job.name,
        "decision": outcome.decision or "none",
        "outcome": outcome.kind.value,
        "category": category,
    }
    return Notification(subject, render_body(sections, links, now), attributes, links, kind)


QUOTA_ROOM = FallbackKind.QUOTA_ROOM.value


def _did(outcome: Outcome) -> str:
    if outcome.kind is OutcomeKind.RELAUNCHED and outcome.details.get("fallback") == QUOTA_ROOM:
        # The summary names the launch that ran (on an alternative): the relaunch as it was never did.
        return f"A quota refused the relaunch as it was. {outcome.details.get('fallback_summary', '')}"
    if outcome.kind is OutcomeKind.RELAUNCHED and (fallback := outcome.details.get("fallback_summary")):
        return f"Relaunched it as {outcome.new_job_name} from the same checkpoint prefix. {fallback}"
    if outcome.kind is OutcomeKind.RELAUNCHED:
        return f"Relaunched it as {outcome.new_job_name}, with the same configuration and checkpoint prefix."
    if outcome.kind is OutcomeKind.RELAUNCH_SCHEDULED:
        when = outcome.details.get("launch_at", "later")
        return f"Scheduled a relaunch as {outcome.new_job_name} at {when} (capacity backoff)."
    if outcome.kind is OutcomeKind.QUOTA_WALL:
        return str(outcome.details.get("quota_summary", "Met a quota wall."))
    if owner := outcome.details.get("owner"):
        return f"Nothing: the job belongs to {owner}; its retries are the owner's (see Why)."
    if outcome.kind is OutcomeKind.NOT_RELAUNCHED:
        return "Nothing: a relaunch would have helped, but it did not relaunch (see Why)."
    return "Nothing: a relaunch would not fix this, so it only tells you."


def compose_notification(
    *,
    kind: MessageKind,
    headline: str,
    job_name: str,
    happened: str,
    did: str,
    why: str,
    outcome: str,
    decision: str,
    region: str,
    now: datetime,
    category: str = "quota",
    event_type: str = EVENT_TYPE_QUOTA,
    sections: tuple[tuple[str, str], ...] = (),
) -> Notification:
    """A message about something other than a job's end (a quota wall, a stall, a stuck stop), for a
    job that may not even exist yet. `headline` may use {job}; `sections` are extra (title, text)."""
    body: list[Section] = [("What happened", [happened]), ("What trainguard did", [did]), ("Why", [why])]
    body += [(title, [text]) for title, text in sections]
    links = console_links(region, job_name, logs=category != "quota", quotas=category == "quota")
    attributes = {
        "event_type": event_type,
        "job_name": job_name,
        "decision": decision,
        "outcome": outcome,
        "category": category,
    }
    subject = fit_subject("[trainguard] " + headline, job_name, category)
    return Notification(subject, render_body(body, links, now), attributes, links, kind)


def compose_quota_request_closed_notification(
    quota_name: str, desired_value: str, request_id: str, case_id: str, status: str, region: str, now: datetime
) -> Notification:
    """`desired_value`: the instances asked for (trainguard files requests for instance counts only:
    quotas.launch_demand)."""
    approved = status == "APPROVED"
    return compose_notification(
        kind=MessageKind.QUOTA_REQUEST_APPROVED if approved else MessageKind.QUOTA_REQUEST_NOT_APPROVED,
        headline=f"quota request {status.lower()}: {{job}}",
        job_name=quota_name,
        happened=f"The request to raise '{quota_name}' to {desired_value} instances is {status}. "
        f"Request {request_id}, support case {case_id or 'none'}.",
        did="It launches the jobs that waited for this quota at its next check."
        if approved
        else "It gives up the launches that waited for this quota, and tells you about each.",
        why="trainguard follows the quota requests it filed until AWS decides them.",
        outcome=f"quota-request-{status.lower()}",
        decision="quota",
        region=region,
        now=now,
    )


def compose_waiting_launch_notification(
    launch_name: str, quota_name: str, waited_since: datetime, outcome: Outcome, region: str, now: datetime
) -> Notification:
    """A launch that waited for a quota was made, or given up."""
    launched = outcome.kind is OutcomeKind.RELAUNCHED
    return compose_notification(
        kind=MessageKind.WAITING_LAUNCH_LAUNCHED if launched else MessageKind.WAITING_LAUNCH_GIVEN_UP,
        headline="launched {job} after a quota wall" if launched else "{job} not launched after a quota wall",
        job_name=launch_name,
        happened=f"{launch_name} waited since {waited_since.strftime('%Y-%m-%d %H:%M UTC')} for the quota "
        f"'{quota_name}'.",
        did=f"Launched {launch_name}." if launched else "Did not launch it.",
        why=full_stop(outcome.reason),
        outcome=outcome.kind.value,
        decision="quota",
        region=region,
        now=now,
    )


def naming_the_account(notification: Notification, account: str, region: str) -> Notification:
    """A hub's notification (docs/organization.md) names the job's account and region: in its subject, first in
    its body, and as attributes a subscription's filter policy can select on. The console links in the body
    open that region in whichever account the reader is signed in to, so the body says which account to use."""
    tag = f"[trainguard {account} {region}]"
    subject = notification.subject.replace("[trainguard]", tag, 1)
    if len(subject) >= SUBJECT_LIMIT:
        subject = subject[: SUBJECT_LIMIT - 4] + "..."
    where = (
        f"Account {account}, region {region}. The links below open {region} in the console of the account you are "
        f"signed in to: switch to account {account} first."
    )
    attributes = {**notification.attributes, "account": account, "region": region}
    return Notification(subject, f"{where}\n\n{notification.body}", attributes, notification.links, notification.kind)


def fit_subject(template: str, job_name: str, category: str) -> str:
    room = SUBJECT_LIMIT - 1 - len(template.format(job="", category=category))
    name = shown_on_one_line(job_name)
    name = name if len(name) <= room else name[: max(room - 3, 1)] + "..."
    subject = template.format(job=name, category=category)
    subject = "".join(ch if ch.isprintable() else "?" for ch in subject)  # no line breaks or control characters
    return subject[: SUBJECT_LIMIT - 1]
