"""Checkpoint health: is a training job's newest checkpoint much older than the job's own interval?

A job whose checkpoint sync stops silently trains on, and loses everything since the last checkpoint that
reached S3 at its next failure (one team lost days of a 32-GPU job that way: aws/sagemaker-python-sdk issue
3062). trainguard reads each watched job's checkpoint prefix (one ListObjectsV2 page of up to 1,000 objects
is one LIST request) every CHECK_EVERY_MINUTES, and warns once when the newest checkpoint is older than
STALE_FACTOR times the job's own interval while the job is Training. It never stops the job for it.

The interval: the job's checkpoint writes are the objects' LastModified times, those within WRITE_SPREAD of
each other making one write (a checkpoint is often several files: model, optimizer, one per rank); the
interval is the median gap between writes, once MIN_WRITES writes are seen. A relaunch writes under the
same prefix, so a lineage's earlier writes count too. The same interval says, before a relaunch, how much
work the relaunch will redo.
"""

from __future__ import annotations

import itertools
import statistics
import zlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from trainguard.domain.checkpoint_advice import CheckpointAdvice, advise, describe_advice
from trainguard.domain.checkpoints import CheckpointState, format_duration
from trainguard.domain.instance_types import gpus_per_host
from trainguard.domain.model import TrainingJob, instances_of

CHECK_EVERY_MINUTES = 15
STALE_FACTOR = 3.0
REDO_FACTOR = 2.0  # a relaunch notice tells the work to redo when the newest checkpoint is this many intervals old
MIN_WRITES = 3
WRITE_SPREAD = timedelta(minutes=2)
KEPT_TIMES = 500  # the newest objects' times an adapter keeps for this


def checkpoint_writes(times: tuple[datetime, ...]) -> list[datetime]:
    """The start of each checkpoint write, oldest first: objects within WRITE_SPREAD of the one before are one write."""
    writes: list[datetime] = []
    last: datetime | None = None
    for moment in sorted(times):
        if last is None or moment - last > WRITE_SPREAD:
            writes.append(moment)
        last = moment
    return writes


def checkpoint_interval(state: CheckpointState) -> timedelta | None:
    """The job's own checkpoint interval: the median gap between its writes (None before MIN_WRITES writes)."""
    writes = checkpoint_writes(state.object_times)
    if len(writes) < MIN_WRITES:
        return None
    return timedelta(seconds=statistics.median((b - a).total_seconds() for a, b in itertools.pairwise(writes)))


MIN_WRITE_TIME = timedelta(minutes=1)  # assumed when a write's files land within seconds (one file, or all at once)


def checkpoint_write_time(state: CheckpointState) -> timedelta:
    """How long a checkpoint write takes, as far as S3 shows it: the median span from a write's first file to
    its last, never less than MIN_WRITE_TIME (the time to write the first file is not visible)."""
    spans, start, last = [], None, None
    for moment in sorted(state.object_times):
        if last is None or moment - last > WRITE_SPREAD:
            if start is not None and last is not None:
                spans.append((last - start).total_seconds())
            start = moment
        last = moment
    if start is not None and last is not None:
        spans.append((last - start).total_seconds())
    return max(MIN_WRITE_TIME, timedelta(seconds=statistics.median(spans))) if spans else MIN_WRITE_TIME


@dataclass(frozen=True)
class CheckpointHealth:
    stale: bool
    reason: str
    age: timedelta | None = None
    interval: timedelta | None = None


def judge_checkpoints(state: CheckpointState, training_since: datetime | None, now: datetime) -> CheckpointHealth:
    """Whether the job's checkpoints have stopped reaching S3 while it trains, and why (not) so."""
    if not state.readable or state.is_empty or state.newest_object_time is None:
        return CheckpointHealth(False, state.describe(now))
    interval = checkpoint_interval(state)
    age = now - state.newest_object_time
    if interval is None or interval <= timedelta(0):
        return CheckpointHealth(False, f"fewer than {MIN_WRITES} checkpoint writes seen: no interval yet", age)
    limit = interval * STALE_FACTOR
    if training_since is None or now - training_since < limit:
        return CheckpointHealth(False, "the job has not trained long enough since it (re)started", age, interval)
    if age <= limit:
        return CheckpointHealth(False, f"newest checkpoint {format_duration(age)} old", age, interval)
    why = (
        f"the newest checkpoint in {state.s3_uri} is {format_duration(age)} old, while this job writes one every "
        f"{format_duration(interval)} (more than {STALE_FACTOR:g} intervals): its checkpoints have stopped reaching "
        "S3 while it trains on. At its next failure it loses everything since then"
    )
    return CheckpointHealth(True, why, age, interval)


def redo_sentence(state: CheckpointState, now: datetime) -> str:
    """Before a relaunch: how much work it will redo, when the newest checkpoint is much older than the
    job's interval ('' otherwise)."""
    interval = checkpoint_interval(state)
    if interval is None or state.newest_object_time is None or interval <= timedelta(0):
        return ""
    age = now - state.newest_object_time
    if age <= interval * REDO_FACTOR:
        return ""
    return (
        f"The newest checkpoint is {format_duration(age)} old, while this job writes one every "
        f"{format_duration(interval)}: the relaunch redoes about {format_duration(age)} of training."
    )


def checked_now(job_name: str, minute: int) -> bool:
    """Whether the prober checks this job's checkpoints in this minute of the hour: each job once every
    CHECK_EVERY_MINUTES, the jobs spread over the minutes by a hash of their names."""
    return zlib.crc32(job_name.encode()) % CHECK_EVERY_MINUTES == minute % CHECK_EVERY_MINUTES


@dataclass(frozen=True)
class LineageAdvice:
    """The Young/Daly advice for a lineage (None: none, and `why`), with the figures it comes from."""

    advice: CheckpointAdvice | None
    why: str
    figures: dict[str, float | int]

    def sentence(self) -> str:
        return describe_advice(self.advice) if self.advice else ""


def advise_lineage(job: TrainingJob, failures: int, hours: float, checkpoints: CheckpointState) -> LineageAdvice:
    """How often the lineage should checkpoint: `failures` in `hours` of its running, its interval and the
    write time S3 shows (domain/checkpoint_advice.py)."""
    interval = checkpoint_interval(checkpoints)
    if not checkpoints.configured or interval is None:
        why = "the job has no CheckpointConfig" if not checkpoints.configured else "fewer than 3 checkpoint writes seen"
        return LineageAdvice(None, why, {})
    cost = checkpoint_write_time(checkpoints)
    figures: dict[str, float | int] = {
        "failures": failures,
        "hours_observed": round(max(hours, 0.0), 2),
        "current_interval_minutes": round(interval.total_seconds() / 60, 1),
        "checkpoint_write_minutes": round(cost.total_seconds() / 60, 1),
    }
    kind, count = instances_of(job.description.get("ResourceConfig"))
    gpus = max(count, 1) * (gpus_per_host(kind) or 1)
    advice = advise(failures=failures, hours_observed=hours, current_interval=interval, checkpoint_cost=cost, gpus=gpus)
    if advice is None:
        return LineageAdvice(
            None, "no failure yet" if not failures else "the current interval is close to the best", figures
        )
    return LineageAdvice(advice, "", figures)
