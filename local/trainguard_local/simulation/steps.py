"""How long each of a trace job's steps takes (issue 28): one step per step line, every `every_seconds` of work at
the job's first batch size; a job noisy by nature varies each step by a lognormal factor, and a job that changes its
batch size on purpose (Megatron-LM's `--rampup-batch-size`, a curriculum) doubles it at a step, its steps taking
`batch_change_ratio` times as long from then on, its lines saying the new size (reporting.py). A degraded host slows
a launch, not the job: activity.py stretches the launch's clock.

A plan with neither noise nor a change is exact: step k ends k x `every_seconds` into the work, as before issue 28.
Which jobs are noisy or change their batch size, and by how much, are assumptions (no public statistics exist): a
loop whose batches vary in length (sequences not packed) or whose experts' load varies from step to step varies its
step time; a line per step, as here, varies most.
"""

from __future__ import annotations

import bisect
import math
import random
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class StepPlan:
    every_seconds: float
    noise_sigma: float = 0.0  # each step's time x exp(sigma z - sigma^2 / 2), z standard normal: its mean stays 1
    batch: int = 0  # the batch size its lines print (0: they print none)
    batch_change_step: int | None = None  # the first step at twice the batch size
    batch_change_ratio: float = 1.0  # its steps' time from then on, over the time before
    noise_seed: str = ""  # the noise's own stream: the same steps in every launch and every strategy

    @property
    def exact(self) -> bool:
        return self.noise_sigma == 0.0 and self.batch_change_step is None

    def batch_at(self, step: int) -> int:
        changed = self.batch_change_step is not None and step >= self.batch_change_step
        return self.batch * 2 if changed else self.batch

    def seconds_of(self, step: int) -> float:
        """The step's own time: from the end of the step before to its end."""
        ratio = (
            self.batch_change_ratio if self.batch_change_step is not None and step >= self.batch_change_step else 1.0
        )
        return self.every_seconds * ratio * (_table_of(self).noise(step) if self.noise_sigma else 1.0)

    def ends_at(self, step: int) -> float:
        """Seconds of work from the job's start to the end of `step` (step 0 ends at 0)."""
        if self.exact:
            return step * self.every_seconds
        return _table_of(self).ends_at(step)

    def step_at(self, work_seconds: float) -> int:
        """The newest step ended by `work_seconds` of work."""
        if self.exact:
            return math.floor(work_seconds / self.every_seconds + 1e-6)
        return _table_of(self).step_at(work_seconds)


NOISY_SHARE = 0.2  # of the jobs, those whose step time varies by nature
NOISE_SIGMAS = (0.1, 0.4)  # uniform: the sigma of the logarithm of a step's time
BATCH_CHANGE_SHARE = 0.3  # of the jobs whose lines print their batch size, those that double it during the run
BATCH_CHANGE_SPAN = (0.1, 0.6)  # at this share of the work, uniform
BATCH_CHANGE_RATIOS = (1.6, 2.0)  # a step at twice the batch size takes this much longer, uniform


def draw_step_plan(rng: random.Random, every_seconds: float, batch: int, work_hours: float, seed: str) -> StepPlan:
    """One job's plan: noisy by nature or not, and, if its lines print a batch size (`batch`), a planned change."""
    sigma = round(rng.uniform(*NOISE_SIGMAS), 3) if rng.random() < NOISY_SHARE else 0.0
    change, ratio = None, 1.0
    if batch and rng.random() < BATCH_CHANGE_SHARE:
        change = max(1, round(rng.uniform(*BATCH_CHANGE_SPAN) * work_hours * 3600 / every_seconds))
        ratio = round(rng.uniform(*BATCH_CHANGE_RATIOS), 3)
    return StepPlan(every_seconds, sigma, batch, change, ratio, seed)


@lru_cache(maxsize=4096)  # a fleet run's jobs, each with one plan
def _table_of(plan: StepPlan) -> _StepTable:
    return _StepTable(plan)


class _StepTable:
    """A plan's steps' end times, drawn as far as asked (a job of 48 hours at 5 s a step: 35,000 floats)."""

    def __init__(self, plan: StepPlan) -> None:
        self.plan = plan
        self._random = random.Random(f"{plan.noise_seed}/steps")
        self._noise: list[float] = [1.0]  # step 0 takes no time
        self._ends: list[float] = [0.0]

    def noise(self, step: int) -> float:
        self._draw_to(step)
        return self._noise[step]

    def ends_at(self, step: int) -> float:
        self._draw_to(step)
        return self._ends[step]

    def step_at(self, work_seconds: float) -> int:
        while self._ends[-1] <= work_seconds + 1e-6:
            self._draw_to(len(self._ends) * 2)
        return bisect.bisect_right(self._ends, work_seconds + 1e-6) - 1

    def _draw_to(self, step: int) -> None:
        sigma = self.plan.noise_sigma
        while len(self._noise) <= step:
            self._noise.append(math.exp(sigma * self._random.gauss(0.0, 1.0) - sigma * sigma / 2) if sigma else 1.0)
            self._ends.append(self._ends[-1] + self.plan.seconds_of(len(self._ends)))
