"""A reporting job's loss: whether its run has diverged (docs/pace.md).

A run whose loss has turned into NaN or an infinity keeps every GPU busy and every line flowing until MaxRuntime,
producing nothing worth keeping. Read from the loss its step lines report (progress_reading.ProgressReading.loss),
one advancing step at a time:
- a report is bad when its loss is NaN or an infinity, or, once RECENT_LOSSES_NEEDED finite losses are known, when it
  is past the jump multiple of their median (a loss that is positive: the multiple means nothing below zero);
- a run of bad reports, none good between them, as long as the job's divergence reports is a finding: one bad
  report is a spike that training often recovers from (skipped steps of a dynamic loss scale), several in a row are
  not. A good report ends the run; bad reports never enter the median they are judged against.
The first bad report's step and time say which checkpoint predates the divergence.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from trainguard.domain.log_rhythm import epoch_ms, from_epoch_ms
from trainguard.domain.stored_values import stored_count, stored_list

RECENT_LOSSES = 16  # the newest good losses kept: the median a jump is judged against
RECENT_LOSSES_NEEDED = 8  # before this many, only NaN and infinities are bad
BAD_VALUES_KEPT = 3  # the first bad values, for the message


@dataclass(frozen=True)
class LossState:
    recent: tuple[float, ...] = ()  # the newest good losses
    bad_reports: int = 0  # bad reports in a row, the newest included
    first_bad_step: int | None = None
    first_bad_at: datetime | None = None
    bad_values: tuple[float, ...] = ()  # the run's first BAD_VALUES_KEPT values

    @property
    def median(self) -> float | None:
        return statistics.median(self.recent) if len(self.recent) >= RECENT_LOSSES_NEEDED else None

    def to_json(self) -> dict[str, Any]:
        return {
            "recent": [_stored(v) for v in self.recent],
            "bad": self.bad_reports,
            "bad_step": self.first_bad_step,
            "bad_ms": epoch_ms(self.first_bad_at),
            "bad_values": [_stored(v) for v in self.bad_values],
        }

    @classmethod
    def from_json(cls, data: object) -> LossState:
        """A state from its stored form; an empty one for anything that does not read as one."""
        if not isinstance(data, Mapping):
            return cls()
        recent = [_loaded(v) for v in stored_list(data.get("recent"))]
        values = [_loaded(v) for v in stored_list(data.get("bad_values"))]
        bad, step = data.get("bad"), data.get("bad_step")
        return cls(
            recent=tuple(v for v in recent if v is not None and math.isfinite(v))[-RECENT_LOSSES:],
            bad_reports=bad if stored_count(bad) else 0,
            first_bad_step=step if stored_count(step) else None,
            first_bad_at=from_epoch_ms(data.get("bad_ms")),
            bad_values=tuple(v for v in values if v is not None)[:BAD_VALUES_KEPT],
        )


def is_bad(state: LossState, loss: float, jump: float) -> bool:
    """Whether `loss` is a bad report: NaN or an infinity, or past `jump` times the median of the good ones."""
    if not math.isfinite(loss):
        return True
    median = state.median
    return median is not None and median > 0 and loss > jump * median


def with_loss(state: LossState, step: int, loss: float, at: datetime, jump: float) -> LossState:
    """`state` with the loss of one advancing step folded in; `jump`: the multiple of the median that is a jump."""
    if not is_bad(state, loss, jump):
        return LossState(recent=(*state.recent, loss)[-RECENT_LOSSES:])
    if state.bad_reports == 0:
        return replace(state, bad_reports=1, first_bad_step=step, first_bad_at=at, bad_values=(loss,))
    values = (*state.bad_values, loss)[:BAD_VALUES_KEPT]
    return replace(state, bad_reports=state.bad_reports + 1, bad_values=values)


def _stored(value: float) -> float | str:
    """JSON has no NaN nor infinity: those are kept as Python writes them."""
    return float(f"{value:.5g}") if math.isfinite(value) else repr(value)


def _loaded(value: object) -> float | None:
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        return float(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None
