"""`trainguard simulate`: the report, the summary, the PNG timeline, the HTML report, and the same seed giving
the same figures."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from matplotlib.image import imread

from trainguard_cli.main import main
from trainguard_local.fleet.words import strategy_name

pytestmark = pytest.mark.slow

STRATEGIES = ("none", "sagemaker_retry", "debugger_rule", "aws_batch", "trainguard")
FIGURES = (
    "wasted_gpu_hours",
    "wasted_dollars",
    "completion_delay_hours",
    "jobs_completed",
    "detect_minutes",
    "recover_minutes",
    "duplicate_actions",
    "wrong_actions",
)
JOBS = 12


def _simulate(tmp_path: Path, name: str, *extra: str) -> tuple[int, dict[str, Any], Path]:
    report, png, html = (tmp_path / f"{name}.{suffix}" for suffix in ("json", "png", "html"))
    argv = ["simulate", "--jobs", str(JOBS), "--hours", "24", "--seed", "3", "--json", str(report), "--png", str(png)]
    code = main([*argv, "--html", str(html), *extra])
    return code, json.loads(report.read_text(encoding="utf-8")), png


def test_simulate_writes_the_report_the_summary_and_the_timeline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report, png = _simulate(tmp_path, "all")

    assert code == 0
    assert set(report["strategies"]) == set(STRATEGIES)
    for name in STRATEGIES:
        figures = report["strategies"][name]
        assert set(FIGURES) <= set(figures), name
        assert isinstance(figures["wasted_gpu_hours"], int | float) and figures["wasted_gpu_hours"] >= 0
        assert set(figures["completion_delay_hours"]) == {"p50", "p95", "total"}
    assert {k: report["trace"][k] for k in ("jobs", "hours", "seed")} == {"jobs": JOBS, "hours": 24, "seed": 3}
    assert report["faults"] and all({"job", "kind", "strikes_at_hours"} <= set(f) for f in report["faults"])
    cost, calls = report["guard_cost"], report["strategies"]["trainguard"]["guard_calls"]
    assert cost["total_dollars"] > 0
    assert cost["total_dollars"] == pytest.approx(sum(e["dollars"] for e in cost["breakdown"].values()), abs=1e-9)
    assert cost["api_calls_in_run"] == calls["made"]  # the calls priced are the calls the run made
    assert cost["guarded_instance_hours"] == calls["guarded_instance_hours"]
    per_hour = cost["total_dollars"] / cost["guarded_instance_hours"]
    assert cost["dollars_per_guarded_instance_hour"] == pytest.approx(per_hour, abs=1e-8)

    out, err = capsys.readouterr()
    assert all(name in out for name in STRATEGIES) and "wasted GPU-h" in out and "wasted_gpu_hours:" in out
    assert "guard cost: $" in out and "per instance-hour" in out
    assert len([line for line in err.splitlines() if line.startswith("trainguard simulate:")]) == len(STRATEGIES)

    height, width, _ = imread(io.BytesIO(png.read_bytes())).shape
    assert width == 1400 and height > 2 * JOBS * 12  # two panels of a row per job, at least 12 pixels a row

    page = png.with_suffix(".html").read_text(encoding="utf-8")
    assert page.count('<img src="data:image/png;base64,') == 2 and 'src="http' not in page
    named = [f"<td>{strategy_name(name)}</td>" for name in STRATEGIES]  # the strategies in words
    assert '<table id="strategies-table">' in page and all(cell in page for cell in named)
    summaries = dict(re.findall(r"<summary>([^:<]+): ([^<]*)</summary>", page))  # job -> its fault, as it plays out
    for fault in report["faults"]:
        told = summaries[fault["job"]]
        assert fault["kind"] in told or fault["kind"].replace("_", " ") in told, (fault, told)


def test_the_same_seed_gives_the_same_figures(tmp_path: Path) -> None:
    first = _simulate(tmp_path, "first", "--no-trainguard")
    second = _simulate(tmp_path, "second", "--no-trainguard")

    assert first[0] == second[0] == 0
    assert set(first[1]["strategies"]) == set(STRATEGIES[:4])
    assert "guard_cost" not in first[1]  # trainguard did not run: nothing of its own was counted
    assert first[1] == second[1]
    assert first[2].read_bytes() == second[2].read_bytes()
    assert first[2].with_suffix(".html").read_bytes() == second[2].with_suffix(".html").read_bytes()
    page = first[2].with_suffix(".html").read_text(encoding="utf-8")  # without trainguard: no guard alone, no messages
    assert "no guard only (trainguard did not run)" in page and "trainguard did not run (--no-trainguard)" in page
    anchors = ", ".join(strategy_name(name) for name in STRATEGIES[:4])
    assert 'id="notifications"' not in page and f"({anchors})" in page
