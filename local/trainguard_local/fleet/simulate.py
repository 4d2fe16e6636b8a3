"""`trainguard simulate`: one seeded trace, the anchors and trainguard on it in one run, a summary, and on
request a JSON report (--json), the timeline of no guard above trainguard (--png) and the HTML report (--html).

The command line (lambdas/trainguard/cli.py) imports this module only when the command runs: the
Lambda asset does not contain trainguard_local.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from trainguard_local.fleet.anchors import anchor_strategies
from trainguard_local.fleet.benchmark_chart import benchmark_chart_png
from trainguard_local.fleet.html_report import Picture, ReportPage, write_html
from trainguard_local.fleet.model import JobOutcome, Strategy
from trainguard_local.fleet.report import run_all
from trainguard_local.fleet.stories import as_sent
from trainguard_local.fleet.summary import FIGURE_DEFINITIONS, render_summary
from trainguard_local.fleet.timeline import TIMELINE_COLOURS, Panel, timeline_png
from trainguard_local.fleet.trainguard_run.usage import Notification
from trainguard_local.simulation.trace import Trace, generate_trace

if TYPE_CHECKING:  # the strategy module starts the stand-in: imported when trainguard runs
    from trainguard_local.fleet.trainguard_strategy import RunRecord


@dataclass
class _Timed:
    """A strategy as `run_all` sees it, keeping its outcomes for the picture and saying on stderr when it ran."""

    inner: Strategy
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


def strategies(*, trainguard: bool = True, with_leave: bool = False) -> list[Strategy]:
    """The anchors, trainguard unless not asked, and trainguard with its owners' leave to act on findings if asked."""
    chosen: list[Strategy] = list(anchor_strategies())
    if trainguard:
        from trainguard_local.fleet.trainguard_strategy import TrainguardStrategy, with_leave_to_act

        chosen += [TrainguardStrategy(), *([with_leave_to_act()] if with_leave else [])]
    return chosen


def simulate_trace(
    trace: Trace, chosen: Sequence[Strategy], progress: TextIO | None = None
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
    trace = generate_trace(args.jobs, args.hours, args.seed)
    chosen = strategies(trainguard=not args.no_trainguard, with_leave=args.with_leave)
    report, outcomes = simulate_trace(trace, chosen, progress=sys.stderr)
    written: dict[str, str] = {}
    if args.json_out is not None:
        Path(args.json_out).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        written["json"] = str(args.json_out)
    timeline = comparison_png(report, outcomes) if args.png or args.html else b""
    if args.png is not None:
        Path(args.png).write_bytes(timeline)
        written["png"] = str(args.png)
    if args.html is not None:
        command = f"trainguard simulate --jobs {args.jobs} --hours {args.hours:g} --seed {args.seed}"
        command += " --no-trainguard" if args.no_trainguard else ""
        command += " --with-leave" if args.with_leave else ""
        page = ReportPage(
            title=f"trainguard on a simulated fleet: {args.jobs} jobs, {args.hours:g} h, seed {args.seed}",
            command=command,
            report=report,
            trace=trace,
            outcomes=outcomes,
            notifications=as_sent(trainguard_notifications(chosen)),
            pictures=report_pictures(report, timeline),
        )
        write_html(Path(args.html), page)
        written["html"] = str(args.html)
    args.render = render_summary  # main() prints this text
    return {**report, "written": written}, 0


def trainguard_notifications(chosen: Sequence[Strategy]) -> list[Notification]:
    """The SNS messages trainguard published in its run; none when it did not run."""
    for strategy in chosen:
        run: RunRecord | None = getattr(strategy, "last_run", None)
        if run is not None:
            return run.notifications
    return []


def comparison_panels(report: dict[str, Any], outcomes: dict[str, list[JobOutcome]]) -> list[Panel]:
    """No guard above trainguard; no guard alone when trainguard did not run."""
    names = ["none", "trainguard"] if "trainguard" in outcomes else ["none"]
    return [Panel(name, outcomes[name], report["strategies"][name]) for name in names]


def comparison_png(report: dict[str, Any], outcomes: dict[str, list[JobOutcome]]) -> bytes:
    """The timeline of comparison_panels, on one time axis, as PNG bytes."""
    trace, panels = report["trace"], comparison_panels(report, outcomes)
    heading = f"{trace['jobs']} jobs over {trace['hours']:g} h (seed {trace['seed']}): " + " above ".join(
        panel.strategy for panel in panels
    )
    return timeline_png(panels, trace["hours"], heading)


def timeline_strategies(report: dict[str, Any]) -> str:
    """What the timeline shows, in words (comparison_panels)."""
    if "trainguard" in report["strategies"]:
        return "no guard above trainguard on one time axis"
    return "no guard only (trainguard did not run)"


def report_pictures(report: dict[str, Any], timeline: bytes) -> list[Picture]:
    """The HTML report's pictures: the timeline (comparison_png's) and the strategies' bars."""
    return [
        Picture(f"The timeline: one row per job, {timeline_strategies(report)}. {TIMELINE_COLOURS}", timeline),
        Picture(
            "Wasted GPU-hours per strategy (hung or idle, and work lost since the last checkpoint), and the "
            "completion delay by fault kind",
            benchmark_chart_png(report),
        ),
    ]
