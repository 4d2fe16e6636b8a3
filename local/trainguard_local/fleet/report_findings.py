"""The report's figures for issue 28's faults, a degraded host and a diverged run: what every kind of fault wastes
(a slow launch wastes the share of its time it makes no progress in), and the notices of a slowdown or a divergence
on a launch that had no such fault."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from trainguard_local.fleet.model import JobOutcome
from trainguard_local.fleet.percentiles import rounded
from trainguard_local.simulation.trace import Trace

FINDINGS = ("slowdown", "diverged")


def wasted_gpu_hours_by_fault(trace: Trace, outcomes: Iterable[JobOutcome]) -> dict[str, float | None]:
    """Every kind's wasted GPU-hours (hung or idle, slowed, lost since the last checkpoint), by the kind of each job's
    fault (`none`: jobs without one)."""
    totals: dict[str, float] = {}
    for outcome in outcomes:
        fault = trace.fault_of(outcome.job.name)
        kind = fault.kind.value if fault else "none"
        totals[kind] = totals.get(kind, 0.0) + outcome.wasted_gpu_hours
    return {kind: rounded(hours) for kind, hours in sorted(totals.items())}


def false_findings(outcomes: Iterable[JobOutcome]) -> dict[str, int]:
    """Notices of a slowdown or a divergence on a launch without that fault, by kind."""
    counted = Counter(kind for outcome in outcomes for kind, right in outcome.findings if not right)
    return {kind: counted[kind] for kind in FINDINGS}
