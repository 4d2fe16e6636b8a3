"""`trainguard simulate`: one seeded trace, the three anchors and trainguard on it in one run, a summary,
a JSON report and a PNG timeline (issue 5, item 3).

The command line (lambdas/trainguard/cli.py) imports this module only when the command runs: the
Lambda asset does not contain trainguard_local.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

from trainguard_local.fleet.anchors import anchor_strategies
from trainguard_local.fleet.model import JobOutcome
from trainguard_local.fleet.report import run_all
from trainguard_local.fleet.rhythm import CADENCE_CLASSES
from trainguard_local.fleet.timeline_png import write_timeline
from trainguard_local.fleet.trace import HANG_KINDS, Trace, generate_trace

# The figures, one line each (report.py defines them in full; docs/local-tools.md copies the definitions).
FIGURE_DEFINITIONS: dict[str, str] = {
    "wasted_gpu_hours": "GPU-hours billed that produced no kept progress: hung or idle time plus the work since "
    "the last checkpoint lost at each failure or stop, x instances x GPUs per instance",
    "wasted_dollars": "the same hours x instances x the on-demand price per instance-hour",
    "completion_delay_hours": "the extra wall-clock hours until a job's work is done, compared with a fault-free "
    "run (p50, p95 over jobs that completed, and the total)",
    "jobs_completed": "jobs whose work is done by the end of the trace's window",
    "detect_minutes": "per fault kind, from the moment the fault shows to its first detection, by anyone",
    "detect_minutes_by_cadence": "the hangs' (idle GPU, busy GPU, NCCL) detect_minutes by the cadence class of the "
    "job's own median log gap: "
    + "; ".join(
        f"{name}: {low:g} s to {'any' if math.isinf(high) else f'{high:g} s'}" for name, low, high in CADENCE_CLASSES
    )
    + " (p50, p95, hangs; not_parent_owned: the same without the jobs a parent owns)",
    "wasted_gpu_hours_lost_since_checkpoint_by_fault": "the work lost since the last checkpoint (GPU-hours), by the "
    "kind of each job's fault",
    "recover_minutes": "from the moment a transient fault shows to the moment training runs again",
    "duplicate_actions": "actions that succeeded on a target already acted on the same way",
    "wrong_actions": "a stop of a healthy job, or a relaunch of a user's error unfixed",
    "guard_cost": "trainguard's own AWS cost at list prices (fleet/prices.py), from what the run counted at its own "
    "clients; per guarded instance-hour (billed instance-hours of the guarded jobs) and as a share of their compute",
}


class Runnable(Protocol):
    """A strategy, its name read-only (the anchors are frozen dataclasses)."""

    @property
    def name(self) -> str: ...

    def run(self, trace: Trace) -> list[JobOutcome]: ...


@dataclass
class _Timed:
    """A strategy as `run_all` sees it, keeping its outcomes for the picture and saying on stderr when it ran."""

    inner: Runnable
    progress: TextIO | None
    outcomes: list[JobOutcome] = field(default_factory=list)
    name: str = field(init=False)

    def __post_init__(self) -> None:
        self.name = self.inner.name

    def run(self, trace: Trace) -> list[JobOutcome]:
        if self.progress is not None:
            print(f"trainguard simulate: {self.name} on {len(trace.jobs)} jobs ...", end="", file=self.progress)
            self.progress.flush()
        started = time.perf_counter()
        self.outcomes = self.inner.run(trace)
        if self.progress is not None:
            print(f" {time.perf_counter() - started:.1f} s", file=self.progress)
        return self.outcomes

    def describe(self) -> dict[str, Any]:
        describe: Callable[[], dict[str, Any]] | None = getattr(self.inner, "describe", None)
        return describe() if describe is not None else {}

    def guard_cost(self) -> dict[str, Any] | None:
        cost: Callable[[], dict[str, Any] | None] | None = getattr(self.inner, "guard_cost", None)
        return cost() if cost is not None else None


def strategies(*, trainguard: bool = True) -> list[Runnable]:
    chosen: list[Runnable] = list(anchor_strategies())
    if trainguard:
        from trainguard_local.fleet.trainguard_strategy import TrainguardStrategy

        chosen.append(TrainguardStrategy())
    return chosen


def simulate(
    jobs: int, hours: float, seed: int, *, trainguard: bool = True, progress: TextIO | None = None
) -> tuple[dict[str, Any], dict[str, list[JobOutcome]]]:
    """The report (run_all's, with the figures' definitions) and each strategy's outcomes."""
    return simulate_trace(generate_trace(jobs, hours, seed), strategies(trainguard=trainguard), progress)


def simulate_trace(
    trace: Trace, chosen: Sequence[Runnable], progress: TextIO | None = None
) -> tuple[dict[str, Any], dict[str, list[JobOutcome]]]:
    """Run the strategies on one trace: the report, with the figures' definitions, and their outcomes."""
    timed = [_Timed(strategy, progress) for strategy in chosen]
    report = run_all(trace, timed)
    report["definitions"] = dict(FIGURE_DEFINITIONS)
    return report, {t.name: t.outcomes for t in timed}


def run_command(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    """`trainguard simulate`: the answer is the report, plus the files written; text unless --json."""
    if args.jobs < 1:
        raise ValueError("--jobs: at least 1")
    report, outcomes = simulate(
        args.jobs, args.hours, args.seed, trainguard=not args.no_trainguard, progress=sys.stderr
    )
    written: dict[str, str] = {}
    if args.json_out is not None:
        Path(args.json_out).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        written["json"] = str(args.json_out)
    if args.png is not None:
        shown = "trainguard" if "trainguard" in outcomes else next(iter(outcomes))
        write_timeline(Path(args.png), outcomes[shown], report["trace"]["hours"])
        written[f"png ({shown})"] = str(args.png)
    args.render = render_summary  # main() prints this text
    return {**report, "written": written}, 0


def render_summary(answer: dict[str, Any]) -> str:
    """The table of figures per strategy, then the definitions and the files written."""
    trace = answer["trace"]
    lines = [
        f"trace: {trace['jobs']} jobs, {trace['hours']:g} hours, seed {trace['seed']}, "
        f"{len(answer['faults'])} faults, {trace['gpus']} GPUs",
        "",
    ]
    headers = (
        "strategy",
        "wasted GPU-h",
        "wasted $",
        "delay total h",
        "delay p95 h",
        "completed",
        *(f"{kind.value} p95 min" for kind in sorted(HANG_KINDS)),
        "duplicate",
        "wrong",
    )
    rows = [headers]
    for name, figures in answer["strategies"].items():
        delay = figures["completion_delay_hours"]
        rows.append(
            (
                name,
                _fmt(figures["wasted_gpu_hours"]),
                _fmt(figures["wasted_dollars"], 0),
                _fmt(delay["total"]),
                _fmt(delay["p95"]),
                f"{figures['jobs_completed']}/{trace['jobs']}",
                *(_fmt(figures["detect_minutes"].get(kind.value, {}).get("p95")) for kind in sorted(HANG_KINDS)),
                str(figures["duplicate_actions"]),
                str(figures["wrong_actions"]),
            )
        )
    lines += _table(rows)
    lines.append("")
    lines += guard_cost_lines(answer.get("guard_cost"))
    lines.append("")
    lines += [f"{name}: {text}" for name, text in answer.get("definitions", FIGURE_DEFINITIONS).items()]
    lines.append("the anchors (none, sagemaker_retry, debugger_rule) are models of their documentation; see 'sources'")
    if answer.get("written"):
        lines.append("")
        lines += [f"wrote {what}: {path}" for what, path in answer["written"].items()]
    return "\n".join(lines)


def guard_cost_lines(cost: dict[str, Any] | None) -> list[str]:
    """trainguard's own AWS cost, in a few lines: the total, per guarded instance-hour, the share of the
    guarded compute, and the three largest items."""
    if cost is None:
        return ["guard cost: not counted (trainguard did not run)"]
    share = cost["share_of_guarded_compute_percent"]
    verdict = "" if share is None else f" (goal: at most {cost['goal_share_percent']}%)"
    items = sorted(cost["breakdown"].items(), key=lambda item: -item[1]["dollars"])[:3]
    return [
        f"guard cost: ${cost['total_dollars']:,.2f} for {cost['guarded_instance_hours']:,.0f} guarded instance-hours"
        f" = ${_fmt(cost['dollars_per_guarded_instance_hour'], 6)} per instance-hour, "
        f"{_fmt(share, 4)}% of the guarded compute's ${cost['guarded_compute_dollars']:,.0f}{verdict}",
        "  largest: " + ", ".join(f"{name} ${entry['dollars']:,.2f}" for name, entry in items),
    ]


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = []
    for index, row in enumerate(rows):
        cells = [
            cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
        if index == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


def _fmt(value: float | None, decimals: int = 1) -> str:
    return "-" if value is None else f"{value:,.{decimals}f}"
