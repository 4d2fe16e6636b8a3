"""What a reporting job's pace and loss say (docs/pace.md): a slowdown or a divergence, with its figures and the
reason in words, or nothing.

- SLOWDOWN: the median seconds per step of its newest intervals past the slowdown factor times its baseline (or what
  its own noise allows, if more), for at least the slowdown minutes (step_pace.py);
- DIVERGED: its loss NaN, an infinity or past the jump multiple of its recent median, in the divergence reports in a
  row (loss_watch.py).
A finding is decided from the lines alone, at the moment its last line is folded in: what it costs and which host
it may be are told with it (finding_messages.py), what to do about it is the job's leave (finding_actions.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from trainguard.domain.checkpoints import format_duration
from trainguard.domain.progress_settings import ProgressSettings
from trainguard.domain.progress_watch import ProgressState
from trainguard.domain.step_pace import noise_ratio, required_ratio, slow_for


class FindingKind(StrEnum):
    SLOWDOWN = "slowdown"
    DIVERGED = "diverged"


@dataclass(frozen=True)
class Finding:
    """A slowdown or a divergence: since when, at which step, the figures (`ratio`: times slower; `values`: the bad
    losses) and why, in words with its figures."""

    kind: FindingKind
    since: datetime
    reason: str
    ratio: float = 1.0
    summary: str = ""  # the reason's first clause, for a one-line answer (explain --log-lines)
    step: int | None = None
    values: tuple[float, ...] = ()


def judge_pace(state: ProgressState, settings: ProgressSettings) -> Finding | None:
    """A slowdown, when the job's steps have been slower than it allows for the slowdown minutes, and still are as the
    newest median reads: a median that stayed slow only within the margin that keeps a slowdown going (step_pace.py)
    is no finding yet; else None."""
    pace = state.pace
    base, recent = pace.baseline_seconds, pace.recent_seconds
    if pace.slow_since is None or base is None or recent is None:
        return None
    held = slow_for(pace)
    ratio = recent / base
    required = required_ratio(pace.spread, settings.slowdown_factor)
    if held.total_seconds() < settings.slowdown_minutes * 60 or ratio < required:
        return None
    noisy = ""
    if noise_ratio(pace.spread) > settings.slowdown_factor:
        noisy = f" (its own steps vary so much that only {required:.2f} times is read as a slowdown)"
    reason = (
        f"its steps take {ratio:.2f} times as long as its baseline: {_seconds(recent)} a step over its newest "
        f"intervals against {_seconds(base)} after its warm-up, for {format_duration(held)}; a slowdown is "
        f"{settings.slowdown_factor:.2f} times or more, held for {settings.slowdown_minutes} min{noisy}"
    )
    return Finding(FindingKind.SLOWDOWN, pace.slow_since, reason, ratio=ratio, step=state.last_step)


def judge_loss(state: ProgressState, settings: ProgressSettings) -> Finding | None:
    """A divergence, when the job's loss has been bad in the divergence reports in a row; else None."""
    loss = state.loss
    if loss.bad_reports < settings.divergence_reports or loss.first_bad_at is None:
        return None
    values = ", ".join(f"loss {_loss(v)}" for v in loss.bad_values)
    median = loss.median
    bad = "NaN or infinite"
    if median:
        jump = settings.divergence_jump
        bad = f"NaN, infinite or past {jump} times the median of its good reports, loss {_loss(median)}"
    summary = (
        f"its loss has been bad in {loss.bad_reports} reports in a row from step {loss.first_bad_step}, the first "
        f"{values}"
    )
    reason = f"{summary}; bad is {bad}"
    step, values_kept = loss.first_bad_step, loss.bad_values
    return Finding(FindingKind.DIVERGED, loss.first_bad_at, reason, step=step, values=values_kept, summary=summary)


def _seconds(value: float) -> str:
    return f"{value:.3g} s"


def _loss(value: float | None) -> str:
    if value is None:
        return "none"
    return f"{value:.4g}" if math.isfinite(value) else str(value)
