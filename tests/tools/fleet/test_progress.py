"""The progress line (fleet/progress.py): rewritten in place on a terminal, whole throttled lines in a log."""

from __future__ import annotations

import io
import re

import pytest

from trainguard_local.fleet.progress import REWRITE_LINE, Progress


class FakeStream(io.StringIO):
    def __init__(self, terminal: bool) -> None:
        super().__init__()
        self.terminal = terminal

    def isatty(self) -> bool:
        return self.terminal


def test_on_a_terminal_one_line_is_rewritten_until_the_work_is_done(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    stream = FakeStream(terminal=True)
    progress = Progress("bench", steps=4, stream=stream)
    progress.update(1, "none")
    progress.update(4, "trainguard, fleet clock 31 h of 72", within=0.5)
    progress.update(4, "trainguard, fleet clock 31 h of 72", within=0.5)  # the same line: not written again
    assert "\n" not in stream.getvalue()
    assert stream.getvalue().split(REWRITE_LINE) == [
        "",
        "bench: step 1 of 4, 0%: none",
        "bench: step 4 of 4, 88%: trainguard, fleet clock 31 h of 72",
    ]
    progress.done("wrote BENCHMARKS.md in 74 s")
    assert stream.getvalue().endswith(f"72{REWRITE_LINE}bench: wrote BENCHMARKS.md in 74 s\n")
    assert stream.getvalue().count("\n") == 1


def test_on_a_terminal_the_line_is_cut_to_its_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "30")
    stream = FakeStream(terminal=True)
    Progress("chaos", steps=2, stream=stream, step_name="seed").update(2, "seed 7, fleet clock 3.25 h of 12")
    assert stream.getvalue() == REWRITE_LINE + "chaos: seed 2 of 2, 50%: seed"


def test_in_a_log_whole_lines_come_only_when_the_step_or_a_tenth_changes() -> None:
    stream = FakeStream(terminal=False)
    progress = Progress("bench", steps=2, stream=stream)
    for step in (1, 2):
        for hundredth in range(101):
            progress.update(step, f"{hundredth} of 100", within=hundredth / 100)
    progress.done("done")
    lines = stream.getvalue().splitlines(keepends=True)
    assert "\r" not in stream.getvalue() and all(line.endswith("\n") for line in lines)
    shown = [re.match(r"bench: step (\d) of 2, (\d+)%", line).groups() for line in lines[:-1]]  # type: ignore[union-attr]
    assert shown == [("1", str(p)) for p in range(0, 51, 10)] + [("2", str(p)) for p in range(50, 101, 10)]
    assert lines[-1] == "bench: done\n"


def test_steps_and_shares_out_of_range_are_held_to_it() -> None:
    stream = FakeStream(terminal=False)
    progress = Progress("bench", steps=3, stream=stream)
    progress.update(0, "before the first", within=-1.0)
    progress.update(9, "past the last", within=2.0)
    assert stream.getvalue() == "bench: step 1 of 3, 0%: before the first\nbench: step 3 of 3, 100%: past the last\n"


def test_the_fleet_clock_shows_each_mark_once_on_the_step_line() -> None:
    stream = FakeStream(terminal=False)
    progress = Progress("chaos", steps=2, stream=stream, step_name="run")
    clock = progress.fleet_clock(2, "seed 7", of_hours=10.0, every_hours=2.5)
    for tenth in range(0, 101):
        clock(tenth / 10)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "chaos: run 2 of 2, 50%: seed 7: fleet clock 0 h of 10"
    clocks = [line.rsplit(": fleet clock ", 1)[1] for line in lines]
    assert clocks == ["0 h of 10", "2.5 h of 10", "5 h of 10", "7.5 h of 10", "10 h of 10"]
