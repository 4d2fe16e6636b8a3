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
  pass (`required_ratio`: the slowdown factor, or more for a job whose steps are noisy by nature, its spread read
  from the newest SPREAD_INTERVALS it was not slow in, the baseline's first: 20 alone can read a noisy job as
  steady by chance, a third of the time 25% or more below its spread), and then while it
  stays past half of it; slow since the first of the slow intervals that carried the median past it. A slowdown
  held for the slowdown minutes is a finding (`judge_pace`): minutes of slow steps, the slow intervals' own time from
  its first on; a phase among them (no step's time) and an interval at the usual pace add nothing, so a noisy job's
  chance slow median before a long evaluation does not become a finding by the evaluation's length.
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
SPREAD_INTERVALS = 30
# How far the median of RECENT_INTERVALS noisy step times strays from the job's own median by chance: NOISE_Z of its
# standard errors (the median of n samples has sqrt(pi/2) / sqrt(n) of the samples' spread, MEDIAN_EFFICIENCY), the
# spread read robustly from its intervals (the median absolute deviation of the logarithms, over MAD_TO_SIGMA). Four,
# not three: a job asks the question at every step, a thousand times in six hours at 20 s a step, and 3 standard
# errors are passed by chance once in 740 medians (4: once in 31,600). Measured on the simulator's noisy jobs
# (docs/pace.md): on 20 traces of 200 jobs the rules' audit makes 2 false findings with 4 and 6 with 3.
NOISE_Z = 4.0
MEDIAN_EFFICIENCY = math.sqrt(math.pi / 2)
MAD_TO_SIGMA = 0.6745
MAX_LOG_RATIO = math.log(1000.0)  # a job noisier than this is never read as slow, and the ratio stays finite


@dataclass(frozen=True)
class PaceState:
    """What the job's step lines have said of its pace since it (re)started or changed its batch."""

    batch: int | None = None  # what a step holds, as the lines print it (None: they do not say)
    seen: int = 0  # step intervals since the (re)start or the change of batch, the warm-up's included
    # seconds per step of the newest intervals it was not slow in, the baseline's first (its 20 are learned from them)
    spread: tuple[float, ...] = ()
    base_seconds: float | None = None  # the baseline's median, once learned
    # (the interval's start, seconds per step, its seconds), the newest
    recent: tuple[tuple[datetime, float, float], ...] = ()
    slow_since: datetime | None = None  # the start of the slowdown the newest medians show (None: not slow)
    slow_seconds: float = 0.0  # the slow intervals' own seconds since then
    newest: datetime | None = None  # the end of the newest interval

    @property
    def baseline_seconds(self) -> float | None:
        """The baseline's seconds per step, once learned."""
        return self.base_seconds

    @property
    def recent_seconds(self) -> float | None:
        """The median seconds per step of the newest RECENT_INTERVALS, once the baseline is learned."""
        if self.baseline_seconds is None or len(self.recent) < RECENT_INTERVALS:
            return None
        return statistics.median(seconds for _, seconds, _ in self.recent)

    def to_json(self) -> dict[str, Any]:
        return {
            "batch": self.batch,
            "seen": self.seen,
            "base_s": None if self.base_seconds is None else round(self.base_seconds, 4),
            # thousandths of the baseline once it is learned, a few digits each (the state stays under a kilobyte)
            "spread": [round(s, 4) for s in self.spread]
            if self.base_seconds is None
            else [round(1000 * s / self.base_seconds) for s in self.spread],
            "recent": [[epoch_ms(at), round(s, 4), round(length, 3)] for at, s, length in self.recent],
            "slow_ms": epoch_ms(self.slow_since),
            "slow_s": round(self.slow_seconds, 3),
            "newest_ms": epoch_ms(self.newest),
        }

    @classmethod
    def from_json(cls, data: object) -> PaceState:
        """A state from its stored form; an empty one for anything that does not read as one."""
        if not isinstance(data, Mapping):
            return cls()
        # a state stored before the spread was keeps its baseline's intervals as "base"
        spread = [s for s in stored_list(data.get("spread")) or stored_list(data.get("base")) if _positive(s)]
        base = _stored_seconds(data.get("base_s"))
        if base is not None and "spread" in data:
            spread = [s * base / 1000 for s in spread]  # stored in thousandths of it
        elif len(spread) >= BASELINE_INTERVALS:
            base = statistics.median(spread[:BASELINE_INTERVALS])  # learned before it was stored on its own
        # an interval stored before its length was (two values) counts its seconds per step as its length
        recent = [(from_epoch_ms(p[0]), p[1], p[-1]) for p in stored_list(data.get("recent")) if _stored_interval(p)]
        return cls(
            batch=data["batch"] if stored_count(data.get("batch")) else None,
            seen=data["seen"] if stored_count(data.get("seen")) else 0,
            spread=tuple(float(s) for s in spread[-SPREAD_INTERVALS:]),
            base_seconds=base,
            recent=tuple((at, float(s), float(n)) for at, s, n in recent if at is not None)[-RECENT_INTERVALS:],
            slow_since=from_epoch_ms(data.get("slow_ms")),
            slow_seconds=_stored_seconds(data.get("slow_s")) or 0.0,
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
    per_step = seconds / steps
    if state.base_seconds is None:
        spread = (*state.spread, per_step)
        learned = statistics.median(spread) if len(spread) == BASELINE_INTERVALS else None
        return replace(state, spread=spread, base_seconds=learned)
    state = replace(state, recent=(*state.recent, (began, per_step, seconds))[-RECENT_INTERVALS:])
    since = _slow_since(state, factor)
    if since is None:
        spread = (*state.spread, per_step)[-SPREAD_INTERVALS:]
        return replace(state, slow_since=None, slow_seconds=0.0, spread=spread)
    slow = _slow_enough(state, factor)
    if since == state.slow_since:
        return replace(state, slow_seconds=state.slow_seconds + (seconds if per_step >= slow else 0.0))
    held = sum(length for at, each, length in state.recent if at >= since and each >= slow)
    return replace(state, slow_since=since, slow_seconds=held)


def _slow_since(state: PaceState, factor: float) -> datetime | None:
    """When the slowdown the newest median shows began (None: the job is not slow). A slowdown begins when the median
    passes the required ratio, at the start of the first slow interval among the newest, and lasts while the median
    stays past half of it (1.2 times for 1.4): a noisy job's median that dips once does not end it."""
    base, median = state.baseline_seconds, state.recent_seconds
    if base is None or median is None:
        return None
    if state.slow_since is not None and median >= _slow_enough(state, factor):
        return state.slow_since
    required = required_ratio(state.spread, factor) * base
    if median < required:
        return None
    return min(began for began, seconds, _ in state.recent if seconds >= required)


def _slow_enough(state: PaceState, factor: float) -> float:
    """The seconds per step that keep a slowdown going, half way from the baseline to the required ratio: a slow
    interval's own time counts towards the slowdown minutes, another's (a quick step, a long gap of many steps at the
    usual pace) does not."""
    base = state.baseline_seconds or 0.0
    return (1 + required_ratio(state.spread, factor)) / 2 * base


def noise_ratio(spread: tuple[float, ...]) -> float:
    """The ratio the median of RECENT_INTERVALS step times passes by chance, NOISE_Z standard errors above the
    job's own median, its spread read from `spread`'s step times (1.0 for a steady job)."""
    if len(spread) < 2 or min(spread) <= 0:
        return 1.0
    logs = [math.log(s) for s in spread]
    centre = statistics.median(logs)
    sigma = statistics.median(abs(v - centre) for v in logs) / MAD_TO_SIGMA
    return math.exp(min(MAX_LOG_RATIO, NOISE_Z * MEDIAN_EFFICIENCY * sigma / math.sqrt(RECENT_INTERVALS)))


def required_ratio(spread: tuple[float, ...], factor: float = 1.0) -> float:
    """The slowdown a job's recent median must pass: the factor, or its own noise's ratio if larger."""
    return max(factor, noise_ratio(spread))


def slow_for(state: PaceState) -> timedelta:
    """How long the job's lines have shown it slow: its slow intervals' own time (zero when they do not)."""
    if state.slow_since is None:
        return timedelta(0)
    return timedelta(seconds=state.slow_seconds)


def _stored_seconds(value: object) -> float | None:
    """A stored step time: at least the 4 decimals it is stored with, at most 10**9 s (None: anything else)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and 1e-4 <= value < 10**9:
        return float(value)
    return None


def _positive(value: object) -> bool:
    return _stored_seconds(value) is not None


def _stored_interval(value: object) -> bool:
    return isinstance(value, list) and len(value) in (2, 3) and all(_positive(v) for v in value[1:])
