"""What trainguard's callbacks for a framework's trainer print, whatever the framework: the start marker, step lines
at a bounded rate, and each long phase (a checkpoint save, an evaluation) announced with the seconds it should take,
learned from the phases of its kind before it. Standard library only: the callbacks (trainguard_sdk.huggingface,
trainguard_sdk.lightning, trainguard_sdk.pytorch_lightning) translate their framework's hooks into these calls, and
every line is printed by trainguard_sdk.progress, the contract's one writer (docs/progress.md).

Only the process that should speak for the job calls this (rank 0, the framework's "global zero"), as
examples/train.py prints from rank 0 only: the other ranks' lines would repeat the same steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import SupportsFloat, TextIO

from trainguard_sdk import progress

CHECKPOINT = "checkpoint"
EVALUATION = "evaluation"  # Hugging Face Trainer's word
VALIDATION = "validation"  # Lightning's
# The first checkpoint save of a run has nothing measured before it: examples/train.py's default for the same case.
FIRST_CHECKPOINT_EXPECT_SECONDS = 600.0
# A step line at most every 30 s by default: a hang is read within the 5-minute floor of trainguard's step limit,
# and a job of 1-second steps prints 120 lines an hour, not 3,600 (each line is CloudWatch Logs ingestion).
EVERY_SECONDS = 30.0


class TrainingProgress:
    """The lines a trainer's callback prints, in the order the trainer's hooks call these methods."""

    def __init__(
        self,
        *,
        every_seconds: float = EVERY_SECONDS,
        first_checkpoint_expect_seconds: float | None = FIRST_CHECKPOINT_EXPECT_SECONDS,
        first_evaluation_expect_seconds: float | None = None,
        file: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not every_seconds >= 0:
            raise ValueError(f"every_seconds must be 0 or more, not {every_seconds!r}")
        self.every_seconds = every_seconds
        self.expectations = {
            CHECKPOINT: progress.LearnedExpectation(first_checkpoint_expect_seconds),
            EVALUATION: progress.LearnedExpectation(first_evaluation_expect_seconds),
            VALIDATION: progress.LearnedExpectation(first_evaluation_expect_seconds),
        }
        self.file = file
        self.clock = clock
        self.last_step: int | None = None
        self.last_printed_at: float | None = None
        self.open_phase: str | None = None
        self.phase_began_at = 0.0

    def started(self) -> None:
        """Training starts (its checkpoint, if any, is loaded): the start marker."""
        self.last_step = self.last_printed_at = None
        progress.start(file=self.file)

    def stepped(self, step: int, loss: SupportsFloat | None = None, *, due: bool = False) -> None:
        """Step `step` is done. Its line is printed when the step advanced and `every_seconds` have passed since the
        last step line, or `due` (the trainer logs this step, or a phase follows: its last step is printed first)."""
        if self.last_step is not None and step <= self.last_step:
            return  # printed already: the same step again would advance nothing
        now = self.clock()
        if not due and self.last_printed_at is not None and now - self.last_printed_at < self.every_seconds:
            return
        progress.step(step, loss=loss, file=self.file)
        self.last_step, self.last_printed_at = step, now

    def begin(self, name: str) -> None:
        """A phase starts: announced with the seconds its kind should take (an open phase is ended first)."""
        self.end_open()
        expectation = self.expectations.setdefault(name, progress.LearnedExpectation())
        progress.begin(name, expectation.next_seconds(), file=self.file)
        self.open_phase, self.phase_began_at = name, self.clock()

    def end(self, name: str) -> None:
        """Phase `name` ended, if it is the one open; its duration is learned for the next of its kind."""
        if self.open_phase != name:
            return
        self.expectations[name].record(self.clock() - self.phase_began_at)
        self.open_phase = None
        progress.end(name, file=self.file)

    def end_open(self) -> None:
        """The open phase, if any, has ended (the trainer went on to something else)."""
        if self.open_phase is not None:
            self.end(self.open_phase)
