"""A reporting job's progress settings: the deployer's defaults (infra/settings.py, trainguard.config), overridden per
job by its tags (docs/tags.md), each figure bounded the same way for both (FIGURE_RANGES)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from trainguard.domain.policy import TagKeys, TagProblem, read_int_tag
from trainguard.domain.progress_rule import read_rule_tags


@dataclass(frozen=True)
class ProgressSettings:
    """The progress rules' figures for one job: the defaults, overridden by its tags (docs/tags.md)."""

    interval_factor: int = 3
    phase_margin_percent: int = 50
    phase_minutes: int = 60  # a phase announced with no expectation
    start_minutes: int = 30  # from the start marker to the first step
    interval_seconds: int | None = None  # the job's progress-interval-seconds tag
    start_seconds: int | None = None  # the job's progress-start-seconds tag
    pattern: str = ""  # the job's progress-pattern tag, as written (compiled where lines are read)
    # The pace and loss rules (docs/pace.md): a slowdown past this percent of the baseline, held this long; a loss
    # NaN, infinite or past this multiple of its recent median, this many reports in a row.
    slowdown_percent: int = 40
    slowdown_minutes: int = 10
    divergence_reports: int = 3
    divergence_jump: int = 4
    problems: tuple[TagProblem, ...] = field(default=())

    @property
    def slowdown_factor(self) -> float:
        """How many times its baseline a step must take to count as a slowdown (slowdown_percent more)."""
        return 1 + self.slowdown_percent / 100

    def to_json(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in _STORED}

    @classmethod
    def from_json(cls, data: object) -> ProgressSettings:
        """The stored settings; a field that does not read (or that this version does not know) keeps its default."""
        if not isinstance(data, Mapping):
            return cls()
        kept = {k: data[k] for k in _STORED if k in data and isinstance(data[k], _STORED[k])}
        return cls(**kept)  # type: ignore[arg-type]


_STORED: dict[str, type | tuple[type, ...]] = {
    "interval_factor": int,
    "phase_margin_percent": int,
    "phase_minutes": int,
    "start_minutes": int,
    "slowdown_percent": int,
    "slowdown_minutes": int,
    "divergence_reports": int,
    "divergence_jump": int,
    "interval_seconds": (int, type(None)),
    "start_seconds": (int, type(None)),
    "pattern": str,
}


@dataclass(frozen=True)
class FigureRange:
    """The bounds of one of the progress rules' figures, the same for the job's tag and the deployer's default."""

    tag: str  # the tag's name after the prefix; the setting is its name with underscores (progress_start_minutes)
    low: int
    high: int
    unit: str  # after the figure in a message: " min", "%", " times"

    @property
    def setting(self) -> str:
        return self.tag.replace("-", "_")


# The figures a deployer sets for every job (infra/settings.py, trainguard.config) and a job's tags override, by
# ProgressSettings field.
FIGURE_RANGES = {
    "interval_factor": FigureRange("progress-interval-factor", 2, 20, " times"),
    "phase_margin_percent": FigureRange("progress-phase-margin-percent", 10, 1000, "%"),
    "phase_minutes": FigureRange("progress-phase-minutes", 5, 1440, " min"),
    "start_minutes": FigureRange("progress-start-minutes", 5, 1440, " min"),
    "slowdown_percent": FigureRange("slowdown-percent", 10, 900, "%"),
    "slowdown_minutes": FigureRange("slowdown-minutes", 2, 1440, " min"),
    "divergence_reports": FigureRange("divergence-reports", 1, 100, " reports"),
    "divergence_jump": FigureRange("divergence-jump", 2, 1000, " times"),
}


def read_progress_settings(tags: Mapping[str, str], defaults: ProgressSettings, keys: TagKeys) -> ProgressSettings:
    """The job's progress settings: the defaults (the deployer's), overridden per job by tag; bad values fall back
    to the defaults and are reported."""
    problems: list[TagProblem] = []
    rule = read_rule_tags(tags, keys)
    problems += rule.problems
    figures = {
        name: read_int_tag(tags, keys.key(r.tag), getattr(defaults, name), r.low, r.high, problems, r.unit)
        for name, r in FIGURE_RANGES.items()
    }
    return ProgressSettings(
        **figures,
        interval_seconds=rule.interval_seconds,
        start_seconds=rule.start_seconds,
        pattern=rule.rule.template if rule.rule else "",
        problems=tuple(problems),
    )
