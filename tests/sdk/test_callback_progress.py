"""What the framework callbacks print, without the frameworks: trainguard_sdk.callback_progress (the lines and their
rate), progress.LearnedExpectation (the announced durations) and trainguard_sdk.lightning_hooks driven with a stand-in
trainer. Every line is fed to the product's reader. The callbacks inside the real Trainers: tests/frameworks
(`make test-frameworks`)."""

from __future__ import annotations

import io
import subprocess
import sys
from dataclasses import dataclass

import pytest

from trainguard.domain.progress_lines import read_progress_line
from trainguard.domain.progress_reading import Phase, ProgressReading, Reader
from trainguard_sdk import progress
from trainguard_sdk.callback_progress import CHECKPOINT, EVALUATION, VALIDATION, TrainingProgress
from trainguard_sdk.lightning_hooks import LightningProgressHooks


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def readings(out: io.StringIO) -> list[ProgressReading]:
    return [read_progress_line(line) for line in out.getvalue().splitlines()]


def step(n: int, loss: float | None = None) -> ProgressReading:
    return ProgressReading(step=n, loss=loss, source=Reader.CONTRACT)


def begin(name: str, expect: float | None) -> ProgressReading:
    return ProgressReading(phase=Phase.BEGIN, phase_name=name, expect_seconds=expect, source=Reader.CONTRACT)


def end(name: str) -> ProgressReading:
    return ProgressReading(phase=Phase.END, phase_name=name, source=Reader.CONTRACT)


def test_step_lines_come_at_most_every_so_many_seconds_and_never_repeat_a_step() -> None:
    out, clock = io.StringIO(), Clock()
    lines = TrainingProgress(every_seconds=30, file=out, clock=clock)
    lines.started()
    for n in range(1, 8):
        clock.now = 10.0 * n
        lines.stepped(n)  # at 10 s, 20 s, ... 70 s: printed at 10, 40 and 70
    lines.stepped(7, loss=0.5, due=True)  # due, but step 7 was printed: nothing
    lines.stepped(8, loss=0.25, due=True)  # due: printed 10 s after the last
    assert readings(out) == [
        ProgressReading(start=True, source=Reader.CONTRACT),
        step(1),
        step(4),
        step(7),
        step(8, 0.25),
    ]


def test_a_restart_prints_the_start_marker_and_counts_steps_again() -> None:
    out = io.StringIO()
    lines = TrainingProgress(every_seconds=0, file=out)
    lines.started()
    lines.stepped(5)
    lines.started()  # trainer.train() again, from a checkpoint of step 3
    lines.stepped(4)
    assert [r.step for r in readings(out)] == [None, 5, None, 4]


def test_a_phase_is_announced_with_twice_the_longest_of_its_kind_so_far() -> None:
    out, clock = io.StringIO(), Clock()
    lines = TrainingProgress(every_seconds=0, first_checkpoint_expect_seconds=600, file=out, clock=clock)
    for seconds in (40.2, 10.0, 70.0):
        lines.begin(CHECKPOINT)
        clock.now += seconds
        lines.end(CHECKPOINT)
    lines.begin(EVALUATION)  # nothing measured and no first expectation: trainguard's default allowance
    lines.begin(VALIDATION)  # the open evaluation is ended first
    assert readings(out) == [
        begin(CHECKPOINT, 600),
        end(CHECKPOINT),
        begin(CHECKPOINT, 81),  # 2 x 40.2 s, rounded up
        end(CHECKPOINT),
        begin(CHECKPOINT, 81),  # the longest so far, not the last
        end(CHECKPOINT),
        begin(EVALUATION, None),
        end(EVALUATION),
        begin(VALIDATION, None),
    ]


def test_ending_a_phase_that_is_not_open_prints_nothing() -> None:
    out = io.StringIO()
    lines = TrainingProgress(file=out)
    lines.end(CHECKPOINT)
    lines.begin(EVALUATION)
    lines.end(CHECKPOINT)
    lines.end_open()
    lines.end_open()
    assert readings(out) == [begin(EVALUATION, None), end(EVALUATION)]


def test_a_learned_expectation_stays_within_what_the_reader_reads() -> None:
    expectation = progress.LearnedExpectation(first_seconds=0.2)
    assert expectation.next_seconds() == 1  # at least 1 s
    expectation.record(progress.MAX_EXPECT_SECONDS)
    assert expectation.next_seconds() == progress.MAX_EXPECT_SECONDS  # at most a week
    expectation.record(float("nan"))  # ignored
    assert expectation.longest == progress.MAX_EXPECT_SECONDS
    with pytest.raises(ValueError, match="first_seconds"):
        progress.LearnedExpectation(first_seconds=-1)
    with pytest.raises(ValueError, match="every_seconds"):
        TrainingProgress(every_seconds=-1)


@dataclass
class StandInTrainer:
    """The attributes of a Lightning Trainer the hooks read."""

    global_step: int = 0
    is_global_zero: bool = True
    sanity_checking: bool = False
    accumulate_grad_batches: int = 1


class Loss:
    """A 0-d tensor's float()."""

    def __init__(self, value: float) -> None:
        self.value = value

    def __float__(self) -> float:
        return self.value


def test_lightnings_hooks_in_the_order_the_trainer_calls_them() -> None:
    out, clock = io.StringIO(), Clock()
    hooks = LightningProgressHooks(every_seconds=0, first_checkpoint_expect_seconds=300, file=out)
    hooks.progress.clock = clock
    trainer = StandInTrainer(accumulate_grad_batches=2)
    trainer.sanity_checking = True
    hooks.on_validation_start(trainer, None)  # the sanity check: before the start marker, not announced
    hooks.on_validation_end(trainer, None)
    trainer.sanity_checking = False
    hooks.on_train_start(trainer, None)
    hooks.on_train_batch_start(trainer, None, None, 0)
    hooks.on_train_batch_end(trainer, None, {"loss": Loss(0.5)}, None, 0)  # accumulating: no optimizer step yet
    trainer.global_step = 1
    hooks.on_train_batch_end(trainer, None, Loss(0.75), None, 1)
    hooks.on_save_checkpoint(trainer, None, {})  # ModelCheckpoint, after this callback's on_train_batch_end
    clock.now += 12.5
    hooks.on_validation_start(trainer, None)  # the save has been written
    hooks.on_validation_end(trainer, None)
    hooks.on_save_checkpoint(trainer, None, {})
    hooks.on_train_end(trainer, None)
    assert readings(out) == [
        ProgressReading(start=True, source=Reader.CONTRACT),
        step(1, 1.5),  # the loss as training_step returned it: Lightning divided it by the accumulation
        begin(CHECKPOINT, 300),
        end(CHECKPOINT),
        begin(VALIDATION, None),
        end(VALIDATION),
        begin(CHECKPOINT, 25),
        end(CHECKPOINT),
    ]


def test_lightnings_hooks_print_nothing_on_other_ranks() -> None:
    out = io.StringIO()
    hooks = LightningProgressHooks(every_seconds=0, file=out)
    trainer = StandInTrainer(global_step=3, is_global_zero=False)
    hooks.on_train_start(trainer, None)
    hooks.on_train_batch_end(trainer, None, None, None, 0)
    hooks.on_save_checkpoint(trainer, None, {})
    hooks.on_validation_start(trainer, None)
    hooks.on_exception(trainer, None, RuntimeError("boom"))
    assert out.getvalue() == ""


def test_a_skipped_or_unreadable_loss_prints_the_step_alone() -> None:
    out = io.StringIO()
    hooks = LightningProgressHooks(every_seconds=0, file=out)
    trainer = StandInTrainer(global_step=1)
    hooks.on_train_batch_end(trainer, None, None, None, 0)  # training_step returned None
    trainer.global_step = 2
    hooks.on_train_batch_end(trainer, None, {"loss": [1.0, 2.0]}, None, 0)
    assert readings(out) == [step(1), step(2)]


def test_the_core_modules_import_no_framework() -> None:
    """trainguard_sdk.progress, callback_progress and lightning_hooks need no torch, transformers or Lightning."""
    code = (
        "import sys; import trainguard_sdk.progress, trainguard_sdk.callback_progress, trainguard_sdk.lightning_hooks;"
        "print(sorted(m for m in ('torch', 'transformers', 'lightning', 'pytorch_lightning') if m in sys.modules))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"
