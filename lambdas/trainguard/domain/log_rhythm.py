"""A job's own log rhythm, and the silence that is a stall for it.

The fixed threshold (30 min of log silence) is late for a job that logs every few seconds and wrong for
one that logs once per 40-minute epoch. So trainguard learns each job's rhythm from what it already
receives (the log subscription's deliveries, no extra read API) and judges the silence by it.

The rhythm: the gaps between the job's log lines, newest line to newest line across all its streams,
counted in log-spaced buckets (`GAP_EDGES_SECONDS`). A delivery holds one stream's lines; a line older
than the newest one recorded (another host's, delivered late) fills a gap already counted and adds none,
so with several hosts the gaps are at least as long as the merged stream's: the safe direction. Gaps are
counted from the end of the startup grace at the earliest, as the silence itself is (stalls.py): the
grace covers a first checkpoint load or a compile, and counting all of it would make every later limit
as long as the first load; the part after the grace counts, so that a slow job's first epoch already
raises its limit before its second.

The limit (`silence_limit`), in order:
1. The job's `stall-minutes` tag wins.
2. The newest line announces a phase that is often long and silent (an evaluation, a checkpoint save or
   load: `PHASE_LINE`): the phase gets the fixed threshold as its grace, or the learned limit if longer.
3. Too little rhythm yet: the fixed threshold, raised to the learned limit if the rhythm already shows
   gaps that make it unsafe. Raising needs no more evidence than one long gap; lowering needs the whole
   learning period: MIN_GAPS gaps and MIN_OBSERVED_MINUTES of logs for a job that has announced a phase
   before (its usual phases announce themselves), and SILENT_PHASES_OBSERVED_MINUTES for a job that never
   has: a silent evaluation looks like a hang until
   the job has been through one, so its rhythm must span the longest interval at which such a phase is
   assumed to recur (every few checkpoints, up to four hours).
4. Otherwise the learned limit: the longer of QUANTILE_FACTOR x the 99th-percentile gap and
   LONGEST_FACTOR x the longest gap seen, never below FLOOR_MINUTES (log delivery, the prober's
   minute and the alarm's one-minute period) and never above CAP_MINUTES.

A slow job (one line per epoch) thus gets a limit above the fixed threshold rather than a second
signal: its own gaps say how long it may be quiet. A limit below the fixed threshold is a quicker verdict,
not a jumpier one: a silence past it stops the job only if its GPUs are idle as well (stalls.py). A silence
longer than anything the job has shown, with busy GPUs, is a hung collective or a phase the job has not
shown before (a silent evaluation, a one-off pause), and nothing tells the two apart: that silence is
judged at the fixed threshold (`LimitSource.DEFERRED`).
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from trainguard.domain.checkpoints import format_duration

# Bucket i holds gaps in [GAP_EDGES_SECONDS[i-1], GAP_EDGES_SECONDS[i]); the last one, everything longer.
GAP_EDGES_SECONDS: tuple[int, ...] = (
    2, 5, 10, 20, 30, 60, 90, 120, 180, 300, 450, 600, 900, 1200, 1800, 2700, 3600, 5400, 7200, 10800, 14400,
)  # fmt: skip
QUANTILE = 0.99
QUANTILE_FACTOR = 3.0
LONGEST_FACTOR = 1.5
FLOOR_MINUTES = 5.0
CAP_MINUTES = 240.0
MIN_GAPS = 20
MIN_OBSERVED_MINUTES = 30.0
SILENT_PHASES_OBSERVED_MINUTES = 240.0  # assumption: a job's phases (evaluations) recur within 4 hours

# A line that announces a long, legitimately silent phase. Broad on purpose: a false match only gives the
# phase the fixed threshold, never a faster stop.
PHASE_LINE = re.compile(
    r"evaluat|validat|\beval\b|running (eval|valid|test)|\bsav(e|ing)\b|checkpoint|\bload(ing)?\b|\bupload",
    re.IGNORECASE,
)


class LimitSource(StrEnum):
    TAG = "tag"
    FIXED = "fixed"  # too little rhythm yet
    RAISED = "raised"  # too little rhythm to lower it, but enough to see that the fixed one is too short
    PHASE = "phase"  # the newest line announces a long phase
    LEARNED = "learned"
    DEFERRED = "deferred"  # past its learned limit with busy GPUs: this silence is judged at the fixed threshold


def lowered(limit: SilenceLimit, fixed_minutes: float) -> bool:
    """The limit is below the fixed threshold because of the job's rhythm: a stop at it needs idle GPUs too."""
    return limit.source is LimitSource.LEARNED and limit.minutes < fixed_minutes


@dataclass(frozen=True)
class LogRhythm:
    """The gaps between a job's log lines, in buckets, with the longest gap and the span observed."""

    counts: tuple[int, ...] = field(default=(0,) * (len(GAP_EDGES_SECONDS) + 1))
    longest_seconds: float = 0.0
    first_line: datetime | None = None  # the first line counted (after the startup grace)
    newest_line: datetime | None = None
    phase_lines: int = 0  # lines that announced a long phase (PHASE_LINE): the job announces its phases

    @property
    def gaps(self) -> int:
        return sum(self.counts)

    @property
    def observed_minutes(self) -> float:
        if self.first_line is None or self.newest_line is None:
            return 0.0
        return (self.newest_line - self.first_line).total_seconds() / 60

    def quantile_seconds(self, q: float) -> float:
        """The upper edge of the bucket that holds the q-quantile gap (an overestimate: the safe side);
        the longest gap seen for the open-ended last bucket; 0 with no gaps."""
        total = self.gaps
        if total == 0:
            return 0.0
        wanted, seen = math.ceil(q * total), 0
        for index, count in enumerate(self.counts):
            seen += count
            if seen >= wanted:
                edge = GAP_EDGES_SECONDS[index] if index < len(GAP_EDGES_SECONDS) else self.longest_seconds
                return float(min(edge, self.longest_seconds))  # no gap is longer than the longest seen
        return self.longest_seconds

    def with_lines(
        self, previous_newest: datetime | None, lines: Iterable[datetime], counted_from: datetime, phase_lines: int = 0
    ) -> LogRhythm:
        """This rhythm with a delivery's lines added. `previous_newest`: the newest line recorded before
        (any stream); `counted_from`: the end of the startup grace (a gap counts from there at the earliest)."""
        counts = list(self.counts)
        longest, first, newest = self.longest_seconds, self.first_line, previous_newest
        for moment in sorted(lines):
            if newest is not None and moment <= newest:
                continue
            start = None if newest is None else max(newest, counted_from)
            if start is not None and moment > start:
                gap = (moment - start).total_seconds()
                counts[bisect.bisect_right(GAP_EDGES_SECONDS, gap)] += 1
                longest = max(longest, gap)
                first = first or start
            newest = moment
        return replace(
            self,
            counts=tuple(counts),
            longest_seconds=longest,
            first_line=first,
            newest_line=newest,
            phase_lines=self.phase_lines + phase_lines,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "counts": list(self.counts),
            "longest_s": round(self.longest_seconds, 3),
            "first_ms": epoch_ms(self.first_line),
            "newest_ms": epoch_ms(self.newest_line),
            "phase_lines": self.phase_lines,
        }

    @classmethod
    def from_json(cls, data: object) -> LogRhythm:
        """A rhythm from its stored form; an empty one for anything that does not read as one."""
        if not isinstance(data, Mapping):
            return cls()
        counts = data.get("counts")
        if not isinstance(counts, list) or len(counts) != len(GAP_EDGES_SECONDS) + 1:
            return cls()
        if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts):
            return cls()
        longest = data.get("longest_s")
        return cls(
            counts=tuple(counts),
            longest_seconds=float(longest) if isinstance(longest, int | float) and longest >= 0 else 0.0,
            first_line=from_epoch_ms(data.get("first_ms")),
            newest_line=from_epoch_ms(data.get("newest_ms")),
            phase_lines=phases if isinstance(phases := data.get("phase_lines"), int) and phases >= 0 else 0,
        )


@dataclass(frozen=True)
class SilenceLimit:
    """How long this job may be silent before it is a stall, where that comes from, and why."""

    minutes: float
    source: LimitSource
    reason: str
    rhythm_minutes: float = 0.0  # what the rhythm alone says (0: no gaps yet)

    def describe(self) -> str:
        """The limit and where it comes from, without parentheses: a notification quotes it in its own."""
        return f"{self.minutes:g} min, {self.reason}"


def learned_minutes(rhythm: LogRhythm) -> float:
    """What the rhythm alone says, before the floor and the cap (0 with no gaps)."""
    if rhythm.gaps == 0:
        return 0.0
    return max(QUANTILE_FACTOR * rhythm.quantile_seconds(QUANTILE), LONGEST_FACTOR * rhythm.longest_seconds) / 60


def learning_minutes(rhythm: LogRhythm) -> float:
    """The minutes of logs the job must show before its limit may go below the fixed threshold."""
    return MIN_OBSERVED_MINUTES if rhythm.phase_lines else SILENT_PHASES_OBSERVED_MINUTES


def enough_rhythm(rhythm: LogRhythm) -> bool:
    return rhythm.gaps >= MIN_GAPS and rhythm.observed_minutes >= learning_minutes(rhythm)


def silence_limit(
    fixed_minutes: float, rhythm: LogRhythm, newest_line: str, *, tagged: bool = False, deferred: bool = False
) -> SilenceLimit:
    """The log silence that makes a stall for this job now (see the module's docstring for the order)."""
    if tagged:
        return SilenceLimit(fixed_minutes, LimitSource.TAG, "set by the job's stall-minutes tag")
    raw = learned_minutes(rhythm)
    learned = min(CAP_MINUTES, max(FLOOR_MINUTES, round(raw, 1)))
    rhythm_text = _rhythm_text(rhythm)
    if PHASE_LINE.search(newest_line or ""):
        minutes = max(fixed_minutes, learned if raw else 0.0)
        why = f"the grace of a long phase, which the newest log line announces: {newest_line.strip()[:60]!r}"
        return SilenceLimit(minutes, LimitSource.PHASE, why, raw)
    if not enough_rhythm(rhythm):
        if raw and learned > fixed_minutes:
            why = f"raised from the fixed {fixed_minutes:g} min by the job's own gaps between log lines: {rhythm_text}"
            return SilenceLimit(learned, LimitSource.RAISED, why, raw)
        why = (
            f"the fixed threshold: too little rhythm yet, {rhythm.gaps} gaps between log lines over "
            f"{rhythm.observed_minutes:.0f} min of logs, where {MIN_GAPS} gaps over {learning_minutes(rhythm):g} min "
            "are needed" + ("" if rhythm.phase_lines else " for a job that has announced no phase")
        )
        return SilenceLimit(fixed_minutes, LimitSource.FIXED, why, raw)
    if deferred and learned < fixed_minutes:
        why = (
            f"the fixed threshold, as the job was silent past its learned {learned:g} min with busy GPUs; its rhythm: "
            f"{rhythm_text}"
        )
        return SilenceLimit(fixed_minutes, LimitSource.DEFERRED, why, raw)
    bounds = {FLOOR_MINUTES: ", which is the floor", CAP_MINUTES: ", which is the cap"}.get(learned, "")
    return SilenceLimit(learned, LimitSource.LEARNED, f"learned from the job's rhythm: {rhythm_text}{bounds}", raw)


def _rhythm_text(rhythm: LogRhythm) -> str:
    def duration(seconds: float) -> str:
        return format_duration(timedelta(seconds=seconds))

    return (
        f"99% of its {rhythm.gaps} gaps were under {duration(rhythm.quantile_seconds(QUANTILE))}, the longest was "
        f"{duration(rhythm.longest_seconds)}, over {duration(rhythm.observed_minutes * 60)} of logs"
    )


def epoch_ms(moment: datetime | None) -> int | None:
    return None if moment is None else int(moment.timestamp() * 1000)


def from_epoch_ms(value: object) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    try:
        return datetime.fromtimestamp(value / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
