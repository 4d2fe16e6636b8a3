"""A job's log rhythm and the silence limit it gives (domain/log_rhythm.py): pure, by table."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from trainguard.domain.log_rhythm import (
    CAP_MINUTES,
    FLOOR_MINUTES,
    GAP_EDGES_SECONDS,
    LimitSource,
    LogRhythm,
    silence_limit,
)

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
GRACE_END = T0  # gaps are counted from here


def every(seconds: float, *, for_minutes: float, start: datetime = T0) -> list[datetime]:
    count = int(for_minutes * 60 // seconds) + 1
    return [start + timedelta(seconds=seconds * i) for i in range(count)]


def learned(lines: list[datetime], phase_lines: int = 0) -> LogRhythm:
    return LogRhythm().with_lines(None, lines, GRACE_END, phase_lines)


def test_gaps_go_into_log_spaced_buckets_and_the_longest_is_kept() -> None:
    rhythm = learned(
        [T0, T0 + timedelta(seconds=1), T0 + timedelta(seconds=41), T0 + timedelta(minutes=40, seconds=41)]
    )
    assert rhythm.gaps == 3
    assert rhythm.counts[0] == 1  # 1 s: under 2 s
    assert rhythm.counts[GAP_EDGES_SECONDS.index(60)] == 1  # 40 s: from 30 to 60 s
    assert rhythm.counts[GAP_EDGES_SECONDS.index(2700)] == 1  # 40 min: from 30 to 45 min
    assert rhythm.longest_seconds == 40 * 60
    assert rhythm.observed_minutes == pytest.approx(40 + 41 / 60)


def test_a_late_line_of_another_stream_adds_no_gap_and_a_gap_spans_deliveries() -> None:
    first = learned(every(10, for_minutes=1))
    newest = first.newest_line
    assert newest is not None
    # Another host's line from before the newest one: it fills a gap already counted.
    late = first.with_lines(newest, [newest - timedelta(seconds=5)], GRACE_END)
    assert late == first
    # The next delivery: its first gap is counted from the newest line recorded.
    later = first.with_lines(newest, [newest + timedelta(seconds=25)], GRACE_END)
    assert later.gaps == first.gaps + 1 and later.longest_seconds == 25


def test_gaps_count_from_the_end_of_the_startup_grace() -> None:
    """A 25-minute first load (grace 20 min) counts as 5 minutes; a gap wholly inside the grace not at all."""
    grace_end = T0 + timedelta(minutes=20)
    lines = [T0, T0 + timedelta(minutes=1), T0 + timedelta(minutes=25), T0 + timedelta(minutes=26)]
    rhythm = LogRhythm().with_lines(None, lines, grace_end)
    assert rhythm.gaps == 2 and rhythm.longest_seconds == 5 * 60
    assert rhythm.first_line == grace_end and rhythm.observed_minutes == pytest.approx(6)


def test_the_quantile_is_the_upper_edge_of_its_bucket_never_above_the_longest_gap() -> None:
    rhythm = learned(every(10, for_minutes=90))
    assert (
        rhythm.quantile_seconds(0.99) == 10.0
    )  # every gap is 10 s: the bucket [10, 20) says at most 20, the longest 10
    assert LogRhythm().quantile_seconds(0.99) == 0.0


@pytest.mark.parametrize(
    ("name", "lines", "phase_lines", "newest_line", "source", "minutes"),
    [
        # A chatty job (a line every 10 s for 90 min) that has announced a phase before: the floor.
        ("chatty, announces", every(10, for_minutes=90), 1, "step 500 loss 1.9", LimitSource.LEARNED, FLOOR_MINUTES),
        # The same job that never announced one: a silent evaluation would look like a hang, so it learns for 4 h.
        ("chatty, silent phases, 90 min", every(10, for_minutes=90), 0, "step 500", LimitSource.FIXED, 30),
        ("chatty, silent phases, 5 h", every(10, for_minutes=300), 0, "step 500", LimitSource.LEARNED, FLOOR_MINUTES),
        # A 4-minute checkpoint write in its history: 1.5 x 4 min.
        (
            "chatty with a checkpoint write",
            every(10, for_minutes=45) + every(10, for_minutes=45, start=T0 + timedelta(minutes=49)),
            1,
            "step 500 loss 1.9",
            LimitSource.LEARNED,
            6.0,
        ),
        # Chatty, but only 20 minutes seen: too little rhythm to go below the fixed threshold.
        ("chatty, new", every(10, for_minutes=20), 1, "step 10", LimitSource.FIXED, 30),
        # One line per 40-minute epoch, seen twice: raised to 3 x 40 min at once, before the learning period.
        ("slow epochs", every(2400, for_minutes=80), 0, "epoch 2 loss 1.1", LimitSource.RAISED, 120.0),
        # One line per 3-hour epoch: the cap.
        ("very slow epochs", every(3 * 3600, for_minutes=18 * 60), 0, "epoch 6", LimitSource.RAISED, CAP_MINUTES),
        # A chatty job whose newest line announces an evaluation: the fixed threshold is its grace.
        ("evaluating", every(10, for_minutes=90), 1, "***** Running Evaluation *****", LimitSource.PHASE, 30),
        (
            "saving",
            every(10, for_minutes=90),
            1,
            "Saving model checkpoint to /opt/ml/checkpoints",
            LimitSource.PHASE,
            30,
        ),
    ],
)
def test_the_silence_limit(
    name: str, lines: list[datetime], phase_lines: int, newest_line: str, source: LimitSource, minutes: float
) -> None:
    limit = silence_limit(30, learned(lines, phase_lines), newest_line)
    assert (limit.source, limit.minutes) == (source, pytest.approx(minutes)), (name, limit.reason)
    assert limit.reason


def test_the_tag_wins_over_the_rhythm() -> None:
    limit = silence_limit(45, learned(every(10, for_minutes=90)), "step 1", tagged=True)
    assert (limit.source, limit.minutes) == (LimitSource.TAG, 45)


def test_a_rhythm_survives_its_stored_form_and_bad_stored_forms_read_as_none() -> None:
    rhythm = learned(every(10, for_minutes=30))
    assert LogRhythm.from_json(rhythm.to_json()) == rhythm
    for bad in (None, "x", {"counts": [1, 2]}, {"counts": ["a"] * (len(GAP_EDGES_SECONDS) + 1)}, {"counts": [-1] * 22}):
        assert LogRhythm.from_json(bad) == LogRhythm()  # type: ignore[arg-type]


def test_the_quantile_is_the_upper_edge_of_the_bucket_that_holds_it() -> None:
    """99 gaps of 25 s and one of 100 s: the 99th percentile lies in [20 s, 30 s) and reads as 30 s."""
    lines = every(25, for_minutes=99 * 25 / 60)
    lines.append(lines[-1] + timedelta(seconds=100))
    rhythm = learned(lines)
    assert rhythm.gaps == 100 and rhythm.longest_seconds == 100
    assert rhythm.quantile_seconds(0.99) == 30.0
    on_an_edge = learned([T0, T0 + timedelta(seconds=30)])  # a gap on an edge goes in the bucket it opens
    assert on_an_edge.counts[GAP_EDGES_SECONDS.index(60)] == 1


def test_the_verdict_looks_back_over_the_longest_of_the_thresholds_and_the_jobs_own_limit() -> None:
    """The stall verdict reads the newest line over this window (workflows/stall_alarm.py); the fleet's world writes
    the newest delivered line for the same one. A rhythm of 40-minute steps raises the limit past the thresholds."""
    from trainguard.domain.stalls import StallThresholds
    from trainguard.domain.watched_job import WatchedJob, verdict_look_back

    thresholds = StallThresholds(stall_minutes=30, gpu_idle_minutes=20)
    assert verdict_look_back(thresholds, None) == timedelta(minutes=35)
    watched = WatchedJob("job-a", "ml.p4d.24xlarge", 2, thresholds, training_since=T0)
    assert verdict_look_back(thresholds, watched) == timedelta(minutes=35)  # nothing learned: the fixed 30
    slow = replace(watched, rhythm=learned(every(40 * 60, for_minutes=200)))
    limit = slow.silence_limit().minutes
    assert limit > 30 and verdict_look_back(thresholds, slow) == timedelta(minutes=limit + 5)
