"""The messages about a job that trains: a verified stall (what the evidence showed, and what was done), and what
the prober tells once and never acts on (a checkpoint sync that stopped, a stop stuck in Stopping). Written with
trainguard.domain.messages' frame, by the rules in docs/operations.md ("How messages are written")."""

from __future__ import annotations

from datetime import datetime

from trainguard.domain.checkpoints import CheckpointState
from trainguard.domain.message_kinds import MessageKind
from trainguard.domain.messages import EVENT_TYPE_STALL, Notification, compose_notification
from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard.domain.progress_limits import ProgressCheck
from trainguard.domain.stalls import StallEvidence, StallVerdict
from trainguard.domain.wording import format_value, full_stop, sentence

_STALL_HEADLINES = {
    MessageKind.STALL_STOPPED: "{job} stalled: stopped",
    MessageKind.STALL_STOPPED_FOR_OWNER: "{job} stalled: stopped, its parent decides what follows",
    MessageKind.STALL_MUTED: "{job} stalled, alarm muted",
    MessageKind.STALL_LEFT_TO_OWNER: "{job} stalled, left to its owner",
    MessageKind.STALL_DRY_RUN: "{job} stalled, dry run",
}


_PROGRESS_RULES = {
    ProgressCheck.START: "The job announced its start but printed no step by its start cutoff.",
    ProgressCheck.STEP: "The job reports its steps, so it is judged by them, not by its silence: no advancing step "
    "within its own step limit is a stall, and lines that do not advance the step are no progress.",
    ProgressCheck.PHASE: "The job announced a long phase: it is a stall once the phase runs past its expectation and "
    "margin while no step advances.",
}


def stall_kind(verdict: StallVerdict) -> MessageKind:
    if verdict.act:
        return MessageKind.STALL_STOPPED_FOR_OWNER if verdict.parent else MessageKind.STALL_STOPPED
    if verdict.muted_by:
        return MessageKind.STALL_MUTED
    return MessageKind.STALL_LEFT_TO_OWNER if verdict.parent_stops_off else MessageKind.STALL_DRY_RUN


def compose_stall_notification(
    job_name: str,
    signal: str,
    verdict: StallVerdict,
    evidence: StallEvidence,
    checkpoint: CheckpointState,
    did: str,
    outcome: Outcome,
    region: str,
    now: datetime,
) -> Notification:
    """The message about a verified stall: what the evidence showed, and what was done about it."""
    last = (
        f"At {evidence.last_log_time.strftime('%Y-%m-%d %H:%M:%S UTC')}: {evidence.last_log_line or 'an empty line'}"
        if evidence.last_log_time
        else "No log line found."
    )
    kind = stall_kind(verdict)
    limit = ("Log-silence limit for this job", sentence(verdict.limit.describe()) if verdict.limit else "Not computed.")
    if verdict.progress is not None:
        limit = ("Progress rule for this job", _PROGRESS_RULES[verdict.progress])
    return compose_notification(
        kind=kind,
        headline=_STALL_HEADLINES[kind],
        job_name=job_name,
        happened=f"{job_name} is InProgress but stalled. Signal: {signal}. {sentence(verdict.reason)}",
        did=did,
        why="A hung job bills every instance until MaxRuntimeInSeconds. trainguard stops a stall only after it has "
        f"checked fresh evidence: the alarm is only the hint.{_parents_part(verdict)}",
        outcome=outcome.kind.value,
        decision=outcome.decision or "none",
        category="stall",
        event_type=EVENT_TYPE_STALL,
        region=region,
        now=now,
        sections=(
            ("Last log line", last),
            limit,
            ("GPU use per host, its peak over the idle window", gpu_peaks(evidence)),
            ("Checkpoint", sentence(checkpoint.describe(now))),
        ),
    )


def _parents_part(verdict: StallVerdict) -> str:
    """For a job a parent owns: why trainguard never relaunches it."""
    if verdict.parent is None:
        return ""
    return (
        " It never relaunches a job another service owns: the parent would not know of the copy, and its own "
        "retries run too."
    )


def gpu_peaks(evidence: StallEvidence) -> str:
    """Each host's GPUUtilization peak, in CloudWatch's unit: percent, summed over the host's GPUs (so a host of 8
    GPUs goes up to 800%), one host a line."""
    if not evidence.gpu_by_host:
        return "No GPU figures."
    gpus = evidence.gpus_per_host
    most = f" of a possible {100 * gpus}%" if gpus else ", summed over its GPUs"
    return "\n".join(
        f"- {host.rsplit('/', 1)[-1]}: GPUUtilization peaked at {format_value(value)}%{most}"
        for host, value in sorted(evidence.gpu_by_host.items())
    )


# What the prober tells once and never acts on: (kind, headline, what trainguard did, why it matters).
_PROBER_NOTICES: dict[OutcomeKind, tuple[MessageKind, str, str, str]] = {
    OutcomeKind.CHECKPOINT_STALE: (
        MessageKind.CHECKPOINT_STALE,
        "{job}: checkpoints have stopped reaching S3",
        "Nothing to the job: it keeps training. trainguard tells you once for this checkpoint.",
        "A job whose checkpoint sync has stopped loses all the work since its last checkpoint at its next "
        "failure. Look at the job's checkpoint upload: the S3 prefix, the role's permissions, the local "
        "checkpoint directory. A stop, or a relaunch from the newest checkpoint, starts the sync again.",
    ),
    OutcomeKind.STUCK_STOPPING: (
        MessageKind.STUCK_STOPPING,
        "{job} is stuck in Stopping",
        "Nothing: it tells you once. Look at the job's logs and its S3 upload.",
        "trainguard reports stops that have not finished after 30 minutes.",
    ),
}


def compose_prober_notice(outcome: Outcome, region: str, now: datetime) -> Notification:
    """The message about a stale checkpoint or a stuck stop (`outcome.kind`): told once, nothing done."""
    kind, headline, did, why = _PROBER_NOTICES[outcome.kind]
    return compose_notification(
        kind=kind,
        headline=headline,
        job_name=outcome.job_name,
        # A stale checkpoint's reason is trainguard's clause; a stuck stop's starts with the job's name, kept as is.
        happened=sentence(outcome.reason) if kind is MessageKind.CHECKPOINT_STALE else full_stop(outcome.reason),
        did=did,
        why=why,
        outcome=outcome.kind.value,
        decision="notify",
        region=region,
        now=now,
        category=outcome.kind.value,
        event_type=EVENT_TYPE_STALL,
    )


def what_was_done(verdict: StallVerdict, stopped: bool, muted_until: datetime | None) -> tuple[str, OutcomeKind]:
    """The message's "What trainguard did" for a stall verdict, and the outcome's kind: `stopped` when the stop
    trainguard asked for is under way (workflows/stall_alarm.py; `trainguard test-notification` renders its
    samples with this too)."""
    if verdict.act and verdict.parent and stopped:
        did = (
            f"Stopped it (StopTrainingJob). It is not relaunched: its parent decides. {verdict.parent.kind.after_stop}"
        )
        return did, OutcomeKind.STALL_STOPPED
    if verdict.act:
        did = (
            "Stopped it (StopTrainingJob). When it has stopped, trainguard relaunches it from its last checkpoint, "
            "within the job's retry limit and the hourly budget."
            if stopped
            else "Nothing: the job had already left InProgress when trainguard tried to stop it."
        )
        return did, OutcomeKind.STALL_STOPPED
    if verdict.parent_stops_off and verdict.parent:
        did = (
            f"Nothing: the setting stop_stalled_parent_jobs is off. The job belongs to {verdict.parent.describe()}. "
            "It keeps running, and billing: stop it there."
        )
        return did, OutcomeKind.STALL_FOUND
    if verdict.muted_by and muted_until is not None:
        did = (
            f"Nothing: the alarm is muted by {verdict.muted_by} until {muted_until.strftime('%Y-%m-%d %H:%M UTC')}. "
            "The job keeps running, and billing. When the mute ends, trainguard sets the alarm back to OK; if the "
            "job is still stalled then, it is stopped as usual."
        )
        return did, OutcomeKind.STALL_FOUND
    did = "Nothing: the job is in dry run (its actions do not include stop). It keeps running, and billing."
    return did, OutcomeKind.STALL_FOUND
