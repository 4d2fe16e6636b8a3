"""`make demo`: the fleet demo shows every fault kind, trainguard's SNS messages as published, the figures,
its own cost, and writes the timelines and the report."""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path

import pytest

from trainguard_local.demo.fleet import DEMO_JOBS, FALLBACK_WORDS, ROW_HEIGHT_PX, demo_trace, run_fleet_demo
from trainguard_local.fleet.timeline_png import PNG_SIGNATURE, WIDTH
from trainguard_local.fleet.trace import FaultKind

pytestmark = pytest.mark.slow


def test_the_demo_trace_has_every_fault_kind_and_a_healthy_job() -> None:
    trace = demo_trace()
    assert len(trace.jobs) == DEMO_JOBS
    assert sorted(f.kind for f in trace.faults) == sorted(FaultKind)  # each kind once
    assert sum(1 for job in trace.jobs if trace.fault_of(job.name) is None) == 1


def test_the_fleet_demo_shows_what_trainguard_did_and_writes_its_files(tmp_path: Path) -> None:
    lines: list[str] = []
    progress = io.StringIO()
    shown = run_fleet_demo(tmp_path / "demo-out", say=lines.append, progress=progress)
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
    assert "guard cost: $" in out and "fleet clock +" in progress.getvalue()

    # Issue 14: a chatty job stopped minutes into its hang, a slow-epoch job left alone, a checkpoint warning.
    hang = guarded["detect_minutes_by_cadence"]["under 1 min"]
    assert hang["hangs"] >= 1 and hang["p95"] is not None and hang["p95"] <= 10, hang
    assert "one line per 40-minute epoch: silent that long, past the fixed 30 min: left alone" in out
    assert any("checkpoints have stopped reaching S3" in n["subject"] for n in notifications)

    for name in ("png (trainguard)", "png (none)"):
        data = Path(shown["written"][name]).read_bytes()
        assert data.startswith(PNG_SIGNATURE)
        width, height = struct.unpack(">II", data[16:24])  # IHDR, the first chunk
        assert (width, height) == (WIDTH, DEMO_JOBS * ROW_HEIGHT_PX)
        assert shown["written"][name] in out
    written = json.loads(Path(shown["written"]["json"]).read_text())
    assert written["guard_cost"] == report["guard_cost"] and len(written["notifications"]) == len(notifications)
