"""The message about a guarded job that trainguard watches only in part: on log silence, without an alarm on its
GPUs (domain/stall_alarms.py, `gpu_unwatched`). Told once per job, so that no job is left unwatched in silence.
Written with trainguard.domain.messages' frame, by the rules in docs/operations.md ("How messages are written")."""

from __future__ import annotations

from datetime import datetime

from trainguard.domain.message_kinds import MessageKind
from trainguard.domain.messages import EVENT_TYPE_STALL, Notification, compose_notification
from trainguard.domain.outcome import Outcome
from trainguard.domain.wording import sentence


def compose_partly_watched_notice(outcome: Outcome, region: str, now: datetime) -> Notification:
    """`outcome.reason` says why the job's GPUs have no alarm (trainguard's own clause)."""
    return compose_notification(
        kind=MessageKind.GPUS_NOT_WATCHED,
        headline="{job}: watched on log silence only, not on its GPUs",
        job_name=outcome.job_name,
        happened=f"The job's GPUs cannot be watched by an alarm: {outcome.reason}.",
        did="It watches the job's log silence as for any job, and reads every host's GPUs itself when that alarm "
        "fires. No alarm tells it that the GPUs alone have gone idle.",
        why=sentence(
            "a hang that leaves the GPUs idle (a dead data loader) is then found when the job's log-silence limit "
            "is reached, not sooner by the idle-GPU signal; progress lines the job prints (docs/progress.md) "
            "shorten that wait"
        ),
        outcome=outcome.kind.value,
        decision="notify",
        region=region,
        now=now,
        category="stall",
        event_type=EVENT_TYPE_STALL,
    )
