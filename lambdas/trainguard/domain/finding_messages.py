"""The message about a slowdown or a divergence the job's own lines show (progress_findings.py): what the figures
are, what it costs, what is known of the cause, and what trainguard did (finding_actions.py). Written with
trainguard.domain.messages' frame, by the rules in docs/operations.md ("How messages are written")."""

from __future__ import annotations

from datetime import datetime

from trainguard.domain.checkpoints import CheckpointState
from trainguard.domain.finding_actions import FindingDecision
from trainguard.domain.message_kinds import MessageKind
from trainguard.domain.messages import EVENT_TYPE_STALL, Notification, compose_notification
from trainguard.domain.progress_findings import Finding, FindingKind
from trainguard.domain.slow_hosts import NOT_KNOWN
from trainguard.domain.wording import format_value, sentence

_WHEN = "%Y-%m-%d %H:%M UTC"


def compose_finding_notice(
    job_name: str, instance_type: str, host_count: int, finding: Finding, checkpoints: CheckpointState | None,
    decision: FindingDecision, *, region: str, now: datetime, which_host: str = NOT_KNOWN,
) -> Notification:  # fmt: skip
    """The notice of `finding` on the job; `checkpoints`: its checkpoint prefix as listed now (a divergence says
    which checkpoint predates it); `decision`: whether it was stopped, and what the message says was done;
    `which_host`: what its hosts' GPU figures say of a slowdown's host (slow_hosts.py)."""
    sections: tuple[tuple[str, str], ...]
    stopped = ": stopped" if decision.stop else ""
    if finding.kind is FindingKind.SLOWDOWN:
        kind = MessageKind.SLOWDOWN_STOPPED if decision.stop else MessageKind.SLOWDOWN_FOUND
        headline = f"{{job}} runs {finding.ratio:.1f} times slower{stopped}"
        sections = (("Cost", slowdown_cost(instance_type, host_count, finding.ratio)), ("Which host", which_host))
        why = _SLOWDOWN_WHY
    else:
        kind = MessageKind.DIVERGENCE_STOPPED if decision.stop else MessageKind.DIVERGENCE_FOUND
        headline = f"{{job}}: its loss has diverged{stopped}"
        sections = (("Checkpoint", checkpoint_before(checkpoints, finding)),)
        why = _DIVERGENCE_WHY
    return compose_notification(
        kind=kind,
        headline=headline,
        job_name=job_name,
        happened=sentence(f"since {finding.since.strftime(_WHEN)}, {finding.reason}"),
        did=decision.did,
        why=why,
        outcome=kind.value,
        decision="stop" if decision.stop else "notify",
        region=region,
        now=now,
        category=finding.kind.value,
        event_type=EVENT_TYPE_STALL,
        sections=sections,
    )


def slowdown_cost(instance_type: str, host_count: int, ratio: float) -> str:
    """What the slowdown costs: the share of every hour's work lost, in instance-hours of the job's own shape."""
    lost = 1 - 1 / ratio
    hours = host_count * lost
    return (
        f"At {ratio:.1f} times slower, {lost:.0%} of every hour it runs is lost: {format_value(round(hours, 1))} "
        f"instance-hours of {host_count} x {instance_type} an hour, for as long as the slowdown lasts."
    )


def checkpoint_before(checkpoints: CheckpointState | None, finding: Finding) -> str:
    """Which checkpoint predates the divergence: the newest object written before its first bad report."""
    if checkpoints is None or not checkpoints.configured:
        return "The job has no checkpoint prefix (CheckpointConfig), so no checkpoint predates the divergence."
    if not checkpoints.readable:
        return f"Its checkpoint prefix could not be listed: {checkpoints.listing_error}."
    before = [at for at in checkpoints.object_times if at < finding.since]
    if not before:
        return (
            f"No checkpoint object among the newest listed under {checkpoints.s3_uri} was written before "
            f"{finding.since.strftime(_WHEN)}: each may hold the diverged weights."
        )
    return (
        f"The newest object under {checkpoints.s3_uri} written before the first bad loss (step {finding.step}, "
        f"{finding.since.strftime(_WHEN)}) was written at {max(before).strftime(_WHEN)}: resume from that "
        "checkpoint, not a later one, which may hold the diverged weights."
    )


_SLOWDOWN_WHY = (
    "The job's own step lines say its steps take longer than they did after its warm-up, for longer than its "
    "slowdown minutes. A host that degrades (a GPU, its memory, its network) slows every rank and keeps the job "
    "logging, so no stall rule fires. A planned change of batch size is no slowdown when the step line prints it."
)
_DIVERGENCE_WHY = (
    "A run whose loss is NaN or infinite keeps every GPU busy and every line flowing until its MaxRuntime, and "
    "produces nothing worth keeping. A relaunch from the same data and seed would diverge again."
)
