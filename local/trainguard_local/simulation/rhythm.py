"""Each trace job's log rhythm: how often it logs, when it is legitimately silent, and what it logs first.

A job logs a line every `log_every_seconds` while it trains. It is silent while it writes each checkpoint
(a synchronous save) and, after every `eval_every_checkpoints`-th one, while it evaluates; a job that
`announces_phases` logs a line just before ("Saving model checkpoint ..."); every job logs a line as it
starts training, the step just before a silence and one when it ends (an evaluation's result), so that a
silence lasts what the trace says. Silences and lines run on the
job's progress, as its checkpoints do (model.py): a phase at the k-th checkpoint starts when the job's
progress reaches k x its checkpoint interval, and takes no progress of its own (the trace's work hours
hold it). Every number is an assumption, stated below: no public statistics of training jobs' log
cadence exist.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

# A line every few seconds (a line per step or per few steps: most fine-tuning and pretraining loops), every
# few minutes (a line per hundreds of steps), or once per epoch (small data sets with long epochs).
CADENCES_SECONDS: tuple[tuple[float, float], ...] = (  # (seconds between lines, weight)
    (5.0, 0.15), (10.0, 0.2), (20.0, 0.15), (30.0, 0.1),  # under a minute
    (60.0, 0.1), (120.0, 0.08), (300.0, 0.07),  # minutes
    (900.0, 0.05), (1500.0, 0.05), (2400.0, 0.05),  # one line per epoch of 15-40 minutes
)  # fmt: skip
CHECKPOINT_WRITE_MINUTES = (0.5, 4.0)  # uniform: a synchronous save of a large model to local disk or S3
EVAL_SHARE = 0.6  # of jobs, those that evaluate during training
EVAL_EVERY_CHECKPOINTS = (1, 2, 4)  # uniform choice
EVAL_MINUTES = (3.0, 20.0)  # uniform, silent (a loop that prints only its result)
PHASE_SHARE_MAX = 0.5  # a phase takes at most half the time between two checkpoints (it is cut to that)
ANNOUNCE_SHARE = 0.5  # of jobs, those that log a line before a save or an evaluation
# The classes the report groups hang detection by, on the job's own median log gap (its cadence), in seconds.
CADENCE_CLASSES: tuple[tuple[str, float, float], ...] = (
    ("under 1 min", 0.0, 60.0),
    ("1 to 10 min", 60.0, 600.0),
    ("10 min and over", 600.0, math.inf),
)
SAVE_LINE = "Saving model checkpoint to /opt/ml/checkpoints"
EVAL_LINE = "***** Running Evaluation *****"


@dataclass(frozen=True)
class JobRhythm:
    log_every_seconds: float = 60.0
    checkpoint_write_minutes: float = 0.0
    eval_every_checkpoints: int = 0  # 0: never evaluates
    eval_minutes: float = 0.0
    announces_phases: bool = False

    @property
    def cadence_class(self) -> str:
        return next(name for name, low, high in CADENCE_CLASSES if low <= self.log_every_seconds < high)


@dataclass(frozen=True)
class Phase:
    """A legitimately silent phase: from `at_progress` (hours of work), `minutes` long, after `line`."""

    at_progress: float
    minutes: float
    line: str  # the line logged just before ('' for a job that does not announce its phases)


def draw_rhythm(rng: random.Random) -> JobRhythm:
    cadences, weights = zip(*CADENCES_SECONDS, strict=True)
    every = rng.choices(cadences, weights=weights)[0]
    write = round(rng.uniform(*CHECKPOINT_WRITE_MINUTES), 2)
    evaluates = rng.random() < EVAL_SHARE
    return JobRhythm(
        log_every_seconds=every,
        checkpoint_write_minutes=write,
        eval_every_checkpoints=rng.choice(EVAL_EVERY_CHECKPOINTS) if evaluates else 0,
        eval_minutes=round(rng.uniform(*EVAL_MINUTES), 2) if evaluates else 0.0,
        announces_phases=rng.random() < ANNOUNCE_SHARE,
    )


def phases(rhythm: JobRhythm, checkpoint_every_minutes: float, after: float, until: float) -> list[Phase]:
    """The job's silent phases that start after progress `after` and at or before `until` (hours of work)."""
    every = checkpoint_every_minutes / 60
    found = []
    k = math.floor(after / every + 1e-9) + 1
    while k * every <= until + 1e-9:
        evaluates = rhythm.eval_every_checkpoints and k % rhythm.eval_every_checkpoints == 0
        minutes = rhythm.checkpoint_write_minutes + (rhythm.eval_minutes if evaluates else 0.0)
        minutes = min(minutes, PHASE_SHARE_MAX * checkpoint_every_minutes)
        line = (
            (EVAL_LINE if evaluates and not rhythm.checkpoint_write_minutes else SAVE_LINE)
            if rhythm.announces_phases
            else ""
        )
        if minutes > 0:
            found.append(Phase(k * every, minutes, line))
        k += 1
    return found


def line_offsets(rhythm: JobRhythm, after_seconds: float, until_seconds: float) -> list[float]:
    """The seconds since training started at which the job logs, after `after_seconds` and up to
    `until_seconds`, silences left aside (the caller removes them)."""
    every = rhythm.log_every_seconds
    first = math.floor(after_seconds / every + 1e-9) + 1
    last = math.floor(until_seconds / every + 1e-9)
    return [k * every for k in range(first, last + 1)]
