"""Print trainguard's progress contract from any training loop: no dependency, no AWS, standard library only.

    from trainguard_sdk import progress

    progress.start()                                   # trainguard:start
    for step in range(first_step, last_step + 1):
        loss = train_one_step()
        if step % 10 == 0:
            progress.step(step, loss=loss)             # trainguard:progress step=1200 loss=2.31
        if step % 500 == 0:
            with progress.phase("checkpoint", expect_seconds=600):   # trainguard:phase begin=checkpoint expect=600
                save_checkpoint()                      # trainguard:phase end=checkpoint (also when it raises)

Each call prints one line to standard output (or `file`) and flushes it, so the line reaches the job's log (and
trainguard's log subscription) as soon as it is printed, not when a buffer fills. Call `step` from the training
loop itself, never from a background thread: a thread that keeps printing while the loop is wedged would hide the
hang (docs/progress.md). The formats are the contract docs/progress.md defines; the reader is
lambdas/trainguard/domain/progress_lines.py, and tests/sdk/test_progress_helper.py feeds these lines to it.

A value the reader would not read (a negative or fractional step, a phase name with a space, an expectation longer
than a week) raises ValueError at the call, so the mistake shows on the first run instead of as silence.

`LearnedExpectation` says how long the next phase of a kind should take from the ones before it (twice the longest,
as examples/train.py announces its checkpoint writes); the callbacks for Hugging Face Trainer and Lightning
(trainguard_sdk.huggingface, trainguard_sdk.lightning) announce their saves and evaluations with it.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import SupportsFloat, TextIO

# The reader's bounds (lambdas/trainguard/domain/progress_lines.py and progress_reading.py), written again here so
# that this module imports nothing of trainguard; tests/sdk/test_progress_helper.py checks that they agree.
MAX_STEP = 10**15 - 1  # the reader's STEP: 1 to 15 digits
PHASE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
MAX_EXPECT_SECONDS = 7 * 24 * 3600
# A phase is announced as taking twice the longest of its kind so far: room for a slower disk or upload, and still
# far below trainguard's default allowance for a phase with no expectation (60 min). examples/train.py's
# CHECKPOINT_EXPECT_FACTOR is the same figure (that script imports nothing of trainguard).
EXPECT_FACTOR = 2.0


def start(*, file: TextIO | None = None) -> None:
    """Training starts; its first step follows. Print it once the checkpoint is loaded, before the first step."""
    _print("trainguard:start", file)


def step(number: int, loss: SupportsFloat | None = None, *, file: TextIO | None = None) -> None:
    """Step `number` is done, with its `loss` if given (a float, or anything float() takes: a 0-d tensor, a numpy
    scalar). NaN and infinities are printed as `nan`, `inf`, `-inf`, which the reader keeps as such."""
    if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number <= MAX_STEP:
        raise ValueError(f"step must be a whole number from 0 to {MAX_STEP}, not {number!r}")
    line = f"trainguard:progress step={number}"
    if loss is not None:
        line += f" loss={float(loss)!r}"  # repr: the shortest text that reads back as the same float
    _print(line, file)


@contextmanager
def phase(name: str, expect_seconds: float | None = None, *, file: TextIO | None = None) -> Iterator[None]:
    """A long phase (a checkpoint save, an evaluation) that prints no steps: its start, with the seconds it should
    take, when the block is entered, and its end when the block is left, normally or by an exception."""
    begin(name, expect_seconds, file=file)
    try:
        yield
    finally:
        end(name, file=file)


def begin(name: str, expect_seconds: float | None = None, *, file: TextIO | None = None) -> None:
    """The start of phase `name`; `expect_seconds`: how long it should take (None: trainguard's default allowance)."""
    line = f"trainguard:phase begin={_checked_name(name)}"
    if expect_seconds is not None:
        if not (math.isfinite(expect_seconds) and 0 <= expect_seconds <= MAX_EXPECT_SECONDS):
            raise ValueError(f"expect_seconds must be from 0 to {MAX_EXPECT_SECONDS} (a week), not {expect_seconds!r}")
        line += f" expect={_seconds(expect_seconds)}"
    _print(line, file)


def end(name: str, *, file: TextIO | None = None) -> None:
    """The end of phase `name`."""
    _print(f"trainguard:phase end={_checked_name(name)}", file)


def _checked_name(name: str) -> str:
    if not isinstance(name, str) or not PHASE_NAME.fullmatch(name):
        raise ValueError(f"a phase name is 1-64 letters, digits, '_', '.' or '-', not {name!r}")
    return name


def _seconds(value: float) -> str:
    """A whole number of seconds as one ("600"), else the float as repr prints it ("0.25")."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _print(line: str, file: TextIO | None) -> None:
    print(line, file=file if file is not None else sys.stdout, flush=True)


class LearnedExpectation:
    """How long the next phase of one kind (a checkpoint save, an evaluation) should take, in whole seconds, learned
    from the ones before it: EXPECT_FACTOR x the longest so far, at least 1 and at most a week. Before the first,
    nothing is measured: `first_seconds` (None: trainguard's default allowance for a phase with no expectation)."""

    def __init__(self, first_seconds: float | None = None) -> None:
        if first_seconds is not None and not (math.isfinite(first_seconds) and first_seconds >= 0):
            raise ValueError(f"first_seconds must be a number of seconds, not {first_seconds!r}")
        self.first_seconds = first_seconds
        self.longest: float | None = None

    def next_seconds(self) -> int | None:
        """The expectation to announce the next phase with."""
        if self.longest is None:
            if self.first_seconds is None:
                return None
            return min(MAX_EXPECT_SECONDS, max(1, math.ceil(self.first_seconds)))
        return min(MAX_EXPECT_SECONDS, max(1, math.ceil(EXPECT_FACTOR * self.longest)))

    def record(self, seconds: float) -> None:
        """A phase of this kind took `seconds`."""
        if math.isfinite(seconds) and seconds >= 0:
            self.longest = seconds if self.longest is None else max(self.longest, seconds)
