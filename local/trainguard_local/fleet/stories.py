"""What a fleet run says in words: a line per job of the trace, and the story of each job under a strategy
(its detections and actions in time order, and when its work was done). `make demo` prints them; the HTML
report (fleet/html_report.py) shows the same lines."""

from __future__ import annotations

import textwrap
from itertools import pairwise
from typing import Any

from trainguard.domain.progress_limits import PROGRESS_FLOOR_MINUTES
from trainguard.domain.stalls import StallThresholds
from trainguard_local.fleet.model import JobOutcome
from trainguard_local.fleet.trainguard_run.usage import Notification
from trainguard_local.simulation.activity import LaunchActivity
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.reporting import LineKind, LineToken, Reporting, word
from trainguard_local.simulation.rhythm import Phase, phases
from trainguard_local.simulation.trace import JobSpec, Trace

FIXED_LIMIT_MINUTES = StallThresholds().stall_minutes  # the threshold with no tag and no rhythm learned
SAMPLED_HOURS = 6.0  # of a job's lines, when its longest gap is measured


def fault_words(trace: Trace, job: JobSpec) -> str:
    """The job's fault as it plays out: a quota wall's job first fails on a hardware fault; a stopped checkpoint
    sync is followed by a hardware failure."""
    fault = trace.fault_of(job.name)
    if fault is None:
        return "no fault"
    if fault.kind is FaultKind.QUOTA_WALL:
        return f"hardware_fault at +{fault.strikes_at:.2f} h, then its relaunch meets a quota wall ({fault.quota_name})"
    if fault.kind is FaultKind.CHECKPOINT_SYNC_STOPPED:
        fails_at = fault.strikes_at + fault.fails_at_work_hours - fault.at_work_hours
        return f"{fault.kind.value} at +{fault.strikes_at:.2f} h, then hardware_fault at +{fails_at:.2f} h"
    if fault.kind is FaultKind.LIVELOCK:
        every = _duration(job.rhythm.log_every_seconds)
        return f"{fault.kind.value} at +{fault.strikes_at:.2f} h (a heartbeat line every {every}, the step stuck)"
    if fault.kind is FaultKind.HANG_IN_PHASE and (phase := phase_at(job, fault.at_work_hours)) is not None:
        begin = phase_begin_line(job, phase)
        said = f" after {begin!r}" if begin else ", which it did not announce"
        return f"{fault.kind.value} at +{fault.strikes_at:.2f} h (in its {phase.minutes:g} min checkpoint save{said})"
    return f"{fault.kind.value} at +{fault.strikes_at:.2f} h"


def phase_at(job: JobSpec, progress: float) -> Phase | None:
    """The job's silent phase that starts at `progress` (hours of work), if one does."""
    found = phases(job.rhythm, job.checkpoint_every_minutes, progress - 1e-6, progress + 1e-6)
    return found[0] if found else None


def phase_begin_line(job: JobSpec, phase: Phase) -> str:
    """The line that announces a checkpoint save in the job's words, as trainguard reads it ('' when it says none)."""
    save = min(job.rhythm.checkpoint_write_minutes, phase.minutes)
    token = LineToken(LineKind.PHASE_BEGIN, 0, "checkpoint", round(60 * save))
    lines = word(job.reporting.dialect, token)[1:]  # after the step line
    return lines[0].strip() if lines else ""


def reporting_words(job: JobSpec) -> str:
    """How the job reports its progress (simulation/reporting.py), '' when it reports none."""
    reporting = job.reporting.reporting
    if reporting is Reporting.PROGRESS:
        return "steps by the progress contract"
    if reporting is Reporting.FRAMEWORK:
        return f"steps by {job.reporting.dialect.name}'s lines"
    return "steps by a tag rule" if reporting is Reporting.TAG_RULE else ""


def longest_gap_minutes(job: JobSpec) -> float:
    """The longest gap between the job's lines while it trains healthily (simulation/activity.py): its cadence,
    or less where its checkpoint saves and evaluations log a line before and after."""
    activity = LaunchActivity(job.rhythm, job.checkpoint_every_minutes, job.gpus_per_instance, 0.0)
    times = [at for at, _ in activity.lines(-1e-9, min(job.work_hours, SAMPLED_HOURS))]
    return max((b - a for a, b in pairwise(times)), default=0.0) * 60


def _duration(seconds: float) -> str:
    return f"{seconds:g} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def trace_line(trace: Trace, job: JobSpec) -> str:
    """One job of the trace: its size, when it is submitted, how often it logs, its fault and its tags."""
    size = f"{job.instance_count:>2} x {job.instance_type:<16}"
    tags = [f"fallback-types={'+'.join(f'{t}:{c}' for t, c in job.fallback_types)}"] if job.fallback_types else []
    tags += [f"on-demand-after={job.on_demand_after}"] if job.on_demand_after else []
    shown = f"  (tagged {', '.join(tags)})" if tags else ""
    every, longest = job.rhythm.log_every_seconds, longest_gap_minutes(job) * 60
    logs = f"logs every {_duration(every)}"
    logs += f", longest gap {_duration(longest)} (it logs around its saves)" if longest < every - 1 else ""
    logs += f", {reported}" if (reported := reporting_words(job)) else ""
    return f"{job.name:<28} {size} from +{job.submitted_at:5.2f} h  {logs:<19}  {fault_words(trace, job)}{shown}"


def job_story(trace: Trace, outcome: JobOutcome, unguarded: JobOutcome) -> list[str]:
    """One job under a strategy: its fault, what was detected and done, in time order, and when its work was
    done against the same job with no guard."""
    fault = trace.fault_of(outcome.job.name)
    lines = [f"{outcome.job.name}: {fault_words(trace, outcome.job)}"]
    lines += [f"  +{at:5.2f} h  {text}" for at, text in events(outcome)]
    if fault is not None and fault.kind is FaultKind.SLOW_BUT_HEALTHY and not outcome.actions:
        silent = f"silent for {fault.silent_minutes:.0f} min, and healthy: left alone"
        lines.append(f"  +{fault.strikes_at:5.2f} h  {silent}")
        if (gap := longest_gap_minutes(outcome.job)) > FIXED_LIMIT_MINUTES:
            lines.append(
                f"  its lines come up to {gap:.0f} min apart, past the fixed {FIXED_LIMIT_MINUTES} min: left alone"
            )
    if fault is None and not outcome.actions:
        lines += announced_saves_left_alone(outcome.job)
    lines.append(f"  {done_text(outcome)}; with no guard: {done_text(unguarded)}")
    return lines


def announced_saves_left_alone(job: JobSpec) -> list[str]:
    """A healthy job's checkpoint saves that it announces and that last longer than a step limit's floor: when the
    first starts, how many, the line before each, and that trainguard left them alone ([] for a job without)."""
    saves = phases(job.rhythm, job.checkpoint_every_minutes, 0.0, job.work_hours)
    if not saves or not (begin := phase_begin_line(job, saves[0])) or saves[0].minutes <= PROGRESS_FLOOR_MINUTES:
        return []
    first, minutes = job.submitted_at + job.startup_minutes / 60 + saves[0].at_progress, saves[0].minutes
    return [
        f"  +{first:5.2f} h  the first of its {len(saves)} checkpoint saves of {minutes:g} min, each announced by "
        f"{begin!r}: no step for {minutes:g} min each time, past the {PROGRESS_FLOOR_MINUTES:g} min floor of a step "
        "limit: left alone"
    ]


def events(outcome: JobOutcome) -> list[tuple[float, str]]:
    """A job's detections and actions, in time order, each with its fleet-clock hour."""
    happened: list[tuple[float, str]] = []
    for d in outcome.detections:
        happened.append((d.at, f"{d.detector} detected {d.fault_kind.value} ({d.minutes:.1f} min after it)"))
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
