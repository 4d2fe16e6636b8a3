"""`trainguard explain --log-lines FILE`: what trainguard reads from each line of a job's log, so that anyone can
check a job's logs before trusting trainguard with them. One answer per input line, in order: a short sentence each,
or with --json one JSON object each (JSON Lines). A loss JSON cannot hold (NaN, an infinity) is null in `loss` and
named in `loss_not_finite` ("nan", "inf" or "-inf")."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from trainguard.domain.policy import TagKeys, parse_tag_list
from trainguard.domain.progress_lines import read_progress_line
from trainguard.domain.progress_reading import ProgressReading, not_finite_name
from trainguard.domain.progress_rule import RuleTags, read_rule_tags


@dataclass(frozen=True)
class LineReadings:
    """The readings of a log's lines, in order, and what the job's tags said (problems included)."""

    readings: tuple[ProgressReading, ...]
    rule_tags: RuleTags

    def as_json_lines(self) -> str:
        return "\n".join(json.dumps(reading_as_json(number, reading)) for number, reading in self._numbered())

    def as_text(self) -> str:
        return "\n".join(f"{number}: {reading_as_words(reading)}" for number, reading in self._numbered())

    def _numbered(self) -> list[tuple[int, ProgressReading]]:
        return list(enumerate(self.readings, start=1))


def explain_log_lines(text: str, tags: object, keys: TagKeys) -> LineReadings:
    """Read every line of `text` (lines end at "\\n" only), with the tag rule of `tags` (ListTags' Tags, or None)."""
    rule_tags = read_rule_tags(parse_tag_list(tags), keys) if tags is not None else RuleTags()
    lines = text.split("\n")
    if lines and lines[-1] == "":  # the end of the last line, not a line
        lines.pop()
    return LineReadings(tuple(read_progress_line(line, rule_tags.rule) for line in lines), rule_tags)


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
    return said
