"""A reporting job's pace: the seconds per step of its advancing step lines, against its own baseline (docs/pace.md).

In synchronous training one slow host slows every rank, and the job keeps logging, so no stall rule fires. Its step
lines show it: the same steps take longer. Folded in one advancing step at a time (progress_watch.py decides what
advances), in the order of the lines' own timestamps:
- an interval's seconds per step are its length over the steps it advanced (a loop that prints every 10th step);
  an interval that held an announced phase is no step's time;
- the first WARMUP_INTERVALS after the job (re)starts, or after what a step holds changes (its batch size, as the
  lines print it), are warm-up (a compile, caches, a new shape), and the BASELINE_INTERVALS after them are the
  baseline: their median. A restart or a change of batch learns it again, never across them;
- past the baseline, the job is slow while the median of its newest RECENT_INTERVALS is past the ratio it must
  pass (`required_ratio`: the slowdown factor, or more for a job whose steps are noisy by nature), and then while it
  stays past half of it; slow since the first of the slow intervals that carried the median past it. A slowdown
  held for the slowdown minutes is a finding (`judge_pace`).
What the pace cannot say: which host is slow (every rank waits for the slowest, and rank 0 writes the lines), nor a
slowdown before its baseline is learned, nor one that was already there when it was.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from trainguard.domain.log_rhythm import epoch_ms, from_epoch_ms
from trainguard.domain.stored_values import stored_count, stored_list

WARMUP_INTERVALS = 5
BASELINE_INTERVALS = 20  # enough to read a noisy job's spread, not only its median
RECENT_INTERVALS = 5
# How far the median of RECENT_INTERVALS noisy step times strays from the job's own median by chance: NOISE_Z of its
# standard errors (the median of n samples has sqrt(pi/2) / sqrt(n) of the samples' spread, MEDIAN_EFFICIENCY), the
# spread read robustly from the baseline (the median absolute deviation of the logarithms, over MAD_TO_SIGMA).
NOISE_Z = 3.0
MEDIAN_EFFICIENCY = math.sqrt(math.pi / 2)
MAD_TO_SIGMA = 0.6745
MAX_LOG_RATIO = math.log(1000.0)  # a job noisier than this is never read as slow, and the ratio stays finite


@dataclass(frozen=True)
class PaceState:
    """What the job's step lines have said of its pace since it (re)started or changed its batch."""

    batch: int | None = None  # what a step holds, as the lines print it (None: they do not say)
    seen: int = 0  # step intervals since the (re)start or the change of batch, the warm-up's included
    baseline: tuple[float, ...] = ()  # seconds per step of the baseline's intervals
    recent: tuple[tuple[datetime, float], ...] = ()  # (the interval's start, seconds per step), the newest
    slow_since: datetime | None = None  # the start of the slowdown the newest medians show (None: not slow)
    newest: datetime | None = None  # the end of the newest interval

    @property
    def baseline_seconds(self) -> float | None:
        """The baseline's seconds per step, once learned."""
        return statistics.median(self.baseline) if len(self.baseline) == BASELINE_INTERVALS else None

    @property
    def recent_seconds(self) -> float | None:
        """The median seconds per step of the newest RECENT_INTERVALS, once the baseline is learned."""
        if self.baseline_seconds is None or len(self.recent) < RECENT_INTERVALS:
            return None
        return statistics.median(seconds for _, seconds in self.recent)

    def to_json(self) -> dict[str, Any]:
        return {
            "batch": self.batch,
            "seen": self.seen,
            "base": [round(s, 4) for s in self.baseline],
            "recent": [[epoch_ms(at), round(s, 4)] for at, s in self.recent],
            "slow_ms": epoch_ms(self.slow_since),
            "newest_ms": epoch_ms(self.newest),
        }

    @classmethod
    def from_json(cls, data: object) -> PaceState:
        """A state from its stored form; an empty one for anything that does not read as one."""
        if not isinstance(data, Mapping):
            return cls()
        baseline = [s for s in stored_list(data.get("base")) if _positive(s)]
        recent = [(from_epoch_ms(p[0]), p[1]) for p in stored_list(data.get("recent")) if _pair(p)]
        return cls(
            batch=data["batch"] if stored_count(data.get("batch")) else None,
            seen=data["seen"] if stored_count(data.get("seen")) else 0,
            baseline=tuple(float(s) for s in baseline[:BASELINE_INTERVALS]),
            recent=tuple((at, float(s)) for at, s in recent if at is not None)[-RECENT_INTERVALS:],
            slow_since=from_epoch_ms(data.get("slow_ms")),
            newest=from_epoch_ms(data.get("newest_ms")),
        )


def restarted(batch: int | None = None) -> PaceState:
    """The pace of a job that (re)started, or changed what a step holds: nothing learned."""
    return PaceState(batch=batch)


def with_interval(state: PaceState, began: datetime, ended: datetime, steps: int, factor: float) -> PaceState:
    """`state` with one advancing interval (from `began` to `ended`, `steps` steps) folded in; `factor`: the
    slowdown the job's settings read as one (ProgressSettings.slowdown_factor)."""
    seconds = (ended - began).total_seconds()
    if steps <= 0 or seconds <= 0:
        return state
    state = replace(state, seen=state.seen + 1, newest=ended)
    if state.seen <= WARMUP_INTERVALS:
        return state
    if len(state.baseline) < BASELINE_INTERVALS:
        return replace(state, baseline=(*state.baseline, seconds / steps))
    state = replace(state, recent=(*state.recent, (began, seconds / steps))[-RECENT_INTERVALS:])
    return replace(state, slow_since=_slow_since(state, factor))


def _slow_since(state: PaceState, factor: float) -> datetime | None:
    """When the slowdown the newest median shows began (None: the job is not slow). A slowdown begins when the median
    passes the required ratio, at the start of the first slow interval among the newest, and lasts while the median
    stays past half of it (1.2 times for 1.4): a noisy job's median that dips once does not end it."""
    base, median = state.baseline_seconds, state.recent_seconds
    if base is None or median is None:
        return None
    required = required_ratio(state.baseline, factor)
    if state.slow_since is not None and median >= (1 + required) / 2 * base:
        return state.slow_since
    if median < required * base:
        return None
    return min(began for began, seconds in state.recent if seconds >= required * base)


def noise_ratio(baseline: tuple[float, ...]) -> float:
    """The ratio the median of RECENT_INTERVALS step times passes by chance, NOISE_Z standard errors above the
    baseline's median (1.0 for a steady job)."""
    if len(baseline) < 2 or min(baseline) <= 0:
        return 1.0
    logs = [math.log(s) for s in baseline]
    centre = statistics.median(logs)
    sigma = statistics.median(abs(v - centre) for v in logs) / MAD_TO_SIGMA
    return math.exp(min(MAX_LOG_RATIO, NOISE_Z * MEDIAN_EFFICIENCY * sigma / math.sqrt(RECENT_INTERVALS)))


def required_ratio(baseline: tuple[float, ...], factor: float = 1.0) -> float:
    """The slowdown a job's recent median must pass: the factor, or its own noise's ratio if larger."""
    return max(factor, noise_ratio(baseline))


def slow_for(state: PaceState) -> timedelta:
    """How long the job's lines have shown it slow (zero when they do not)."""
    if state.slow_since is None or state.newest is None:
        return timedelta(0)
    return state.newest - state.slow_since


def _positive(value: object) -> bool:
    """A stored step time: at least the 4 decimals it is stored with, at most 10**9 s (anything else is not one)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and 1e-4 <= value < 10**9


def _pair(value: object) -> bool:
    return isinstance(value, list) and len(value) == 2 and _positive(value[1])
