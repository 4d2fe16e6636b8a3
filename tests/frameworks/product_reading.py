"""What trainguard makes of a training run's standard output: each line through the product's reader
(progress_lines.read_progress_line) and folded into the product's progress state (progress_watch.advance), one
second apart, as the log subscription would."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from trainguard.domain.progress_lines import read_progress_line
from trainguard.domain.progress_reading import ProgressReading, Reader
from trainguard.domain.progress_watch import ProgressState, advance

T0 = datetime(2026, 12, 6, tzinfo=UTC)


@dataclass(frozen=True)
class ReadLine:
    text: str
    reading: ProgressReading
    state: ProgressState  # the product's state after this line


def read_run(stdout: str) -> list[ReadLine]:
    state, read = ProgressState(), []
    for second, text in enumerate(stdout.splitlines()):
        reading = read_progress_line(text)
        state = advance(state, reading, T0 + timedelta(seconds=second))
        read.append(ReadLine(text, reading, state))
    return read


def contract_lines(read: list[ReadLine]) -> list[ReadLine]:
    return [line for line in read if line.reading.source is Reader.CONTRACT]


def shape(line: ReadLine) -> str:
    """A contract line without its measured figures: "start", "step 5", "step 4 loss", "begin checkpoint", "end
    evaluation"."""
    reading = line.reading
    if reading.start:
        return "start"
    if reading.step is not None:
        return f"step {reading.step}" + (" loss" if reading.loss is not None else "")
    return f"{reading.phase} {reading.phase_name}"


def assert_read_as_progress(read: list[ReadLine], last_step: int, test_markers: dict[str, str]) -> None:
    """The product reads the run as the contract's: its reader is the contract, every step line advances the step,
    each phase is open from its begin to its end, every line marked `test_markers[marker] = phase` (printed by the
    test where the framework really saves or evaluates) falls inside that phase, and none is open at the end."""
    assert read, "the run printed nothing"
    final = read[-1].state
    assert final.reader is Reader.CONTRACT
    assert (final.last_step, final.phase) == (last_step, None)
    previous_step = 0
    for line in read:
        if line.reading.step is not None and line.reading.source is Reader.CONTRACT:
            assert line.state.last_step == line.reading.step > previous_step, line.text
            previous_step = line.reading.step
        if line.reading.phase is not None and line.reading.phase.value == "begin":
            assert line.state.phase is not None and line.state.phase.name == line.reading.phase_name
        for marker, phase in test_markers.items():
            if line.text.startswith(marker):
                assert line.state.phase is not None and line.state.phase.name == phase, (line.text, line.state)
                assert line.reading == ProgressReading()  # the test's own marker reads as nothing
