"""Percentiles and rounding, as every figure of the report gives them: nearest-rank, to three decimals."""

from __future__ import annotations

import math
from collections.abc import Iterable

DECIMALS = 3


def percentile(values: Iterable[float], q: float) -> float | None:
    """Nearest-rank percentile; None for no values."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def p50_p95(values: Iterable[float]) -> dict[str, float | None]:
    listed = list(values)
    return {"p50": rounded(percentile(listed, 50)), "p95": rounded(percentile(listed, 95))}


def rounded(value: float | None) -> float | None:
    return None if value is None else round(value, DECIMALS)
