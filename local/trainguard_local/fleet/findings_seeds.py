"""Issue 28's figures over several traces, where one trace holds a handful of degraded hosts and divergences: on each
seed's trace, no guard and trainguard with every owner's leave to act on findings (trainguard_strategy.py
with_leave_to_act); then, pooled over the seeds, per finding kind and cadence class of the jobs that report their
progress, how many were found, how many within the goal, and p50 and p95 of the minutes (a job never found counts
past every p95), and the GPU-hours each kind wastes under each strategy, of all jobs and of those that report.

Run it: `python -m trainguard_local.fleet.findings_seeds --seeds 1-10` (each seed about 13 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trainguard_local.fleet.anchors import no_guard
from trainguard_local.fleet.goals import DIVERGENCE_FOUND_MINUTES, SLOWDOWN_FOUND_MINUTES
from trainguard_local.fleet.model import TRAINGUARD, TRAINGUARD_WITH_LEAVE
from trainguard_local.fleet.percentiles import percentile
from trainguard_local.fleet.report_findings import Taken, finding_figures, finding_minutes, findings_audit
from trainguard_local.fleet.trainguard_strategy import with_leave_to_act
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.rhythm import CADENCE_CLASSES
from trainguard_local.simulation.trace import generate_trace

KINDS = {FaultKind.DEGRADED_HOST: SLOWDOWN_FOUND_MINUTES, FaultKind.DIVERGED: DIVERGENCE_FOUND_MINUTES}
STRATEGIES = ("none", TRAINGUARD_WITH_LEAVE)
_REPORTING_WASTE = "wasted_gpu_hours_by_fault_of_reporting_jobs"


@dataclass(frozen=True)
class SeedFigures:
    """One trace's: each kind's minutes to the finding and the divergences no line shows; each strategy's waste of
    each kind, of all jobs and of the reporting ones; trainguard's notices on a launch without the fault; the rules'
    audit of every healthy line (report_findings.findings_audit)."""

    seed: int
    taken: dict[FaultKind, list[Taken]]
    unseen: int
    waste: dict[tuple[str, str, bool], float]  # (strategy, kind, reporting jobs only): GPU-hours
    false_findings: int
    audit: dict[str, Any]


def seed_figures(seed: int, jobs: int, hours: float) -> SeedFigures:
    trace = generate_trace(jobs, hours, seed)
    outcomes = {strategy.name: strategy.run(trace) for strategy in (no_guard(), with_leave_to_act())}
    found = finding_minutes(trace, outcomes[TRAINGUARD_WITH_LEAVE], TRAINGUARD)
    figures = {name: finding_figures(trace, outs, TRAINGUARD) for name, outs in outcomes.items()}
    waste = {
        (name, kind, only_reporting): hours or 0.0
        for name, each in figures.items()
        for only_reporting, field in ((False, "wasted_gpu_hours_by_fault"), (True, _REPORTING_WASTE))
        for kind, hours in each[field].items()
    }
    return SeedFigures(
        seed,
        {kind: minutes for kind, (minutes, _) in found.items()},
        len(found[FaultKind.DIVERGED][1]),
        waste,
        sum(figures[TRAINGUARD_WITH_LEAVE]["false_findings"].values()),
        findings_audit(trace),
    )


def pooled_lines(figures: Sequence[SeedFigures]) -> list[str]:
    """The markdown: the minutes to a finding by kind and cadence class, then each kind's waste, pooled."""
    lines = [
        "| finding | jobs that log | found | within the goal | p50 min | p95 min |",
        "|---|---|---|---|---|---|",
    ]
    for kind, limit in KINDS.items():
        for cadence in [*(name for name, _, _ in CADENCE_CLASSES), "any"]:
            taken = [t for f in figures for t in f.taken[kind] if cadence in ("any", t.cadence)]
            minutes = [math.inf if t.minutes is None else t.minutes for t in taken]
            within = sum(m <= limit for m in minutes)
            cells = [_minutes(percentile(minutes, q)) for q in (50, 95)]
            lines.append(
                f"| {kind.value} | {cadence} | {len(taken) - minutes.count(math.inf)} of {len(taken)} | "
                f"{within} (goal {limit} min) | " + " | ".join(cells) + " |"
            )
    lines += ["", "| GPU-hours wasted | no guard | with leave | share |", "|---|---|---|---|"]
    for kind in KINDS:
        for only_reporting, which in ((True, "jobs that report progress"), (False, "all jobs")):
            none, leave = (sum(f.waste.get((s, kind.value, only_reporting), 0.0) for f in figures) for s in STRATEGIES)
            share = f"{leave / none:.1%}" if none else "n/a"
            lines.append(f"| {kind.value}, {which} | {none:,.0f} | {leave:,.0f} | {share} |")
    unseen, wrong = sum(f.unseen for f in figures), sum(f.false_findings for f in figures)
    audited = {key: sum(f.audit[key] for f in figures) for key in ("jobs", "lines")}
    audit_found = sum(sum(f.audit["false_findings"].values()) for f in figures)
    lines += ["", f"Divergences whose lines print no NaN loss (not counted above): {unseen}. Notices of a finding on "
              f"a launch without its fault: {wrong} in the runs, {audit_found} in the rules' audit of every healthy "
              f"line ({audited['jobs']:,} jobs, {audited['lines']:,} lines)."]  # fmt: skip
    return lines


def _minutes(value: float | None) -> str:
    return "-" if value is None else "never" if math.isinf(value) else f"{value:.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1-10", help="FIRST-LAST")
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--hours", type=float, default=72.0)
    args = parser.parse_args(argv)
    first, last = (int(n) for n in args.seeds.split("-"))
    figures = []
    for seed in range(first, last + 1):
        print(f"findings_seeds: seed {seed} ({seed - first + 1} of {last - first + 1})", file=sys.stderr, flush=True)
        figures.append(seed_figures(seed, args.jobs, args.hours))
    print(f"Issue 28's findings over seeds {first}-{last} ({args.jobs} jobs, {args.hours:g} h each):\n")
    print("\n".join(pooled_lines(figures)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
