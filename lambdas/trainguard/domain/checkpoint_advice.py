"""How often a job should checkpoint, from how often its lineage fails and what a checkpoint costs.

Each checkpoint costs its write time C, and each failure loses the work since the last checkpoint, on
average half an interval. The interval that minimises the two together is Young's first-order
T = sqrt(2 C M), with M the mean time between failures (J. W. Young, "A first order approximation to the
optimum checkpoint interval", Communications of the ACM 17(9):530-531, 1974), and Daly's higher-order
estimate T = sqrt(2 C M) [1 + (1/3) sqrt(C / 2M) + (1/9) (C / 2M)] - C for C < 2M, else M (J. T. Daly,
"A higher order estimate of the optimum checkpoint interval for restart dumps", Future Generation
Computer Systems 22(3):303-312, 2006, eq. 37), which is used here.

Issue 14 wires this into `trainguard history` and the relaunch notices; this module is the arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta

HOURS_PER_WEEK = 168.0
# Advice is given only when it changes something: the current interval is this far from the best one.
WORTH_SAYING = 1.5


def optimal_interval(checkpoint_cost: timedelta, mean_time_between_failures: timedelta) -> timedelta:
    """Daly's higher-order optimum interval between the starts of two checkpoints."""
    c = checkpoint_cost.total_seconds()
    m = mean_time_between_failures.total_seconds()
    if c <= 0 or m <= 0:
        raise ValueError("the checkpoint cost and the mean time between failures must be positive")
    if c >= 2 * m:
        return mean_time_between_failures
    ratio = c / (2 * m)
    return timedelta(seconds=math.sqrt(2 * c * m) * (1 + math.sqrt(ratio) / 3 + ratio / 9) - c)


def waste_fraction(interval: timedelta, checkpoint_cost: timedelta, mean_time_between_failures: timedelta) -> float:
    """The first-order share of a job's time lost to checkpoint writes and to redoing work after failures."""
    t, c = interval.total_seconds(), checkpoint_cost.total_seconds()
    m = mean_time_between_failures.total_seconds()
    if t <= 0 or m <= 0 or c < 0:
        raise ValueError("the interval and the mean time between failures must be positive, the cost not negative")
    return c / t + (t + c) / (2 * m)


@dataclass(frozen=True)
class CheckpointAdvice:
    """Checkpoint every `best` instead of every `current`, and save this many GPU-hours a week."""

    current: timedelta
    best: timedelta
    gpu_hours_saved_per_week: float


def describe_advice(advice: CheckpointAdvice) -> str:
    return (
        f"checkpointing every {_minutes(advice.best)} instead of every {_minutes(advice.current)} would save about "
        f"{advice.gpu_hours_saved_per_week:,.0f} GPU-hours a week at this lineage's failure rate (Young/Daly)"
    )


def advise(
    *,
    failures: int,
    hours_observed: float,
    current_interval: timedelta,
    checkpoint_cost: timedelta,
    gpus: int,
) -> CheckpointAdvice | None:
    """The advice for a lineage that failed `failures` times in `hours_observed` hours of running, or None when
    there is too little to go on (no failure yet) or the current interval is already close to the best."""
    if failures <= 0 or hours_observed <= 0 or gpus <= 0:
        return None
    mtbf = timedelta(hours=hours_observed / failures)
    best = optimal_interval(checkpoint_cost, mtbf)
    ratio = current_interval / best
    if 1 / WORTH_SAYING <= ratio <= WORTH_SAYING:
        return None
    saved = waste_fraction(current_interval, checkpoint_cost, mtbf) - waste_fraction(best, checkpoint_cost, mtbf)
    return CheckpointAdvice(current_interval, best, max(saved, 0.0) * gpus * HOURS_PER_WEEK)


def _minutes(duration: timedelta) -> str:
    minutes = duration.total_seconds() / 60
    return f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.1f} h"
