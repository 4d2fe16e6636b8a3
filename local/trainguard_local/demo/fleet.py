"""`make demo`: a day in the life of a small fleet, under trainguard and without it.

Thirteen training jobs over 24 hours of fleet time, one of each fault kind the simulator knows and one
healthy job (the fleet simulator's own trace generator, seed `DEMO_SEED`). The production handlers and
adapters run over them on the in-process stand-in, on a virtual clock (fleet/trainguard_strategy.py);
the same trace is also run without a guard, with SageMaker's RetryStrategy and with Debugger's
StalledTrainingRule (models of their documentation). The demo prints the trace, what happened to each
job under trainguard, the SNS messages trainguard published (the production code's own, as sent), the
figures of the five strategies and trainguard's own AWS cost; it writes two timelines (PNG) and the
JSON report.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from trainguard_local.fleet.anchors import anchor_strategies
from trainguard_local.fleet.model import JobOutcome
from trainguard_local.fleet.rhythm import JobRhythm
from trainguard_local.fleet.simulate import render_summary, simulate_trace
from trainguard_local.fleet.timeline_png import write_timeline
from trainguard_local.fleet.trace import ALTERNATIVES, FaultKind, Trace, generate_trace

DEMO_JOBS, DEMO_HOURS, DEMO_SEED = 13, 24.0, 15
DEMO_SPOT_SHARE = 0.3  # enough spot jobs for a spot interruption
ROW_HEIGHT_PX = 24
COLOURS = (
    "green training, red hung, dark red failed or stopped, grey starting or queued, orange waiting for a "
    "person, purple waiting for a quota; black ticks: detections, blue ticks: actions"
)
Say = Callable[[str], None]
# What a message says when a fallback changed the relaunch (domain/fallbacks.py): each is shown in full once.
FALLBACK_WORDS = ("InstancePreferences", "on on-demand instances", "whose quota has room")


def demo_trace() -> Trace:
    """Every fault kind once (the generator gives each kind a job before drawing more), one healthy job; and the
    three fallbacks of today's SageMaker, each on the job whose wall it meets (fallbacks_shown)."""
    faulty = (DEMO_JOBS - 2) / DEMO_JOBS  # the drawn kinds; the checkpoint sync stop takes one of the two left
    trace = generate_trace(DEMO_JOBS, DEMO_HOURS, DEMO_SEED, spot_share=DEMO_SPOT_SHARE, fault_share=faulty)
    return rhythms_shown(fallbacks_shown(trace))


CHATTY = JobRhythm(log_every_seconds=10.0, checkpoint_write_minutes=1.0, announces_phases=True)
SLOW_EPOCHS = JobRhythm(log_every_seconds=2400.0, checkpoint_write_minutes=2.0)


def rhythms_shown(trace: Trace) -> Trace:
    """Two log rhythms at their extremes: the deadlocked data loader's job logs every 10 s (and announces its
    saves), so it is stopped minutes into its hang; the healthy job that falls silent logs once per 40-minute
    epoch, silent far longer than the fixed 30 minutes, and is left alone."""
    shown = {FaultKind.HANG_IDLE_GPU: CHATTY, FaultKind.SLOW_BUT_HEALTHY: SLOW_EPOCHS}
    rhythm_of = {f.job_name: shown[f.kind] for f in trace.faults if f.kind in shown}
    jobs = tuple(replace(job, rhythm=rhythm_of.get(job.name, job.rhythm)) for job in trace.jobs)
    return replace(trace, jobs=jobs)


def fallbacks_shown(trace: Trace) -> Trace:
    """The demo's jobs with no parent, and three owners' fallback tags where they meet a wall: the capacity
    error's job lists an alternative that has capacity (met by InstancePreferences), the spot job moves to
    on-demand after one spot failure, and the quota wall's job lists an alternative whose quota has room (it runs
    there while the increase is pending)."""
    jobs = {
        job.name: replace(job, owner="", owner_retries=False, launched_with_preferences=False) for job in trace.jobs
    }
    faults = []
    for fault in trace.faults:
        job = jobs[fault.job_name]
        alternative = (ALTERNATIVES[job.instance_type][0][0], job.instance_count)
        if fault.kind is FaultKind.CAPACITY_ERROR:
            jobs[job.name] = replace(job, fallback_types=(alternative,), on_demand_after=None)
            fault = replace(fault, alternatives_with_capacity=(alternative[0],))
        elif fault.kind is FaultKind.QUOTA_WALL:
            jobs[job.name] = replace(job, fallback_types=(alternative,), on_demand_after=None)
            fault = replace(fault, alternatives_with_quota_room=(alternative[0],))
        elif fault.kind is FaultKind.SPOT_INTERRUPTION:
            jobs[job.name] = replace(job, fallback_types=(), on_demand_after=1)
        else:
            jobs[job.name] = replace(job, fallback_types=(), on_demand_after=None)
        faults.append(fault)
    return replace(trace, jobs=tuple(jobs[job.name] for job in trace.jobs), faults=tuple(faults))


def run_fleet_demo(out_dir: Path, say: Say = print, progress: TextIO | None = sys.stderr) -> dict[str, Any]:
    """Run the demo; what it showed, for a test or --json: the report, the messages, the files written."""
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    from trainguard_local.fleet.trainguard_strategy import TrainguardStrategy

    trace = demo_trace()
    say(f"A fleet of {len(trace.jobs)} training jobs over {trace.hours:g} hours of fleet time (seed {trace.seed}):")
    say("one fault of each kind the simulator knows, and one healthy job. Times are hours on the fleet's clock.\n")
    for job in trace.jobs:
        fault = trace.fault_of(job.name)
        what = "no fault" if fault is None else f"{fault.kind.value} at +{fault.strikes_at:.2f} h"
        size = f"{job.instance_count:>2} x {job.instance_type:<16}"
        tags = [f"fallback-types={'+'.join(f'{t}:{c}' for t, c in job.fallback_types)}"] if job.fallback_types else []
        tags += [f"on-demand-after={job.on_demand_after}"] if job.on_demand_after else []
        shown = f"  (tagged {', '.join(tags)})" if tags else ""
        every = job.rhythm.log_every_seconds
        logs = f"logs every {every:g} s" if every < 120 else f"logs every {every / 60:g} min"
        say(f"  {job.name:<28} {size} from +{job.submitted_at:5.2f} h  {logs:<19} {what}{shown}")
    say("\nThe production handlers and adapters, on the in-process stand-in (moto + simulated SageMaker):")
    guard = TrainguardStrategy(on_progress=_fleet_clock(trace.hours, progress))
    report, outcomes = simulate_trace(trace, [*anchor_strategies(), guard])
    if progress is not None:
        print(file=progress)
    assert guard.last_run is not None
    notifications: list[dict[str, Any]] = [
        {"at_hours": round(n.at, 3), "subject": n.subject, "message": n.message, "attributes": n.attributes}
        for n in guard.last_run.notifications
    ]

    say("\nWhat happened to each job under trainguard (and when its work was done, against no guard):")
    unguarded = {o.job.name: o for o in outcomes["none"]}
    for outcome in outcomes["trainguard"]:
        fault = trace.fault_of(outcome.job.name)
        say(f"\n  {outcome.job.name}: {'no fault' if fault is None else fault.kind.value}")
        for line in story(outcome):
            say(line)
        if fault is not None and fault.kind is FaultKind.SLOW_BUT_HEALTHY and not outcome.actions:
            say(f"    +{fault.strikes_at:5.2f} h  silent for {fault.silent_minutes:.0f} min, and healthy: left alone")
            if outcome.job.rhythm.log_every_seconds >= 1800:
                minutes = outcome.job.rhythm.log_every_seconds / 60
                say(f"    one line per {minutes:g}-minute epoch: silent that long, past the fixed 30 min: left alone")
        say(f"    {_done(outcome)}; with no guard: {_done(unguarded[outcome.job.name])}")

    say(f"\ntrainguard published {len(notifications)} SNS message(s):")
    for n in notifications:
        say(f"  +{n['at_hours']:5.2f} h  {n['subject']}")
    say("\nThe full text of the first message of each outcome:")
    told: set[str] = set()
    for n in notifications:
        fallback = next((m for m in FALLBACK_WORDS if m in n["message"]), "")
        outcome_kind = n["attributes"].get("outcome", "") + fallback
        if outcome_kind not in told:
            told.add(outcome_kind)
            say(f"\n  --- {n['subject']}  {n['attributes']}")
            say(textwrap.indent(n["message"], "    "))

    out_dir.mkdir(parents=True, exist_ok=True)
    written = {
        "png (trainguard)": out_dir / "timeline-trainguard.png",
        "png (none)": out_dir / "timeline-none.png",
        "json": out_dir / "report.json",
    }
    write_timeline(written["png (trainguard)"], outcomes["trainguard"], trace.hours, row_height=ROW_HEIGHT_PX)
    write_timeline(written["png (none)"], outcomes["none"], trace.hours, row_height=ROW_HEIGHT_PX)
    written["json"].write_text(json.dumps({**report, "notifications": notifications}, indent=2, sort_keys=True))
    say("\n" + render_summary({**report, "written": {k: str(v) for k, v in written.items()}}))
    say(f"the timelines: one row per job; {COLOURS}")
    return {"report": report, "notifications": notifications, "written": {k: str(v) for k, v in written.items()}}


def story(outcome: JobOutcome) -> list[str]:
    """What happened to one job: its detections and actions, in time order."""
    events: list[tuple[float, str]] = []
    for d in outcome.detections:
        events.append((d.detected_at, f"{d.detector} detected {d.fault_kind.value} ({d.minutes:.1f} min after it)"))
    for a in outcome.actions:
        refused = "" if a.succeeded else " (refused)"
        note = f": {textwrap.shorten(a.note, 160)}" if a.note else ""
        events.append((a.at, f"{a.actor}: {a.kind.value}{refused}{note}"))
    return [f"    +{at:5.2f} h  {text}" for at, text in sorted(events, key=lambda event: event[0])]


def _done(outcome: JobOutcome) -> str:
    if outcome.completed_at is None:
        return "never done"
    return f"done at +{outcome.completed_at:.2f} h ({outcome.completion_delay_hours or 0:.2f} h late)"


def _fleet_clock(hours: float, stream: TextIO | None) -> Callable[[float], None] | None:
    """The fleet's clock on `stream` while trainguard runs: a mark per virtual hour."""
    if stream is None:
        return None
    shown = [-1]

    def show(now: float) -> None:
        hour = int(now)
        if hour > shown[0]:
            shown[0] = hour
            bar = "#" * min(hour, int(hours))
            print(f"\r  fleet clock +{hour:>2} h of {hours:g} [{bar:<{int(hours)}}]", end="", file=stream, flush=True)

    return show
