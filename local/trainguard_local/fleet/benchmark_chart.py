"""The benchmark's picture, BENCHMARKS.png: the fleet report's two main figures per strategy, as bars.

Top: wasted GPU-hours per strategy, each bar stacked from the parts the report splits them into (hung or idle
time, work lost since the last checkpoint, the time a degraded host slowed away) and labelled with its total.
Bottom: the completion delay by the kind of each job's fault, one bar per strategy in each group. Strategies and
fault kinds are named in words (fleet/words.py). `benchmark_bars` reads the bars' values from the report;
`benchmark_figure` draws them with matplotlib's Agg backend (no pyplot, so no global state); `benchmark_chart_png`
gives the PNG's bytes at a fixed size, with no date or software version in them, so the same report gives the same
bytes, and `write_benchmark_chart` writes them to a file.
"""

from __future__ import annotations

import io
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import StrMethodFormatter

from trainguard_local.fleet.words import fault_name, strategy_name

WIDTH_INCHES, HEIGHT_INCHES, DPI = 12.0, 10.0, 100  # 1200 x 1000 pixels
# The parts of wasted_gpu_hours that fleet/report.py splits out, bottom to top, with their labels and colours.
# Hung in the timeline's red; lost work in ochre, since the timeline's orange means waiting for a person.
WASTED_PARTS = {
    "wasted_gpu_hours_hung_or_idle": ("hung or idle", "#dc1e1e"),
    "wasted_gpu_hours_lost_since_checkpoint": ("work lost since the last checkpoint", "#9a6700"),
    "wasted_gpu_hours_slowed": ("slowed by a degraded host", "#7b3fa0"),
}
OTHER_PART = ("the rest of wasted GPU-hours", "tab:gray")
# The report rounds each figure to 3 decimals: its parts may miss their total by this much, and that is no part.
ROUNDING = 0.01
STRATEGY_COLOURS = ("tab:blue", "tab:olive", "tab:purple", "tab:brown", "tab:green", "tab:cyan", "tab:pink")


@dataclass(frozen=True)
class WastedBars:
    """One stacked bar per strategy: each part's GPU-hours per strategy, bottom to top, and the totals."""

    strategies: tuple[str, ...]
    parts: dict[str, tuple[float, ...]]  # label -> one value per strategy
    colours: dict[str, str]  # label -> colour
    totals: tuple[float, ...]


@dataclass(frozen=True)
class DelayBars:
    """One group of bars per fault kind, one bar per strategy in each: total completion delay in hours."""

    fault_kinds: tuple[str, ...]
    hours: dict[str, tuple[float, ...]]  # strategy -> one value per fault kind


@dataclass(frozen=True)
class BenchmarkBars:
    trace: str  # "200 jobs, 72 h, seed 7"
    wasted: WastedBars
    delay: DelayBars


def benchmark_bars(report: dict[str, Any]) -> BenchmarkBars:
    """The bars of the picture, from a report of `run_all`. A part of wasted GPU-hours the report does not split
    out is a segment of its own, so each stack sums to `wasted_gpu_hours`."""
    figures = report["strategies"]
    names = tuple(figures)
    totals = tuple(float(figures[name]["wasted_gpu_hours"]) for name in names)
    parts = {label: tuple(float(figures[name][field]) for name in names) for field, (label, _) in WASTED_PARTS.items()}
    colours = {label: colour for label, colour in WASTED_PARTS.values()}
    rest = tuple(round(total - sum(values[i] for values in parts.values()), 3) for i, total in enumerate(totals))
    if any(value < -ROUNDING for value in rest):
        raise ValueError(f"the parts of wasted GPU-hours exceed their total: {dict(zip(names, rest, strict=True))}")
    if any(value > ROUNDING for value in rest):
        parts[OTHER_PART[0]] = rest
        colours[OTHER_PART[0]] = OTHER_PART[1]

    by_fault = {name: figures[name]["completion_delay_hours_by_fault"] for name in names}
    every_kind = sorted({kind for hours in by_fault.values() for kind in hours})
    kinds = tuple(kind for kind in every_kind if any(by_fault[name].get(kind) for name in names))
    delay = DelayBars(kinds, {name: tuple(float(by_fault[name].get(kind, 0.0)) for kind in kinds) for name in names})
    trace = report["trace"]
    return BenchmarkBars(
        trace=f"{trace['jobs']} jobs, {trace['hours']:g} h, seed {trace['seed']}",
        wasted=WastedBars(names, parts, colours, totals),
        delay=delay,
    )


def write_benchmark_chart(report: dict[str, Any], path: Path) -> None:
    """Draw the report's bars into one PNG at `path`."""
    path.write_bytes(benchmark_chart_png(report))


def benchmark_chart_png(report: dict[str, Any]) -> bytes:
    """The picture as PNG bytes (for a page that embeds it)."""
    buffer = io.BytesIO()
    benchmark_figure(report).savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()


def benchmark_figure(report: dict[str, Any]) -> Figure:
    """The picture, not yet saved: the wasted GPU-hours' axes, then the completion delay's."""
    bars = benchmark_bars(report)
    figure = Figure(figsize=(WIDTH_INCHES, HEIGHT_INCHES), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    wasted_axes, delay_axes = figure.subplots(2, 1, height_ratios=(1.0, 1.3))
    _draw_wasted(wasted_axes, bars.wasted, bars.trace)
    _draw_delay(delay_axes, bars.delay, bars.trace)
    return figure


def _draw_wasted(axes: Axes, bars: WastedBars, trace: str) -> None:
    positions = range(len(bars.strategies))
    bottoms = [0.0] * len(bars.strategies)
    container = None
    for label, values in bars.parts.items():
        container = axes.bar(positions, values, 0.6, bottom=bottoms, label=label, color=bars.colours[label])
        bottoms = [bottom + value for bottom, value in zip(bottoms, values, strict=True)]
    if container is not None:
        axes.bar_label(container, labels=[f"{total:,.1f}" for total in bars.totals], padding=3)
    axes.set_xticks(list(positions), [textwrap.fill(strategy_name(name), 16) for name in bars.strategies])
    axes.set_title(f"Wasted GPU-hours by strategy, by cause (simulated trace: {trace})")
    axes.set_xlabel("strategy")
    axes.set_ylabel("wasted GPU-hours")
    axes.margins(y=0.12)
    _grid_and_legend(axes, "what the hours were")


def _draw_delay(axes: Axes, bars: DelayBars, trace: str) -> None:
    group_width = 0.8
    width = group_width / max(1, len(bars.hours))
    for n, (strategy, hours) in enumerate(bars.hours.items()):
        offset = -group_width / 2 + (n + 0.5) * width
        positions = [k + offset for k in range(len(bars.fault_kinds))]
        colour = STRATEGY_COLOURS[n % len(STRATEGY_COLOURS)]
        axes.bar(positions, hours, width, label=strategy_name(strategy), color=colour)
    axes.set_xticks(
        range(len(bars.fault_kinds)), [fault_name(kind) for kind in bars.fault_kinds], rotation=25, ha="right"
    )
    axes.set_title(f"Completion delay by fault kind and strategy (simulated trace: {trace})")
    axes.set_xlabel("the kind of the job's fault (kinds with no delay under any strategy left out)")
    axes.set_ylabel("completion delay, total hours")
    axes.set_xlim(-0.6, len(bars.fault_kinds) - 0.4)
    _grid_and_legend(axes, "strategy")


def _grid_and_legend(axes: Axes, title: str) -> None:
    axes.yaxis.set_major_formatter(StrMethodFormatter("{x:,g}"))  # 1,000 and 0.5 alike
    axes.grid(axis="y", alpha=0.3)
    axes.set_axisbelow(True)
    axes.legend(title=title, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
