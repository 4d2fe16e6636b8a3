"""`make demo`: the fleet demo shows every fault kind, trainguard's SNS messages as published, the figures,
its own cost, and writes the timeline, the HTML report (opened here in headless Chromium) and the JSON report."""

from __future__ import annotations

import base64
import io
import json
import re
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from matplotlib.image import imread

from tests.headless_chromium import chromium_path, render
from trainguard.domain.checkpoints import format_duration
from trainguard.domain.log_rhythm import FLOOR_MINUTES as LOG_SILENCE_FLOOR_MINUTES
from trainguard.domain.progress_limits import PROGRESS_FLOOR_MINUTES
from trainguard.domain.user_text import shown
from trainguard_local.demo.fleet import DEMO_JOBS, DEMO_STEPS, FALLBACK_WORDS, demo_trace, run_fleet_demo
from trainguard_local.fleet.goals import goal_checks
from trainguard_local.fleet.stories import fault_words, longest_gap_minutes, reporting_words
from trainguard_local.fleet.summary import strategy_rows
from trainguard_local.simulation.catalogue import FAILURE_TEXTS
from trainguard_local.simulation.fault_table import FAULT_TABLE, Ending, FaultKind
from trainguard_local.simulation.job_spec import JobSpec
from trainguard_local.simulation.later_faults import sync_failure
from trainguard_local.simulation.reporting import HEARTBEAT_LINE, Reporting
from trainguard_local.simulation.trace import Fault, Trace

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
    # The three fallbacks, each in the message that says what it did and, for on-demand, what it costs: how many
    # times its spot runs, as no list price is confirmed (trainguard.domain.instance_prices).
    said = "\n".join(n["message"] for n in notifications)
    assert "as InstancePreferences (" in said and "SageMaker launches on the first one with capacity" in said
    assert "the relaunch runs on on-demand instances" in said
    assert re.search(r"so it costs about [\d.]+ times as much per hour of training", said)
    told = "\n".join(n["message"].split("\nLinks")[0] for n in notifications)  # the links have $-escapes
    assert "$" not in told and "unconfirmed" not in told
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
    assert "demo: step 1 of 2: trainguard's run, 24 h of fleet time, done" in demo_run.progress

    # Issue 14: a chatty job that reports nothing stopped minutes into its hang (by its learned log rhythm), a
    # slow-epoch job left alone, a checkpoint warning. (An NCCL timeout of a chatty job is a 30-min hang too.)
    idle_hang = scene_stops(
        demo_trace(), json.loads(Path(shown["written"]["json"]).read_text()), FaultKind.HANG_IDLE_GPU
    )
    assert idle_hang.job.reporting.reporting is Reporting.NONE and idle_hang.job.rhythm.log_every_seconds < 60
    # minutes of the fleet's virtual clock from the hang's strike to trainguard's stop (the report's), not wall time
    assert 0 <= idle_hang.fleet_clock_minutes <= 10, idle_hang.fleet_clock_minutes
    assert "its lines come up to 40 min apart, past the fixed 30 min: left alone" in out
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


FAILING = (Ending.FAILS, Ending.FAILS_AFTER_HANG, Ending.REFUSED_AT_LAUNCH)  # the endings with a FailureReason


def test_the_demos_progress_counts_steps_that_add_up(demo_run: DemoRun) -> None:
    """Each line names its step out of the same total, the steps come in order, the last one is reached, and the
    line after it says what was written (issue 26: "setup [1/4]" and never 2-4, then "step 1 of 1, 0%")."""
    steps = [(int(m[1]), int(m[2])) for m in re.finditer(r"step (\d+) of (\d+)", demo_run.progress)]
    assert {total for _, total in steps} == {DEMO_STEPS}
    assert [n for n, _ in steps] == sorted(n for n, _ in steps) and steps[-1][0] == DEMO_STEPS
    assert demo_run.progress.rstrip().splitlines()[-1].startswith("demo: wrote ")


def test_every_job_tells_one_story_in_the_demo_and_in_its_messages(demo_run: DemoRun) -> None:
    """Issue 25: what the demo prints about a job (its fault, its rhythm, its launches) and what trainguard's
    messages say about it (the failure quoted, its reading, the names of the launches, the log gaps, the
    checkpoint's age) come from the same record, for every job."""
    trace, out = demo_trace(), "\n".join(demo_run.lines)
    named_launches: list[str] = []
    gaps_read = ages_read = progress_read = 0  # the wording the checks below read must still be there
    for job in trace.jobs:
        fault = trace.fault_of(job.name)
        [listed] = [line for line in demo_run.lines if line.strip().startswith(f"{job.name} ") and " from +" in line]
        assert listed.endswith(fault_words(trace, job)) or f"{fault_words(trace, job)}  (tagged" in listed
        story = out.split(f"\n  {job.name}: ")[1].split("\n\n")[0]
        assert story.startswith(fault_words(trace, job))
        for n in [n for n in demo_run.shown["notifications"] if n["attributes"]["job_name"] == job.name]:
            text, category = n["message"], n["attributes"]["category"]
            assert fault is not None, f"{job.name} has no fault and yet: {n['subject']}"
            told = text.split("\nLinks")[0]
            named_launches += re.findall(r"(?:Relaunched it as|launched) (\S+-retry\d+)", told)
            for launch in re.findall(r"(\S+-retry\d+)", told):
                assert f"relaunch: {launch}" in story, (job.name, launch)
            failing = sync_failure(fault) if fault.kind is FaultKind.CHECKPOINT_SYNC_STOPPED else fault
            if n["attributes"]["event_type"] == "training-job-ended" and FAULT_TABLE[failing.kind].ending in FAILING:
                # as the message shows a job's own words: data, never markup (domain/user_text.py)
                quoted = " ".join(f"Failure reason: {shown(failing.failure_reason or '')}".split())
                assert quoted in " ".join(text.split())  # the text the trace drew, quoted
                texts = FAULT_TABLE[failing.kind].failure_texts
                assert texts is not None and category in FAILURE_TEXTS[texts][0].split("/")
                assert f"{texts} at +" in story.splitlines()[0]  # the demo names the failure the message reads
            if gaps := re.search(rf"the longest was ({DURATION})", text):  # what trainguard learned of its rhythm
                gaps_read += 1
                assert minutes(gaps[1]) <= longest_gap_minutes(job) + 1, (job.name, gaps[1], longest_gap_minutes(job))
            progress_read += progress_told_as_listed(job, n, listed, story)
            if age := re.search(r"[Nn]ewest checkpoint is (\d+) min old", text):
                ages_read += 1
                since_strike = (n["at_hours"] - fault.strikes_at) * 60
                if fault.kind is not FaultKind.CHECKPOINT_SYNC_STOPPED:
                    assert int(age[1]) <= job.checkpoint_every_minutes + since_strike + 1, (job.name, age[1])
    assert len(named_launches) == len(set(named_launches))  # one name per launch
    assert gaps_read and ages_read and progress_read >= 3, (gaps_read, ages_read, progress_read)


DURATION = r"\d+ (?:s|min)"  # trainguard.domain.checkpoints.format_duration, under two hours


def minutes(duration: str) -> float:
    figure, unit = duration.split()
    return int(figure) / 60 if unit == "s" else float(figure)


def progress_told_as_listed(job: JobSpec, n: dict[str, Any], listed: str, story: str) -> int:
    """Issue 27: a stall message judged by the job's progress names a job the demo lists as reporting its steps; the
    interval it learned is the job's cadence; the time since the last step, or since the phase began, is the time
    the demo says the hang struck before the stop; an announced phase's expectation is the one its line said. 1 when
    the message was judged by progress, else 0."""
    text = n["message"]
    if "Progress rule for this job" not in text:
        return 0
    assert job.reporting.reporting is not Reporting.NONE and f", {reporting_words(job)}  " in listed, listed
    detected = re.search(rf"\+{n['at_hours']:5.2f} h  trainguard detected \w+ \(([\d.]+) min after it\)", story)
    assert detected is not None, (job.name, n["at_hours"], story)  # the stop in the job's story, at the message's time
    since_strike = float(detected[1])
    if learned := re.search(rf"between advancing steps were at most ({DURATION})", text):
        assert minutes(learned[1]) * 60 == job.rhythm.log_every_seconds, (job.name, learned[1])
    quiet = re.search(rf"(?:No advancing step for|has run) ({DURATION})", text)
    assert quiet is not None, text
    assert abs(minutes(quiet[1]) - since_strike) <= 1, (job.name, quiet[1], since_strike)
    if phase := re.search(rf"past its allowance of {DURATION}: ({DURATION}) expected", text):
        # a hang in a phase names its expectation in the story; another hang that struck in a save, the save's length
        expect = re.search(r"expect=(\d+)", story.splitlines()[0])
        seconds = int(expect[1]) if expect else round(job.rhythm.checkpoint_write_minutes * 60)
        assert format_duration(timedelta(seconds=seconds)) == phase[1], (job.name, phase[1])
    return 1


@dataclass(frozen=True)
class SceneStop:
    job: JobSpec
    fleet_clock_minutes: float  # hang's start to trainguard's stop on the fleet's virtual clock (report.json)
    message: str


def scene_stops(trace: Trace, written: dict[str, Any], kind: FaultKind) -> SceneStop:
    """The job whose fault is `kind`, its one hang's minutes to detection in the report (each kind strikes once, so
    its class's figures are the job's own), and trainguard's one stall-stopped message about it."""
    [fault] = [f for f in trace.faults if f.kind is kind]
    [job] = [job for job in trace.jobs if job.name == fault.job_name]
    by_reporting = written["strategies"]["trainguard"]["detect_minutes_by_reporting"]
    figures = by_reporting[job.reporting.reporting.value]["by_kind"][kind.value]
    assert figures["hangs"] == 1 and figures["p50"] == figures["p95"], figures
    [stop] = [
        n
        for n in written["notifications"]
        if n["attributes"]["job_name"] == job.name and n["attributes"]["outcome"] == "stall-stopped"
    ]
    return SceneStop(job, figures["p95"], stop["message"])


def test_the_demo_shows_issue_27s_scenes(demo_run: DemoRun) -> None:
    """Issue 27's Done-when: "`make demo` shows a chatty reporting job stopped in minutes, a long announced save left
    alone, and a livelock stopped", read from the report the demo wrote (report.json) and what it printed."""
    trace, out = demo_trace(), "\n".join(demo_run.lines)
    written = json.loads(Path(demo_run.shown["written"]["json"]).read_text())
    notifications = written["notifications"]
    assert written["strategies"]["trainguard"]["wrong_actions_by_reporting"] == dict.fromkeys(
        [r.value for r in Reporting], 0
    )

    # busy GPUs: silence alone would wait 30 min. Every minute below is the fleet's virtual clock, not wall time.
    busy = scene_stops(trace, written, FaultKind.HANG_BUSY_GPU)
    assert busy.job.reporting.reporting is Reporting.PROGRESS and busy.job.rhythm.log_every_seconds < 60
    assert 0 <= busy.fleet_clock_minutes <= 5 and "Progress rule for this job" in busy.message, busy

    [healthy] = [job for job in trace.jobs if trace.fault_of(job.name) is None]
    save = healthy.rhythm.checkpoint_write_minutes
    assert healthy.reporting.reporting is Reporting.PROGRESS and healthy.rhythm.announces_phases
    assert save > max(PROGRESS_FLOOR_MINUTES, LOG_SILENCE_FLOOR_MINUTES), save  # past both rules' floors
    assert not [n for n in notifications if n["attributes"]["job_name"] == healthy.name]  # left alone, no message
    story = out.split(f"\n  {healthy.name}: ")[1].split("\n\n")[0]
    assert f"checkpoint saves of {save:g} min, each announced by 'trainguard:phase begin=checkpoint expect=" in story
    done = f"done at +{healthy.fault_free_completion_at:.2f} h (0.00 h late)"
    assert story.rstrip().endswith(f"{done}; with no guard: {done}"), story

    livelock = scene_stops(trace, written, FaultKind.LIVELOCK)
    assert livelock.job.reporting.reporting is not Reporting.NONE
    assert 0 <= livelock.fleet_clock_minutes <= 10 and f"UTC: {HEARTBEAT_LINE}" in livelock.message, livelock

    in_phase = scene_stops(trace, written, FaultKind.HANG_IN_PHASE)  # judged by the save it announced
    assert "The job announced a long phase" in in_phase.message and in_phase.fleet_clock_minutes <= 10, in_phase
    for scene in (busy, livelock, in_phase):  # each stop in the job's story, at the message's time
        told = out.split(f"\n  {scene.job.name}: ")[1].split("\n\n")[0]
        minutes = scene.fleet_clock_minutes
        assert re.search(rf"trainguard detected \w+ \({minutes:.1f} min after it\)", told), (told, minutes)


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
    # Issue 26: what a reader sees first is that this is a simulation, and of what; then what trainguard changes.
    top = page.text[: page.text.index("What trainguard changes")]
    assert "This page is a simulation, not a measurement of a real fleet." in top
    assert f"It simulates {DEMO_JOBS} training jobs" in top and "seed 15" in top
    assert page.text.index("What trainguard changes") < page.text.index("The strategies")
    assert all(header and "_" not in header for table in page.tables for header in table), page.tables  # words
    checks = goal_checks(report)
    missed = [check for check in checks if check.met is False]
    assert missed, "the demo's trainguard misses some goals: the page must say which"
    assert f"misses {len(missed)} of its {len(checks)} goals" in page.text
    for check in missed:
        assert f"Missed: {check.goal} (issue {check.issue}): {check.measured}" in page.text
    assert "\nSources\n" in page.text and "median 4 h" in page.text  # the sources, and the person's assumption
    assert {urlsplit_scheme(url) for url in page.requested_urls} <= {"file", "data"}  # nothing from the network
    assert page.console_errors == []
    assert screenshot.read_bytes().startswith(PNG_SIGNATURE)


def urlsplit_scheme(url: str) -> str:
    return url.split(":", 1)[0]


def test_the_demo_shows_a_degraded_host_named_and_a_diverged_run_stopped_with_leave(demo_run: DemoRun) -> None:
    """Issue 28's Done-when: "`make demo` shows a degraded host found and named, and a diverged run stopped with the
    owner's leave", read from the report the demo wrote and what it printed."""
    trace, out = demo_trace(), "\n".join(demo_run.lines)
    written = json.loads(Path(demo_run.shown["written"]["json"]).read_text())
    [slow] = [f for f in trace.faults if f.kind is FaultKind.DEGRADED_HOST]
    [diverged] = [f for f in trace.faults if f.kind is FaultKind.DIVERGED]

    def told(fault: Fault) -> list[dict[str, Any]]:
        return [n for n in written["notifications"] if n["attributes"]["job_name"] == fault.job_name]

    [found] = told(slow)
    assert (
        found["attributes"]["outcome"] == "slowdown-found"
        and f"algo-{slow.slow_host + 1}, most likely" in found["message"]
    )
    assert f"runs {slow.slowdown_factor:.1f} times slower" in found["subject"]
    [stopped, *_] = told(diverged)
    assert stopped["attributes"]["outcome"] == "divergence-stopped" and "stopped" in stopped["subject"]
    assert not [n for n in told(diverged) if n["attributes"]["outcome"] == "relaunched"]  # never relaunched
    found_in = written["strategies"]["trainguard"]["findings_found"]
    assert found_in["degraded_host"]["found"] == 1 and found_in["degraded_host"]["p95"] <= 20
    assert found_in["diverged"]["found"] == 1 and found_in["diverged"]["p95"] <= 5
    story = out.split(f"\n  {diverged.job_name}: ")[1].split("\n\n")[0]
    assert "trainguard: stop" in story and "person: relaunch: after a fix" in story
