"""What one log line says about a job's progress: trainguard's own progress contract, a framework's own lines, or
the job's own rule by tags.

The progress contract (docs/progress.md says why this shape) is four kinds of line a training loop prints, each
starting with a fixed marker anywhere in the line (after a logging prefix, say) and then `key=value` words:

    trainguard:progress step=1200 loss=2.31          a step (an integer) and, optionally, its loss and batch
    trainguard:phase begin=checkpoint expect=600     a long phase starts: its name, and the seconds it should take
    trainguard:phase end=checkpoint                  the phase ended
    trainguard:start                                 training starts (its first step follows)

The marker is fixed ("trainguard:"), whatever the deployment's tag prefix. Words after the marker that trainguard
does not know are ignored, so a loop may add its own; of a key given twice, the first counts. A contract line that
cannot be read (a step that is not a whole number, a phase with no name) reads as nothing but says it was the
contract, so `trainguard explain --log-lines` shows the mistake.

Which reader wins: the contract, then the job's tag rule, then the frameworks' markers (progress_markers.py). A line
is data: at most MAX_LINE_CHARS of it are read (progress_reading.visible_text), with bounded patterns only.
"""

from __future__ import annotations

import math
import re
from typing import Protocol

from trainguard.domain.progress_markers import read_framework_line
from trainguard.domain.progress_reading import (
    NOTHING,
    Phase,
    ProgressReading,
    Reader,
    read_number,
    read_step,
    visible_text,
)

CONTRACT_MARKER = "trainguard:"
_CONTRACT = re.compile(r"(?<![\w:.-])trainguard:(progress|phase|start)\b")
_PHASE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
MAX_EXPECT_SECONDS = 7 * 24 * 3600  # a phase announced for longer than a week is not read as a phase
_MAX_WORDS = 16  # words read after the marker


class LineRule(Protocol):
    """A job's own rule (progress_rule.ProgressRule): what it reads from a line, or None when it does not match."""

    def read(self, text: str) -> ProgressReading | None: ...


def read_progress_line(line: str, rule: LineRule | None = None) -> ProgressReading:
    """What `line` says about progress (NOTHING when it says nothing). Never raises, whatever the line holds."""
    text = visible_text(line)
    contract = read_contract_line(text)
    if contract is not None:
        return contract
    if rule is not None and (by_rule := rule.read(text)) is not None:
        return by_rule
    return read_framework_line(text) or NOTHING


def read_contract_line(text: str) -> ProgressReading | None:
    """The contract's reading of `text`, or None when it holds no contract marker."""
    found = _CONTRACT.search(text)
    if found is None:
        return None
    words = _words(text[found.end() :])
    kind = found[1]
    if kind == "start":
        return ProgressReading(start=True, source=Reader.CONTRACT)
    if kind == "progress":
        return _progress(words)
    return _phase(words)


def _words(rest: str) -> dict[str, str]:
    """The `key=value` words after the marker, the first of each key."""
    words: dict[str, str] = {}
    for word in rest.split(maxsplit=_MAX_WORDS)[:_MAX_WORDS]:
        key, equals, value = word.partition("=")
        if equals and value:
            words.setdefault(key, value)
    return words


def _progress(words: dict[str, str]) -> ProgressReading:
    step = read_step(words.get("step", ""))
    if step is None:
        return ProgressReading(source=Reader.CONTRACT)
    loss = read_number(words["loss"]) if "loss" in words else None
    batch = read_step(words.get("batch", ""))
    return ProgressReading(step=step, loss=loss, batch=batch, source=Reader.CONTRACT)


def _phase(words: dict[str, str]) -> ProgressReading:
    begin, end = words.get("begin"), words.get("end")
    if (begin is None) == (end is None):  # neither, or both: not one phase mark
        return ProgressReading(source=Reader.CONTRACT)
    name = begin if begin is not None else end
    if name is None or not _PHASE_NAME.fullmatch(name):
        return ProgressReading(source=Reader.CONTRACT)
    expect = None
    if "expect" in words:  # given, it must be a number of seconds
        expect = read_number(words["expect"])
        if expect is None or not (math.isfinite(expect) and 0 <= expect <= MAX_EXPECT_SECONDS):
            return ProgressReading(source=Reader.CONTRACT)
    phase = Phase.BEGIN if begin is not None else Phase.END
    return ProgressReading(phase=phase, phase_name=name, expect_seconds=expect, source=Reader.CONTRACT)
