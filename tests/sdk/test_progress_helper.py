"""The progress helper (sdk/trainguard_sdk/progress.py) prints what trainguard reads: every line it prints is fed
to the product's own reader (trainguard.domain.progress_lines), so the writer and the reader cannot drift."""

from __future__ import annotations

import ast
import io
import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainguard.domain import progress_lines, progress_reading
from trainguard.domain.progress_lines import read_progress_line
from trainguard.domain.progress_reading import Phase, ProgressReading, Reader
from trainguard_sdk import progress

HELPER = Path(progress.__file__)


def read_lines(out: io.StringIO) -> list[ProgressReading]:
    """What trainguard reads from each line the helper printed to `out`."""
    return [read_progress_line(line) for line in out.getvalue().splitlines()]


def test_start_reads_as_the_contracts_start_marker() -> None:
    out = io.StringIO()
    progress.start(file=out)
    assert read_lines(out) == [ProgressReading(start=True, source=Reader.CONTRACT)]


@pytest.mark.parametrize(
    ("loss", "expected"),
    [(None, None), (2.31, 2.31), (0.1 + 0.2, 0.1 + 0.2), (1e-05, 1e-05), (-3.0, -3.0), (1.5e300, 1.5e300)],
)
def test_a_step_reads_back_with_its_loss_exactly(loss: float | None, expected: float | None) -> None:
    out = io.StringIO()
    progress.step(1200, loss=loss, file=out)
    assert read_lines(out) == [ProgressReading(step=1200, loss=expected, source=Reader.CONTRACT)]


@pytest.mark.parametrize("loss", [math.nan, math.inf, -math.inf])
def test_a_nan_or_infinite_loss_reads_as_such(loss: float) -> None:
    out = io.StringIO()
    progress.step(7, loss=loss, file=out)
    (reading,) = read_lines(out)
    assert reading.step == 7
    assert reading.loss is not None
    assert progress_reading.not_finite_name(reading.loss) == progress_reading.not_finite_name(loss)


@given(
    step=st.integers(min_value=0, max_value=progress.MAX_STEP),
    loss=st.none() | st.floats(allow_nan=True, allow_infinity=True),
)
def test_every_step_and_loss_the_helper_accepts_reads_back_the_same(step: int, loss: float | None) -> None:
    out = io.StringIO()
    progress.step(step, loss=loss, file=out)
    (reading,) = read_lines(out)
    assert (reading.step, reading.source) == (step, Reader.CONTRACT)
    if loss is None or math.isnan(loss):
        assert (reading.loss is None) == (loss is None)
        assert loss is None or (reading.loss is not None and math.isnan(reading.loss))
    else:
        assert reading.loss == loss


def test_a_phase_prints_its_begin_with_the_expectation_and_its_end() -> None:
    out = io.StringIO()
    with progress.phase("checkpoint", expect_seconds=600, file=out):
        print("saving", file=out)
    assert read_lines(out) == [
        ProgressReading(phase=Phase.BEGIN, phase_name="checkpoint", expect_seconds=600, source=Reader.CONTRACT),
        ProgressReading(),  # the block's own line reads as nothing
        ProgressReading(phase=Phase.END, phase_name="checkpoint", source=Reader.CONTRACT),
    ]


def test_a_phase_with_a_fractional_or_no_expectation_reads_back_the_same() -> None:
    out = io.StringIO()
    progress.begin("eval.val-1", expect_seconds=0.25, file=out)
    progress.begin("eval", file=out)
    assert [(r.phase, r.phase_name, r.expect_seconds) for r in read_lines(out)] == [
        (Phase.BEGIN, "eval.val-1", 0.25),
        (Phase.BEGIN, "eval", None),
    ]


def test_a_phase_that_raises_still_prints_its_end() -> None:
    out = io.StringIO()
    with pytest.raises(OSError), progress.phase("checkpoint", expect_seconds=60, file=out):
        raise OSError("disk full")
    assert [r.phase for r in read_lines(out)] == [Phase.BEGIN, Phase.END]


def test_a_line_after_a_logging_prefix_reads_the_same() -> None:
    out = io.StringIO()
    progress.step(3, loss=0.5, file=out)
    assert read_progress_line("2026-12-06 00:03:07 rank0 INFO " + out.getvalue()).step == 3


@pytest.mark.parametrize(
    "call",
    [
        lambda: progress.step(-1),
        lambda: progress.step(progress.MAX_STEP + 1),
        lambda: progress.step(1.0),  # type: ignore[arg-type]
        lambda: progress.step(True),
        lambda: progress.begin("check point"),
        lambda: progress.begin(""),
        lambda: progress.begin("x" * 65),
        lambda: progress.begin("checkpoint", expect_seconds=progress.MAX_EXPECT_SECONDS + 1),
        lambda: progress.begin("checkpoint", expect_seconds=-1),
        lambda: progress.begin("checkpoint", expect_seconds=math.nan),
        lambda: progress.end("a=b"),
    ],
)
def test_a_value_the_reader_would_not_read_is_refused_at_the_call(call: object) -> None:
    assert callable(call)
    with pytest.raises(ValueError):
        call()


def test_the_bounds_the_helper_checks_are_the_readers() -> None:
    """The largest value the helper accepts reads back; one past it is what the reader refuses too."""
    out = io.StringIO()
    progress.step(progress.MAX_STEP, file=out)
    progress.begin("n" * 64, expect_seconds=progress.MAX_EXPECT_SECONDS, file=out)
    at_the_step_bound, at_the_expect_bound = read_lines(out)
    assert at_the_step_bound.step == progress.MAX_STEP
    assert at_the_expect_bound.expect_seconds == progress_lines.MAX_EXPECT_SECONDS
    beyond = [
        f"trainguard:progress step={progress.MAX_STEP + 1}",
        f"trainguard:phase begin={'n' * 65}",
        f"trainguard:phase begin=x expect={progress.MAX_EXPECT_SECONDS + 1}",
    ]
    assert [read_progress_line(line) for line in beyond] == [ProgressReading(source=Reader.CONTRACT)] * 3


def test_each_line_is_flushed_to_standard_output() -> None:
    """Run as a job would: a child process whose standard output is a pipe (block-buffered); each line must be
    there before the child's next step, so the child waits on its standard input between the two calls."""
    child = subprocess.Popen(
        [sys.executable, "-c", "from trainguard_sdk import progress; progress.step(1); input(); progress.step(2)"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdin is not None
    assert child.stdout.readline() == "trainguard:progress step=1\n"  # would block forever if it sat in a buffer
    child.stdin.write("\n")
    child.stdin.close()
    assert child.stdout.read() == "trainguard:progress step=2\n"
    assert child.wait(timeout=30) == 0


def test_the_helper_imports_only_the_standard_library_and_works_as_a_copied_file(tmp_path: Path) -> None:
    nodes = list(ast.walk(ast.parse(HELPER.read_text())))
    imported = {alias.name for node in nodes if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in nodes if isinstance(node, ast.ImportFrom) and node.module}
    imported = {name.split(".")[0] for name in imported}
    assert imported <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)
    copy = tmp_path / "trainguard_progress.py"
    copy.write_text(HELPER.read_text())
    run = subprocess.run(
        [sys.executable, "-E", "-s", "-c", "import trainguard_progress as p; p.start(); p.step(5, loss=0.5)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        env={},
    )
    assert [read_progress_line(line).step for line in run.stdout.splitlines()] == [None, 5]
