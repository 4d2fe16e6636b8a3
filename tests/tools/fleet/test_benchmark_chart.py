"""BENCHMARKS.png (fleet/benchmark_chart.py): its bars are the report's figures, and the file is a PNG of a fixed
size that the same report writes byte for byte. The report is a small trace's, under the anchors only (milliseconds)."""

from __future__ import annotations

import copy
import struct
from pathlib import Path
from typing import Any

import pytest

from trainguard_local.fleet.anchors import anchor_strategies
from trainguard_local.fleet.benchmark_chart import (
    DPI,
    HEIGHT_INCHES,
    OTHER_PART,
    ROUNDING,
    WIDTH_INCHES,
    benchmark_bars,
    benchmark_figure,
    write_benchmark_chart,
)
from trainguard_local.fleet.report import run_all
from trainguard_local.fleet.words import fault_name, strategy_name
from trainguard_local.simulation.trace import generate_trace

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    return run_all(generate_trace(20, 24, 7), anchor_strategies())


def test_each_stack_sums_to_the_strategys_wasted_gpu_hours(report: dict[str, Any]) -> None:
    wasted = benchmark_bars(report).wasted
    figures = report["strategies"]
    assert wasted.strategies == tuple(figures)
    assert list(wasted.parts) == [
        "hung or idle",
        "work lost since the last checkpoint",
        "slowed by a degraded host",
    ]
    for n, name in enumerate(wasted.strategies):
        assert figures[name]["wasted_gpu_hours"] > 0
        assert wasted.totals[n] == figures[name]["wasted_gpu_hours"]
        assert wasted.parts["hung or idle"][n] == figures[name]["wasted_gpu_hours_hung_or_idle"]
        lost = wasted.parts["work lost since the last checkpoint"][n]
        assert lost == figures[name]["wasted_gpu_hours_lost_since_checkpoint"]
        assert sum(values[n] for values in wasted.parts.values()) == pytest.approx(wasted.totals[n], abs=ROUNDING)


def test_wasted_hours_the_report_does_not_split_out_are_a_segment_of_their_own(report: dict[str, Any]) -> None:
    changed = copy.deepcopy(report)
    changed["strategies"]["aws_batch"]["wasted_gpu_hours"] += 100.0
    wasted = benchmark_bars(changed).wasted
    rest = wasted.parts[OTHER_PART[0]]
    assert rest[wasted.strategies.index("aws_batch")] == pytest.approx(100.0, abs=ROUNDING)
    assert [r for name, r in zip(wasted.strategies, rest, strict=True) if name != "aws_batch"] == pytest.approx(
        [0.0, 0.0, 0.0], abs=ROUNDING
    )  # the others' parts add up to their totals, to the report's rounding
    for n, total in enumerate(wasted.totals):
        assert sum(values[n] for values in wasted.parts.values()) == pytest.approx(total, abs=ROUNDING)


def test_parts_larger_than_their_total_fail_loudly(report: dict[str, Any]) -> None:
    changed = copy.deepcopy(report)
    changed["strategies"]["none"]["wasted_gpu_hours_hung_or_idle"] += 1.0
    with pytest.raises(ValueError, match="exceed their total"):
        benchmark_bars(changed)


def test_the_delay_bars_are_the_reports_delay_by_fault(report: dict[str, Any]) -> None:
    delay = benchmark_bars(report).delay
    figures = report["strategies"]
    with_delay = {
        kind for f in figures.values() for kind, hours in f["completion_delay_hours_by_fault"].items() if hours
    }
    assert set(delay.fault_kinds) == with_delay and "none" not in delay.fault_kinds
    assert list(delay.hours) == list(figures)
    for name, hours in delay.hours.items():
        by_fault = figures[name]["completion_delay_hours_by_fault"]
        assert hours == tuple(by_fault.get(kind, 0.0) for kind in delay.fault_kinds)


def test_the_drawn_bars_have_the_reports_heights(report: dict[str, Any]) -> None:
    wasted_axes, delay_axes = benchmark_figure(report).axes
    figures = report["strategies"]
    tops = [bar.get_y() + bar.get_height() for bar in wasted_axes.containers[-1]]
    assert tops == pytest.approx([f["wasted_gpu_hours"] for f in figures.values()], abs=ROUNDING)
    labels = [text.get_text() for text in wasted_axes.texts]
    assert labels == [f"{f['wasted_gpu_hours']:,.1f}" for f in figures.values()]
    kinds = benchmark_bars(report).delay.fault_kinds
    assert [tick.get_text() for tick in delay_axes.get_xticklabels()] == [fault_name(kind) for kind in kinds]
    drawn = {c.get_label(): [bar.get_height() for bar in c] for c in delay_axes.containers}
    assert drawn == {  # each strategy named in words in the legend
        strategy_name(name): [f["completion_delay_hours_by_fault"].get(kind, 0.0) for kind in kinds]
        for name, f in figures.items()
    }
    ticks = [tick.get_text().replace("\n", " ") for tick in wasted_axes.get_xticklabels()]
    assert ticks == [strategy_name(name) for name in figures] and not any("_" in tick for tick in ticks)
    assert "simulated trace: 20 jobs, 24 h, seed 7" in wasted_axes.get_title()


def test_the_chart_is_a_png_of_a_fixed_size_written_the_same_each_time(report: dict[str, Any], tmp_path: Path) -> None:
    first, second = tmp_path / "first.png", tmp_path / "second.png"
    write_benchmark_chart(report, first)
    write_benchmark_chart(report, second)
    data = first.read_bytes()
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR"
    assert struct.unpack(">II", data[16:24]) == (int(WIDTH_INCHES * DPI), int(HEIGHT_INCHES * DPI))
    assert b"matplotlib" not in data.lower()
    assert second.read_bytes() == data
