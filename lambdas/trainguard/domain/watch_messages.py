"""The messages a watch's start tells once per job: a job watched only in part, and a job watched with defaults in
place of stall or progress tags it could not read.

Watched only in part: on log silence, without an alarm on its GPUs (domain/stall_alarms.py, `gpu_unwatched`), so
that no job is left unwatched in silence. Tags it could not read (TagProblem: why, and the value used instead), so
that no tag is ignored in silence. Written with trainguard.domain.messages' frame, by the rules in docs/operations.md
("How messages are written")."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import partial

from trainguard.domain.message_kinds import MessageKind
from trainguard.domain.messages import EVENT_TYPE_STALL, Notification, compose_notification
from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard.domain.policy import TagProblem
from trainguard.domain.wording import sentence

# What a watch's start tells: a notice about a job that trains, nothing decided but to tell.
_told_at_the_watch_start = partial(
    compose_notification, decision="notify", category="stall", event_type=EVENT_TYPE_STALL
)


def compose_partly_watched_notice(outcome: Outcome, region: str, now: datetime) -> Notification:
    """`outcome.reason` says why the job's GPUs have no alarm (trainguard's own clause)."""
    return _told_at_the_watch_start(
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
        region=region,
        now=now,
    )


def compose_unread_tags_notice(
    job_name: str, problems: Sequence[TagProblem], region: str, now: datetime
) -> Notification:
    """Each tag the watch could not read, why, and the value it uses instead (TagProblem.describe: the tag's value
    quoted, as the job's own text)."""
    return _told_at_the_watch_start(
        kind=MessageKind.WATCH_TAGS_NOT_READ,
        headline="{job}: watched with defaults for tags it could not read",
        job_name=job_name,
        happened="trainguard started to watch the job for stalls and could not read some of its stall or progress "
        "tags. Each is listed below, with why and with the value used in its place.",
        did="It watches the job with the value listed for each of those tags, and with the job's other tags as they "
        "are written. It tells this once for this job.",
        why=sentence(
            "a tag that cannot be read must neither leave the job unwatched nor be ignored in silence. Correct the "
            "tag for the job's next launch: docs/tags.md gives each tag's values, and `trainguard explain --describe` "
            "on the job's DescribeTrainingJob response lists every tag of it that trainguard cannot read"
        ),
        outcome=OutcomeKind.WATCHED_WITH_DEFAULTS.value,
        region=region,
        now=now,
        sections=(("Tags trainguard could not read", "\n".join(f"- {p.describe()}" for p in problems)),),
    )
