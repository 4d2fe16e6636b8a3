"""A reporting job's pace and loss (step_pace.py, loss_watch.py, progress_findings.py), folded from its step lines
as the log subscription delivers them: a slowdown and a divergence are findings, warm-up, planned changes, announced
phases, restarts and noise are not."""

from __future__ import annotations

import json
import math
import random
from datetime import UTC, datetime, timedelta

import pytest

from trainguard.domain.progress_findings import FindingKind, judge_loss, judge_pace
from trainguard.domain.progress_lines import read_progress_line
from trainguard.domain.progress_rule import compile_template
from trainguard.domain.progress_settings import ProgressSettings
from trainguard.domain.progress_watch import ProgressState, with_lines
from trainguard.domain.step_pace import (
    BASELINE_INTERVALS,
    RECENT_INTERVALS,
    SPREAD_INTERVALS,
    WARMUP_INTERVALS,
    PaceState,
    noise_ratio,
)

T0 = datetime(2026, 12, 6, 8, 0, tzinfo=UTC)
SETTINGS = ProgressSettings()  # 40% slower for 10 min; 3 bad losses in a row, or 4 times the median


def step_line(step: int, loss: float = 2.0, batch: int | None = None) -> str:
    words = f" batch={batch}" if batch is not None else ""
    return f"trainguard:progress step={step} loss={loss}{words}"


def steady(seconds: list[float], start_step: int = 1, **line: object) -> list[tuple[datetime, str]]:
    """One step line per interval of `seconds`, from T0."""
    lines, at = [(T0, step_line(start_step, **line))], T0  # type: ignore[arg-type]
    for index, gap in enumerate(seconds, start=1):
        at += timedelta(seconds=gap)
        lines.append((at, step_line(start_step + index, **line)))  # type: ignore[arg-type]
    return lines


def fold(lines: list[tuple[datetime, str]], settings: ProgressSettings = SETTINGS) -> ProgressState:
    state = ProgressState()
    for at, line in lines:  # one line per delivery, as a chatty stream often arrives
        state = with_lines(state, [(at, line)], None, settings)
    return state


def first_finding_at(lines: list[tuple[datetime, str]], judge=judge_pace) -> datetime | None:  # type: ignore[no-untyped-def]
    state = ProgressState()
    for at, line in lines:
        state = with_lines(state, [(at, line)], None, SETTINGS)
        if judge(state, SETTINGS) is not None:
            return at
    return None


def test_a_steady_job_learns_its_baseline_after_its_warm_up_and_is_not_slow() -> None:
    warm_up = [300.0] + [20.0] * (WARMUP_INTERVALS - 1)  # a 5-min compile in the first interval
    state = fold(steady(warm_up + [20.0] * 200))
    assert state.pace.baseline_seconds == 20.0 and state.pace.recent_seconds == 20.0
    assert state.pace.slow_since is None and judge_pace(state, SETTINGS) is None


def test_a_job_slowed_1_6_times_is_a_slowdown_found_once_held_for_the_slowdown_minutes() -> None:
    before, after = [20.0] * 100, [32.0] * 60
    lines = steady(before + after)
    onset = lines[len(before)][0]  # the first slow interval starts here
    found = first_finding_at(lines)
    assert found is not None
    assert timedelta(minutes=10) <= found - onset <= timedelta(minutes=11)
    finding = judge_pace(fold(lines[: lines.index(next(p for p in lines if p[0] == found)) + 1]), SETTINGS)
    assert finding is not None and finding.kind is FindingKind.SLOWDOWN
    assert finding.since == onset and finding.ratio == pytest.approx(1.6)
    assert "1.60 times as long as its baseline: 32 s a step" in finding.reason and "against 20 s" in finding.reason


def test_a_slowdown_below_the_factor_or_shorter_than_the_minutes_is_no_finding() -> None:
    assert first_finding_at(steady([20.0] * 100 + [27.0] * 200)) is None  # 1.35 times, under 1.4
    assert first_finding_at(steady([20.0] * 100 + [40.0] * 10 + [20.0] * 100)) is None  # 2x for 6 min 40 s


def test_a_loop_that_prints_every_tenth_step_is_timed_per_step() -> None:
    lines = [(T0 + timedelta(seconds=30 * i), step_line(10 * i)) for i in range(1, 60)]
    assert fold(lines).pace.baseline_seconds == 3.0


def test_a_planned_change_of_batch_size_learns_the_new_pace_and_is_no_finding() -> None:
    planned = steady([20.0] * 100, batch=512)
    later = steady([40.0] * 200, start_step=102, batch=1024)
    lines = planned + [(planned[-1][0] + timedelta(seconds=40) + (at - T0), line) for at, line in later]
    assert first_finding_at(lines) is None
    assert fold(lines).pace.baseline_seconds == 40.0
    unannounced = [(at, line.replace(" batch=1024", " batch=512")) for at, line in lines]
    assert first_finding_at(unannounced) is not None  # the same change, not said: a slowdown


def test_announced_phases_and_a_silent_evaluation_now_and_then_are_no_slowdown() -> None:
    lines, at, step = [], T0, 1
    for hour in range(12):
        for _ in range(150):
            at += timedelta(seconds=20)
            step += 1
            lines.append((at, step_line(step)))
        lines.append((at + timedelta(seconds=1), "trainguard:phase begin=checkpoint expect=300"))
        at += timedelta(seconds=300)
        lines.append((at, "trainguard:phase end=checkpoint"))
        if hour % 2:
            at += timedelta(minutes=15)  # an evaluation no line announces: one long interval
    assert first_finding_at(lines) is None


def test_a_slowdown_is_held_for_its_slow_steps_and_a_phase_among_them_adds_nothing() -> None:
    lines = steady([20.0] * 40 + [40.0] * 6)  # slow from the 41st interval: 4 min of slow steps
    at, step = lines[-1][0], 47
    lines.append((at + timedelta(seconds=1), "trainguard:phase begin=evaluation expect=1200"))
    at += timedelta(minutes=20)
    lines.append((at, "trainguard:phase end=evaluation"))
    for _ in range(3):  # the first interval held the phase: 80 s more of slow steps, 5.3 min in all
        at, step = at + timedelta(seconds=40), step + 1
        lines.append((at, step_line(step)))
    assert first_finding_at(lines) is None
    for _ in range(7):  # 280 s more: 10 min of slow steps
        at, step = at + timedelta(seconds=40), step + 1
        lines.append((at, step_line(step)))
    found = first_finding_at(lines)
    assert found == at and judge_pace(fold(lines), SETTINGS) is not None


def test_an_interval_stored_before_its_length_was_reads_its_seconds_per_step_as_its_length() -> None:
    stored = PaceState.from_json({"recent": [[1_700_000_000_000, 20.5]], "slow_ms": None})
    assert [(seconds, length) for _, seconds, length in stored.recent] == [(20.5, 20.5)]


def test_steps_inside_an_open_phase_are_no_step_time() -> None:
    lines = steady([20.0] * 60)
    at = lines[-1][0]
    lines.append((at + timedelta(seconds=1), "trainguard:phase begin=checkpoint expect=900"))
    lines += [(at + timedelta(seconds=60 * i), step_line(61 + i)) for i in range(1, 15)]  # an asynchronous save
    assert fold(lines).pace.slow_since is None and first_finding_at(lines) is None


def test_a_restart_from_a_checkpoint_learns_the_pace_again() -> None:
    first = steady([20.0] * 60)
    relaunch = [(first[-1][0] + timedelta(minutes=30) + (at - T0), line) for at, line in steady([50.0] * 60, 40)]
    state = fold(first + relaunch)
    assert state.pace.baseline_seconds == 50.0 and judge_pace(state, SETTINGS) is None


@pytest.mark.parametrize("seed", range(5))
def test_a_noisy_job_is_never_slow_by_chance_and_must_be_slower_to_be_found(seed: int) -> None:
    rng = random.Random(seed)
    noisy = [20.0 * rng.lognormvariate(0, 0.3) for _ in range(3 * 24 * 180)]  # 3 days of 20-s steps, spread 30%
    assert first_finding_at(steady(noisy)) is None
    baseline = fold(steady(noisy[:100])).pace.spread
    assert noise_ratio(baseline) > SETTINGS.slowdown_factor  # its own noise passes 1.4 times by chance
    finding = judge_pace(fold(steady(noisy[:500] + [3.0 * s for s in noisy[500:700]])), SETTINGS)
    assert finding is not None and "its own steps vary so much that only" in finding.reason


def test_nan_losses_in_a_row_are_a_divergence_from_the_first_one() -> None:
    good = steady([20.0] * 30)
    at = good[-1][0]
    bad = [(at + timedelta(seconds=20 * i), step_line(31 + i, loss=math.nan)) for i in range(1, 4)]
    assert judge_loss(fold(good + bad[:2]), SETTINGS) is None
    finding = judge_loss(fold(good + bad), SETTINGS)
    assert finding is not None and finding.kind is FindingKind.DIVERGED
    assert (finding.step, finding.since) == (32, bad[0][0])
    assert "NaN" in finding.reason and "from step 32, the first loss nan, loss nan, loss nan" in finding.reason


def test_a_spike_that_recovers_is_no_divergence_and_a_jump_that_stays_is() -> None:
    good = steady([20.0] * 30)
    at = good[-1][0]
    spike = [(at + timedelta(seconds=20 * i), step_line(31 + i, loss=v)) for i, v in enumerate([9.0, 9.5, 2.1], 1)]
    assert judge_loss(fold(good + spike), SETTINGS) is None
    jump = [(at + timedelta(seconds=20 * i), step_line(31 + i, loss=9.0 + i)) for i in range(1, 4)]
    finding = judge_loss(fold(good + jump), SETTINGS)
    assert finding is not None and finding.values == (10.0, 11.0, 12.0) and "past 4 times" in finding.reason


def test_pace_and_loss_are_kept_between_deliveries_as_json_nan_included() -> None:
    lines = steady([20.0] * 40 + [40.0] * 10)
    lines.append((lines[-1][0] + timedelta(seconds=40), step_line(52, loss=math.inf)))
    state = fold(lines)
    # the newest 30 it was not slow in: the baseline's 20, 15 more at its pace, 2 slower ones before it turned slow
    assert len(state.pace.spread) == SPREAD_INTERVALS and len(state.pace.recent) == RECENT_INTERVALS
    stored = ProgressState.from_json(json.loads(json.dumps(state.to_json(), allow_nan=False)))
    assert stored.pace == state.pace and stored.loss.bad_values == (math.inf,)
    assert PaceState.from_json({"base": "x", "recent": [[1, -2]], "seen": True}) == PaceState()


@pytest.mark.parametrize(
    ("line", "batch"),
    [
        (" iteration      200/ 1000000 | consumed samples: 204800 | elapsed time per iteration (ms): 1000.0 | "
         "learning rate: 3.000E-04 | global batch size:  1024 | lm loss: 2.373574E+00 | loss scale: 1.0 |", 1024),
        ("Training epoch 0, iteration 12/1000000 | lr: 0.0001 | global_batch_size: 8 | global_step: 12 | "
         "reduced_train_loss: 2.31", 8),
        ("trainguard:progress step=5 loss=2.1 batch=2048", 2048),
        ("trainguard:progress step=5 loss=2.1 batch=big", None),
    ],
)  # fmt: skip
def test_the_batch_size_is_read_where_the_line_prints_it(line: str, batch: int | None) -> None:
    assert read_progress_line(line).batch == batch


def test_a_tag_rule_reads_the_batch_size_with_its_placeholder() -> None:
    rule = compile_template("iter: @step bs: @batch loss: @loss")
    assert not isinstance(rule, str)
    reading = read_progress_line("[rank0] iter: 40 bs: 256 loss: 2.5", rule)
    assert (reading.step, reading.batch, reading.loss) == (40, 256, 2.5)
    assert compile_template("iter: @step bs: @batch @batch") == "@batch may appear once"


def test_a_phase_no_line_closes_holds_the_pace_an_hour_at_most() -> None:
    """A DeepSpeed save announces its begin only: its steps are not timed for the default phase minutes, then are."""
    lines = steady([20.0] * 60)
    at = lines[-1][0]
    lines.append((at + timedelta(seconds=1), "[Torch] Checkpoint global_step61 is about to be saved!"))
    lines.append((at + timedelta(seconds=2), "trainguard:phase begin=checkpoint"))  # begun, never ended
    lines += [(at + timedelta(seconds=60 * i), step_line(61 + i)) for i in range(1, 120)]  # 3 times slower for good
    found = first_finding_at(lines)
    assert found is not None and found - at >= timedelta(minutes=60)


def test_stored_step_times_too_small_to_be_real_are_dropped_and_the_noise_ratio_stays_finite() -> None:
    stored = PaceState.from_json({"spread": [1e-300, 20.0, 20.0], "seen": 3})
    assert stored.spread == (20.0, 20.0) and stored.base_seconds is None
    legacy = PaceState.from_json({"base": [20.0] * 10 + [30.0] * 10, "seen": 25})  # stored before the spread was
    assert legacy.base_seconds == 25.0 and len(legacy.spread) == BASELINE_INTERVALS
    assert math.isfinite(noise_ratio((1e-4, 1e8) * 10))


# Megatron-LM's training_log (progress_markers.py): a skipped iteration adds nothing to the loss and counts as a nan
# iteration when its loss was NaN or infinite; the loss is printed only `if avg > 0.0`.
MEGATRON_HEAD = (
    " iteration      300/ 1000000 | consumed samples: 307200 | elapsed time per iteration (ms): 1000.0 | "
    "learning rate: 3.000E-04 | global batch size:  1024 |"
)


@pytest.mark.parametrize(
    ("tail", "loss", "why"),
    [
        (" loss scale: 1.0 | number of skipped iterations:  10 | number of nan iterations:  10 |", math.nan,
         "fp16, every iteration skipped on a NaN loss"),
        (" lm loss: 2.373574E+00 | loss scale: 1.0 | number of skipped iterations:   1 | "
         "number of nan iterations:   1 |",
         2.373574, "one skipped on a NaN, the others advanced: the loss the line prints"),
        (" loss scale: 65536.0 | number of skipped iterations:  10 | number of nan iterations:   0 |", None,
         "the loss scale finding its level at the start: skipped on overflowing gradients, the losses finite"),
        (" mlm loss: 7.1E+00 | loss scale: 1.0 | number of skipped iterations:   1 | number of nan iterations:   1 |",
         None, "another model's loss printed: some iterations advanced, and the lm loss is not there to read"),
        (" loss scale: 1.0 | grad norm: 0.811 | number of skipped iterations:   0 | number of nan iterations:   0 |",
         None, "bf16: a NaN leaves the loss out and counts nothing"),
    ],
)  # fmt: skip
def test_a_megatron_line_reads_a_nan_loss_from_its_nan_iterations(tail: str, loss: float | None, why: str) -> None:
    read = read_progress_line(MEGATRON_HEAD + tail)
    assert read.step == 300, why
    assert read.loss == loss or (
        loss is not None and math.isnan(loss) and read.loss is not None and math.isnan(read.loss)
    ), why
