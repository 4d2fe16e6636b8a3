"""`trainguard explain --log-lines FILE`: what trainguard reads from each line of a job's log, so that anyone can
check a job's logs before trusting trainguard with them. One answer per input line, in order: a short sentence each,
or with --json one JSON object each (JSON Lines). A loss JSON cannot hold (NaN, an infinity) is null in `loss` and
named in `loss_not_finite` ("nan", "inf" or "-inf").

What the pace and loss rules see (docs/pace.md) goes to standard error with the tags' notes: the lines folded in
the file's order as the log subscription folds them, each at the time its own text gives (`line_time`: a log
exported with its timestamps, or a framework's own prefix), so a log without times gives the loss rule only."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from trainguard.domain.policy import TagKeys, parse_tag_list
from trainguard.domain.progress_findings import judge_loss, judge_pace
from trainguard.domain.progress_lines import read_progress_line
from trainguard.domain.progress_reading import ProgressReading, not_finite_name, visible_text
from trainguard.domain.progress_rule import RuleTags, read_rule_tags
from trainguard.domain.progress_settings import ProgressSettings, read_progress_settings
from trainguard.domain.progress_watch import ProgressState, advance
from trainguard.events.times import parse_aws_time

# A line's own time, near its start: 2026-12-06T08:00:00.123Z, 2026-12-06 08:00:00,123 (Python's logging),
# [2026-12-06 08:00:00] (Megatron-LM's step line); a time with no zone is UTC.
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,6})?(?:Z|[+-]\d{2}:?\d{2})?(?!\d)")
_TIME_WITHIN = 64  # characters from a line's start


@dataclass(frozen=True)
class LineReadings:
    """The readings of a log's lines, in order, and what the job's tags said (problems included)."""

    readings: tuple[ProgressReading, ...]
    rule_tags: RuleTags
    said: tuple[str, ...] = ()  # what the pace and loss rules see, for standard error

    def as_json_lines(self) -> str:
        return "\n".join(json.dumps(reading_as_json(number, reading)) for number, reading in self._numbered())

    def as_text(self) -> str:
        return "\n".join(f"{number}: {reading_as_words(reading)}" for number, reading in self._numbered())

    def _numbered(self) -> list[tuple[int, ProgressReading]]:
        return list(enumerate(self.readings, start=1))


def explain_log_lines(text: str, tags: object, keys: TagKeys) -> LineReadings:
    """Read every line of `text` (lines end at "\\n" only), with the tag rule of `tags` (ListTags' Tags, or None)."""
    tag_map = parse_tag_list(tags) if tags is not None else {}
    rule_tags = read_rule_tags(tag_map, keys) if tags is not None else RuleTags()
    lines = text.split("\n")
    if lines and lines[-1] == "":  # the end of the last line, not a line
        lines.pop()
    readings = tuple(read_progress_line(line, rule_tags.rule) for line in lines)
    settings = read_progress_settings(tag_map, ProgressSettings(), keys)
    stepped = any(reading.step is not None for reading in readings)
    said = (pace_seen(lines, readings, settings), loss_seen(readings, settings)) if stepped else ()
    return LineReadings(readings, rule_tags, said)


def line_time(line: str) -> datetime | None:
    """The time a line's own text gives near its start (None: none, or no such date), read as AWS times are."""
    found = _TIME.search(visible_text(line)[:_TIME_WITHIN])
    return parse_aws_time(found[0]) if found else None


def pace_seen(lines: list[str], readings: tuple[ProgressReading, ...], settings: ProgressSettings) -> str:
    """What the pace rule sees: the lines that give a time folded as the subscription folds them."""
    state = ProgressState()
    for number, (line, reading) in enumerate(zip(lines, readings, strict=True), start=1):
        at = line_time(line)
        if at is None:
            continue
        state = advance(state, reading, at, settings)
        if (finding := judge_pace(state, settings)) is not None:
            return f"pace: a slowdown at line {number}: {finding.reason}"
    pace = state.pace
    if pace.newest is None:
        return "pace: the step lines give no time of their own, so the pace rule cannot be shown"
    if pace.baseline_seconds is None:
        return f"pace: {pace.seen} step intervals, too few for a baseline: 5 of warm-up, then 20"
    newest = f", {pace.recent_seconds:.3g} s over the newest" if pace.recent_seconds else ""
    return f"pace: baseline {pace.baseline_seconds:.3g} s a step{newest}; no slowdown"


def loss_seen(readings: tuple[ProgressReading, ...], settings: ProgressSettings) -> str:
    """What the loss rule sees: the lines folded in order as the subscription folds them (a restart included), each
    a second after the last, since the loss rule needs no time."""
    state, reports = ProgressState(), 0
    for number, reading in enumerate(readings, start=1):
        state = advance(state, reading, _NO_TIME + timedelta(seconds=number), settings)
        reports += reading.step is not None and reading.loss is not None
        if (finding := judge_loss(state, settings)) is not None:
            return f"loss: a divergence at line {number}: {finding.summary}"
    return f"loss: {reports} reports, no divergence" if reports else "loss: no step line reports a loss"


_NO_TIME = datetime(1970, 1, 1, tzinfo=UTC)  # the loss rule's order is the lines' own


def reading_as_json(number: int, reading: ProgressReading) -> dict[str, Any]:
    loss = reading.loss if reading.loss is not None and not_finite_name(reading.loss) is None else None
    return {
        "line": number,
        "step": reading.step,
        "loss": loss,
        "loss_not_finite": not_finite_name(reading.loss),
        "batch": reading.batch,
        "phase": reading.phase.value if reading.phase else None,
        "phase_name": reading.phase_name,
        "expect_seconds": reading.expect_seconds,
        "start": reading.start,
        "source": reading.source.value if reading.source else None,
    }


def reading_as_words(reading: ProgressReading) -> str:
    said = []
    if reading.start:
        said.append("training starts")
    if reading.step is not None:
        said.append(f"step {reading.step}")
    if reading.loss is not None:
        said.append(f"loss {reading.loss:g}")
    if reading.batch is not None:
        said.append(f"batch {reading.batch}")
    if reading.phase is not None:
        expect = f", expected to take {reading.expect_seconds:g} s" if reading.expect_seconds is not None else ""
        said.append(f"phase {reading.phase_name} {reading.phase.value}s{expect}")
    if reading.source is None:
        return "nothing"
    if not said:
        return f"nothing ({reading.source.value} line that could not be read)"
    return f"{', '.join(said)} ({reading.source.value})"


def notes(readings: LineReadings) -> list[str]:
    """What the job's tags said, for standard error: the problems, and the rule and expectations read."""
    said = [problem.describe() for problem in readings.rule_tags.problems]
    tags = readings.rule_tags
    if tags.rule is not None:
        said.append(f"the job's progress rule: {tags.rule.template!r}")
    if tags.interval_seconds is not None:
        said.append(f"a step line is expected at least every {tags.interval_seconds} s")
    if tags.start_seconds is not None:
        said.append(f"the first step line is expected within {tags.start_seconds} s of the start")
    return said + list(readings.said)
