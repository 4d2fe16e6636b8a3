"""`make demo`: the fleet demo shows every fault kind, trainguard's SNS messages as published, the figures,
its own cost, and writes the timeline, the HTML report (opened here in headless Chromium) and the JSON report."""

from __future__ import annotations

import base64
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from matplotlib.image import imread

from tests.headless_chromium import chromium_path, render
from trainguard_local.demo.fleet import DEMO_JOBS, FALLBACK_WORDS, demo_trace, run_fleet_demo
from trainguard_local.fleet.summary import strategy_rows
from trainguard_local.simulation.fault_table import FaultKind

pytestmark = pytest.mark.slow
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class DemoRun:
    shown: dict[str, Any]
    lines: list[str]
    progress: str


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """One run of the fleet demo for the module's tests (about 10 s)."""
    lines: list[str] = []
    progress = io.StringIO()
    shown = run_fleet_demo(tmp_path_factory.mktemp("demo") / "demo-out", say=lines.append, progress=progress)
    return DemoRun(shown, lines, progress.getvalue())


def test_the_demo_trace_has_every_fault_kind_and_a_healthy_job() -> None:
    trace = demo_trace()
    assert len(trace.jobs) == DEMO_JOBS
    assert sorted(f.kind for f in trace.faults) == sorted(FaultKind)  # each kind once
    assert sum(1 for job in trace.jobs if trace.fault_of(job.name) is None) == 1


def test_the_fleet_demo_shows_what_trainguard_did_and_writes_its_files(demo_run: DemoRun) -> None:
    shown, lines = demo_run.shown, demo_run.lines
    out = "\n".join(lines)

    report = shown["report"]
    assert {f["kind"] for f in report["faults"]} == {kind.value for kind in FaultKind}
    guarded = report["strategies"]["trainguard"]
    assert guarded["duplicate_actions"] == 0 and guarded["wrong_actions"] == 0
    assert guarded["run"]["problems"] == [] and guarded["run"]["fell_back_to_a_model"] == {}
    assert guarded["jobs_completed"] > report["strategies"]["none"]["jobs_completed"]
    assert report["guard_cost"]["meets_goal"] is True

    notifications = shown["notifications"]
    outcomes = {n["attributes"]["outcome"] for n in notifications}
    assert {"relaunched", "notified", "stall-stopped"} <= outcomes
    # The three fallbacks, each in the message that says what it did and, for on-demand, what it costs.
    said = "\n".join(n["message"] for n in notifications)
    assert "as InstancePreferences (" in said and "SageMaker launches on the first one with capacity" in said
    assert "the relaunch runs on on-demand instances" in said and "on-demand costs about $" in said
    assert "whose quota has room; the request stays open" in said
    for words in FALLBACK_WORDS:  # shown in full in the demo's output
        assert any(words in line for line in lines)
    for n in notifications:  # every message listed, and the full text of one of each outcome
        assert n["subject"] in out
    assert all(
        any(n["message"].splitlines()[0] in out for n in notifications if n["attributes"]["outcome"] == o)
        for o in outcomes
    )
    assert "guard cost: $" in out and "trainguard's run: fleet clock" in demo_run.progress
    assert "demo: trainguard's run: 24 h of fleet time done" in demo_run.progress

    # Issue 14: a chatty job stopped minutes into its hang, a slow-epoch job left alone, a checkpoint warning.
    hang = guarded["detect_minutes_by_cadence"]["under 1 min"]
    assert hang["hangs"] >= 1 and hang["p95"] is not None and hang["p95"] <= 10, hang
    assert "one line per 40-minute epoch: silent that long, past the fixed 30 min: left alone" in out
    assert any("checkpoints have stopped reaching S3" in n["subject"] for n in notifications)

    png = Path(shown["written"]["png"]).read_bytes()
    assert png.startswith(PNG_SIGNATURE) and shown["written"]["png"] in out
    height, width, _ = imread(io.BytesIO(png)).shape
    assert width == 1400 and height > 2 * DEMO_JOBS * 20  # no guard above trainguard, a row per job each
    assert shown["written"]["html"] in out
    page = Path(shown["written"]["html"]).read_text()
    assert f'<img src="data:image/png;base64,{base64.b64encode(png).decode()}"' in page  # the same picture
    written = json.loads(Path(shown["written"]["json"]).read_text())
    assert written["guard_cost"] == report["guard_cost"] and len(written["notifications"]) == len(notifications)


def test_the_demo_report_opens_in_headless_chromium_with_its_pictures_and_table(demo_run: DemoRun) -> None:
    if chromium_path() is None:
        pytest.skip("Chromium is not installed: `make setup` installs Debian's chromium where apt-get runs as root")
    html = Path(demo_run.shown["written"]["html"])
    screenshot = html.with_name("report-screenshot.png")

    page = render(html, screenshot=screenshot)

    assert [image.src_scheme for image in page.images] == ["data", "data"]
    assert all(image.complete and image.natural_width >= 1000 for image in page.images), page.images
    assert "The timeline" in page.images[0].alt and "Wasted GPU-hours" in page.images[1].alt
    report = demo_run.shown["report"]
    headers, *rows = strategy_rows(report)
    assert list(headers) in page.tables
    for row in rows:  # each strategy's figures, as a reader sees them
        assert "\t".join(row) in page.text
    for notification in demo_run.shown["notifications"]:
        assert notification["subject"] in page.text
    assert {urlsplit_scheme(url) for url in page.requested_urls} <= {"file", "data"}  # nothing from the network
    assert page.console_errors == []
    assert screenshot.read_bytes().startswith(PNG_SIGNATURE)


def urlsplit_scheme(url: str) -> str:
    return url.split(":", 1)[0]
