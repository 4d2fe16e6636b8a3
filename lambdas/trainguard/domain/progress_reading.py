"""The words for what a log line says about a job's progress, and the bounded steps every reader of a line shares.

A log line is the training script's text: any length, any bytes a program printed. Every reader (the progress
contract, a framework's markers, a job's own tag rule) looks only at `visible_text(line)`: at most MAX_LINE_CHARS
characters of what a terminal would show, so no pattern ever runs over more than that, whatever arrived.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import StrEnum

# A step line is short: Megatron's, the longest of the frameworks read, is about 400 characters with every field
# on (megatron/training/training.py, training_log). Lines are cut here before any pattern runs.
MAX_LINE_CHARS = 4096

# ANSI escape sequences (CSI): torchtitan colours its step line unless `metrics.disable_color_printing`
# (torchtitan/components/metrics.py), tqdm moves the cursor up ("\x1b[A") between two bars.
_ANSI = re.compile(r"\x1b\[[0-9;?]{0,32}[A-Za-z]")

# A number as the frameworks print a loss: 2.31, 2.373574E+00, .5, 1e-05, and nan or inf in any case with a sign
# (Python's "%f"/"%g"/"%E" print "nan"/"inf"/"NAN"/"INF"; json and PyTorch print "NaN"/"Infinity"). Bounded, so
# any pattern that holds it stays linear.
NUMBER = r"[-+]?(?:[0-9]{1,20}(?:\.[0-9]{0,20})?|\.[0-9]{1,20})(?:[eE][-+]?[0-9]{1,4})?|[-+]?(?i:nan|inf(?:inity)?)"
_NUMBER = re.compile(NUMBER)
STEP = r"[0-9]{1,15}"  # a step number: up to 10**15, far beyond any run


class Phase(StrEnum):
    BEGIN = "begin"
    END = "end"


class Reader(StrEnum):
    """Which reader read a line: trainguard's own contract, a framework's own lines, or the job's tag rule."""

    CONTRACT = "contract"
    MEGATRON = "megatron"
    NEMO = "nemo"
    HUGGING_FACE = "huggingface"
    LIGHTNING = "lightning"
    TORCHTITAN = "torchtitan"
    DEEPSPEED = "deepspeed"
    EXAMPLES_TRAIN = "examples_train"  # this repository's examples/train.py
    TAG_RULE = "tag_rule"


@dataclass(frozen=True)
class ProgressReading:
    """What one line says. `step`: the training step the line reports (None: the line reports none). `loss`: the
    loss reported with it, NaN and infinities kept as such. `batch`: what the step holds (its batch size), when the
    line says: a change of it is planned, and the step's pace is learned again (step_pace.py). `phase`,
    `phase_name`, `expect_seconds`: the start or end of a long phase (a checkpoint save, an evaluation) and how long
    the job expects it to take. `start`: the line marks the start of training. `source`: which reader read it
    (None: none did)."""

    step: int | None = None
    loss: float | None = None
    batch: int | None = None
    phase: Phase | None = None
    phase_name: str | None = None
    expect_seconds: float | None = None
    start: bool = False
    source: Reader | None = None


NOTHING = ProgressReading()


def visible_text(line: str) -> str:
    """What a terminal would show of `line`, cut to MAX_LINE_CHARS: the part after its last carriage return that is
    not blank (a progress bar rewrites its line with "\\r", and a non-terminal log keeps every state of it on one
    line), without ANSI escape sequences."""
    if "\r" in line:
        parts = [part for part in line.split("\r") if part.strip()]
        line = parts[-1] if parts else ""
    return _ANSI.sub("", line[: MAX_LINE_CHARS + 64])[:MAX_LINE_CHARS]


def read_number(text: str) -> float | None:
    """`text` as a number if it is one whole number as NUMBER reads it (NaN and infinities included), else None.
    Python's float() alone would also take "1_000" and surrounding spaces."""
    if len(text) > 48 or not _NUMBER.fullmatch(text):
        return None
    return float(text)


def read_step(text: str) -> int | None:
    return int(text) if re.fullmatch(STEP, text) else None


def not_finite_name(value: float | None) -> str | None:
    """ "nan", "inf" or "-inf" for a value JSON cannot hold; None for a finite value or none."""
    if value is None or math.isfinite(value):
        return None
    if math.isnan(value):
        return "nan"
    return "inf" if value > 0 else "-inf"
