"""How far a long local run has got, on stderr: one line rewritten in place on a terminal, whole lines in a log.

`make bench`, the chaos suite and the fleet's trainguard run take minutes. On a terminal the line is redrawn
(carriage return, clear to the end of the line) as often as it changes and ends with a newline when the work
is done. When the stream is a file or a pipe (CI, `2> log`), a line is written only when the step or the
whole ten per cent changes, so a log gets a few dozen lines, not one per update.

    progress = Progress("bench", steps=9)
    progress.update(5, "standard trace: trainguard, fleet clock 31 h of 72", within=31 / 72)
    progress.done("wrote BENCHMARKS.md in 190 s")

`fleet_clock` gives the callback for a run on a virtual clock (trainguard's run in the fleet simulator, a chaos
run): the step's line shows the clock as it passes each mark. It lives with the fleet simulator because every
tool that runs long (bench, chaos, the demo) sits on it.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from typing import TextIO

REWRITE_LINE = "\r\x1b[K"  # back to the start of the line and clear it


class Progress:
    """The progress of `steps` steps of work called `title`, written to `stream` (stderr unless given); a step
    is called `step_name` on the line ("seed 2 of 3")."""

    def __init__(self, title: str, steps: int, stream: TextIO | None = None, step_name: str = "step") -> None:
        self.title = title
        self.steps = max(1, steps)
        self.step_name = step_name
        self.stream = sys.stderr if stream is None else stream
        self.on_terminal = self.stream.isatty()
        self._last_line = ""
        self._last_written: tuple[int, int] | None = None  # (step, whole tens of per cent) of the last plain line

    def update(self, step: int, what: str, within: float = 0.0) -> None:
        """Step `step` (counted from 1) of the steps is running, `within` (0 to 1) of it done, doing `what`."""
        step = min(max(step, 1), self.steps)
        share = (step - 1 + min(max(within, 0.0), 1.0)) / self.steps
        line = f"{self.title}: {self.step_name} {step} of {self.steps}, {share:.0%}: {what}"
        if self.on_terminal:
            self._rewrite(line)
            return
        mark = (step, int(share * 10))
        if mark != self._last_written:
            self._last_written = mark
            self._write(line + "\n")

    def fleet_clock(self, step: int, what: str, of_hours: float, every_hours: float = 1.0) -> Callable[[float], None]:
        """A callback told the virtual clock (hours) of a run of `of_hours`: the step's line shows `what` and the
        clock each time it passes a multiple of `every_hours`."""
        shown = [-1]

        def show(hours: float) -> None:
            mark = int(hours / every_hours)
            if mark != shown[0]:
                shown[0] = mark
                clock = f"{mark * every_hours:g} h of {of_hours:g}"
                self.update(step, f"{what}: fleet clock {clock}", within=hours / of_hours)

        return show

    def done(self, message: str) -> None:
        """The work is over: `message` on a line of its own, after the progress line on a terminal."""
        self._write((REWRITE_LINE if self.on_terminal else "") + f"{self.title}: {message}\n")
        self._last_line = ""

    def _rewrite(self, line: str) -> None:
        fitted = line[: shutil.get_terminal_size().columns - 1]  # a wrapped line could not be rewritten
        if fitted != self._last_line:
            self._last_line = fitted
            self._write(REWRITE_LINE + fitted)

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
