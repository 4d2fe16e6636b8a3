"""What a fleet run says in words: a line per job of the trace, and the story of each job under a strategy
(its detections and actions in time order, and when its work was done). `make demo` prints them; the HTML
report (fleet/html_report.py) shows the same lines."""

from __future__ import annotations

import textwrap
from typing import Any

from trainguard_local.fleet.model import JobOutcome
from trainguard_local.fleet.trainguard_run.usage import Notification
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.trace import JobSpec, Trace

EPOCH_SECONDS = 1800  # a log line this rare is a line per epoch: the story says why its silence was left alone


def trace_line(trace: Trace, job: JobSpec) -> str:
    """One job of the trace: its size, when it is submitted, how often it logs, its fault and its tags."""
    fault = trace.fault_of(job.name)
    what = "no fault" if fault is None else f"{fault.kind.value} at +{fault.strikes_at:.2f} h"
    size = f"{job.instance_count:>2} x {job.instance_type:<16}"
    tags = [f"fallback-types={'+'.join(f'{t}:{c}' for t, c in job.fallback_types)}"] if job.fallback_types else []
    tags += [f"on-demand-after={job.on_demand_after}"] if job.on_demand_after else []
    shown = f"  (tagged {', '.join(tags)})" if tags else ""
    every = job.rhythm.log_every_seconds
    logs = f"logs every {every:g} s" if every < 120 else f"logs every {every / 60:g} min"
    return f"{job.name:<28} {size} from +{job.submitted_at:5.2f} h  {logs:<19} {what}{shown}"


def job_story(trace: Trace, outcome: JobOutcome, unguarded: JobOutcome) -> list[str]:
    """One job under a strategy: its fault, what was detected and done, in time order, and when its work was
    done against the same job with no guard."""
    fault = trace.fault_of(outcome.job.name)
    lines = [f"{outcome.job.name}: {'no fault' if fault is None else fault.kind.value}"]
    lines += [f"  +{at:5.2f} h  {text}" for at, text in events(outcome)]
    if fault is not None and fault.kind is FaultKind.SLOW_BUT_HEALTHY and not outcome.actions:
        silent = f"silent for {fault.silent_minutes:.0f} min, and healthy: left alone"
        lines.append(f"  +{fault.strikes_at:5.2f} h  {silent}")
        if outcome.job.rhythm.log_every_seconds >= EPOCH_SECONDS:
            minutes = outcome.job.rhythm.log_every_seconds / 60
            epoch = f"one line per {minutes:g}-minute epoch: silent that long, past the fixed 30 min: left alone"
            lines.append(f"  {epoch}")
    lines.append(f"  {done_text(outcome)}; with no guard: {done_text(unguarded)}")
    return lines


def events(outcome: JobOutcome) -> list[tuple[float, str]]:
    """A job's detections and actions, in time order, each with its fleet-clock hour."""
    happened: list[tuple[float, str]] = []
    for d in outcome.detections:
        happened.append((d.detected_at, f"{d.detector} detected {d.fault_kind.value} ({d.minutes:.1f} min after it)"))
    for a in outcome.actions:
        refused = "" if a.succeeded else " (refused)"
        note = f": {textwrap.shorten(a.note, 160)}" if a.note else ""
        happened.append((a.at, f"{a.actor}: {a.kind.value}{refused}{note}"))
    return sorted(happened, key=lambda event: event[0])


def done_text(outcome: JobOutcome) -> str:
    if outcome.completed_at is None:
        return "never done"
    return f"done at +{outcome.completed_at:.2f} h ({outcome.completion_delay_hours or 0:.2f} h late)"


def as_sent(notifications: list[Notification]) -> list[dict[str, Any]]:
    """trainguard's SNS messages as published, each with its fleet-clock hour."""
    return [
        {"at_hours": round(n.at, 3), "subject": n.subject, "message": n.message, "attributes": n.attributes}
        for n in notifications
    ]
