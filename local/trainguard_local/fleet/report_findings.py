"""The report's figures for issue 28's faults, a degraded host and a diverged run: what every kind of fault wastes
(a slow launch wastes the share of its time it makes no progress in), the notices of a slowdown or a divergence
on a launch that had no such fault, and the rules' audit of every healthy stretch of the trace.

The audit (`findings_audit`) folds each reporting job's lines of its first launch, up to its fault's strike (the whole
work for a job without one, a healthy silence included), through the product's own reader and rules
(progress_lines.read_progress_line, progress_watch.advance) and asks the product's judges after every line, where the
prober asks once a minute: a finding it would make anywhere on those lines is counted. The run's own
`false_findings` count what trainguard told, on the lines it was delivered when it judged (a healthy job's lines
reach it at its phases and in other jobs' windows: fleet/trainguard_run/job_logs.py), so the audit is the stricter of
the two."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from trainguard.domain.progress_findings import FindingKind, judge_loss, judge_pace
from trainguard.domain.progress_lines import read_progress_line
from trainguard.domain.progress_rule import compile_template
from trainguard.domain.progress_settings import ProgressSettings
from trainguard.domain.progress_watch import ProgressState, advance
from trainguard_local.fleet.goals import SLOWDOWN_GOAL_FACTOR
from trainguard_local.fleet.model import JobOutcome
from trainguard_local.fleet.percentiles import p50_p95, rounded
from trainguard_local.simulation.activity import LaunchActivity, worded
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.reporting import Reporting
from trainguard_local.simulation.rhythm import CADENCE_CLASSES
from trainguard_local.simulation.trace import JobSpec, Trace

FINDINGS = tuple(kind.value for kind in FindingKind)
_ORIGIN = datetime(2026, 1, 1, tzinfo=UTC)  # any: the rules read the time between lines
_SETTINGS = ProgressSettings()  # the product's defaults: the trace's jobs carry no threshold tags


def finding_figures(trace: Trace, outcomes: Sequence[JobOutcome], guard: str) -> dict[str, Any]:
    """A strategy's figures for these faults: every kind's waste, of all jobs and of those that report progress, its
    false findings, and what `guard` (the actor of trainguard's detections) found."""
    reporting = [o for o in outcomes if o.job.reporting.reporting is not Reporting.NONE]
    return {
        "wasted_gpu_hours_by_fault": wasted_gpu_hours_by_fault(trace, outcomes),
        "wasted_gpu_hours_by_fault_of_reporting_jobs": wasted_gpu_hours_by_fault(trace, reporting),
        "false_findings": false_findings(outcomes),
        "findings_found": findings_found(trace, outcomes, guard),
    }


def wasted_gpu_hours_by_fault(trace: Trace, outcomes: Iterable[JobOutcome]) -> dict[str, float | None]:
    """Every kind's wasted GPU-hours (hung or idle, slowed, lost since the last checkpoint), by the kind of each job's
    fault (`none`: jobs without one)."""
    totals: dict[str, float] = {}
    for outcome in outcomes:
        fault = trace.fault_of(outcome.job.name)
        kind = fault.kind.value if fault else "none"
        totals[kind] = totals.get(kind, 0.0) + outcome.wasted_gpu_hours
    return {kind: rounded(hours) for kind, hours in sorted(totals.items())}


def false_findings(outcomes: Iterable[JobOutcome]) -> dict[str, int]:
    """Notices of a slowdown or a divergence on a launch without that fault, by kind."""
    counted = Counter(kind for outcome in outcomes for kind, right in outcome.findings if not right)
    return {kind: counted[kind] for kind in FINDINGS}


def findings_audit(trace: Trace) -> dict[str, Any]:
    """The rules on every reporting job's healthy lines (the module's docstring): how many jobs and lines, how many of
    them noisy or changing their batch size, and the findings the rules would make, with the jobs."""
    audited = [job for job in trace.jobs if job.reporting.reporting is not Reporting.NONE]
    found: dict[str, list[str]] = {kind: [] for kind in FINDINGS}
    lines = 0
    for job in audited:
        judged, kinds = _judged(trace, job)
        lines += judged
        for kind in kinds:
            found[kind].append(job.name)
    return {
        "jobs": len(audited),
        "lines": lines,
        "noisy_jobs": sum(1 for job in audited if job.step_plan.noise_sigma),
        "batch_change_jobs": sum(1 for job in audited if job.step_plan.batch_change_step is not None),
        "false_findings": {kind: len(names) for kind, names in found.items()},
        "jobs_with_false_findings": {kind: names for kind, names in found.items() if names},
    }


def _judged(trace: Trace, job: JobSpec) -> tuple[int, set[str]]:
    """How many of the job's healthy lines were judged, and the kinds of finding the rules made on them."""
    fault = trace.fault_of(job.name)
    launch = LaunchActivity(job.rhythm, job.checkpoint_every_minutes, job.gpus_per_instance, 0.0, steps=job.step_plan)
    until = job.work_hours
    if fault is not None and fault.kind is FaultKind.SLOW_BUT_HEALTHY:
        launch.strike(fault.kind, fault.at_work_hours, fault.silent_minutes)
    elif fault is not None and fault.kind is not FaultKind.CAPACITY_ERROR:
        until = fault.at_work_hours  # healthy up to its fault (a finding's fault included)
    pattern = job.reporting.tags.get("trainguard:progress-pattern")
    rule = compile_template(pattern) if pattern else None
    if isinstance(rule, str):
        raise ValueError(f"{job.name}: its progress pattern is refused: {rule}")
    state, kinds, judged = ProgressState(), set[str](), 0
    for at, text in worded(launch.lines(-1e-6, until - 1e-9), job):
        state = advance(state, read_progress_line(text, rule), _ORIGIN + timedelta(hours=at))
        judged += 1
        kinds |= {
            finding.kind.value for finding in (judge_pace(state, _SETTINGS), judge_loss(state, _SETTINGS)) if finding
        }
    return judged, kinds


def findings_found(trace: Trace, outcomes: Iterable[JobOutcome], guard: str) -> dict[str, dict[str, Any]]:
    """Per finding kind, on the jobs that report their progress (a slowdown only from SLOWDOWN_GOAL_FACTOR times): how
    many, how many `guard` found, and its minutes from the strike (a divergence's first NaN line) to the finding, p50
    and p95 of those found; `missed` names the others; `by_cadence` the same by how often each job logs. A divergence
    counts where the job's lines print its NaN loss; `no_nan_line` names those whose lines never do (the rule cannot
    see them)."""
    found: dict[str, dict[str, Any]] = {}
    for kind, (minutes, unseen) in finding_minutes(trace, outcomes, guard).items():
        found[kind.value] = {
            **found_of(minutes),
            "missed": [taken.job_name for taken in minutes if taken.minutes is None],
            "by_cadence": {cls: found_of([m for m in minutes if m.cadence == cls]) for cls, _, _ in CADENCE_CLASSES},
            **({"no_nan_line": unseen} if kind is FaultKind.DIVERGED else {}),
        }
    return found


@dataclass(frozen=True)
class Taken:
    """How long `guard` took to find one job's fault (None: never), and how often the job logs."""

    job_name: str
    cadence: str  # its cadence class (simulation/rhythm.py)
    minutes: float | None


def finding_minutes(
    trace: Trace, outcomes: Iterable[JobOutcome], guard: str
) -> dict[FaultKind, tuple[list[Taken], list[str]]]:
    """Per finding kind, what findings_found counts: each job's minutes, and the divergences whose lines print no
    NaN."""
    by_job = {outcome.job.name: outcome for outcome in outcomes}
    result: dict[FaultKind, tuple[list[Taken], list[str]]] = {}
    for kind in (FaultKind.DEGRADED_HOST, FaultKind.DIVERGED):
        minutes, unseen = [], []
        for fault in trace.faults:
            job = next(j for j in trace.jobs if j.name == fault.job_name)
            if fault.kind is not kind or job.reporting.reporting is Reporting.NONE:
                continue
            if kind is FaultKind.DEGRADED_HOST and fault.slowdown_factor < SLOWDOWN_GOAL_FACTOR:
                continue
            if kind is FaultKind.DIVERGED and not job.reporting.dialect.shows_a_nan_loss:
                unseen.append(job.name)
                continue
            first = [d.minutes for d in by_job[job.name].detections if d.detector == guard and d.fault_kind is kind]
            minutes.append(Taken(job.name, job.rhythm.cadence_class, min(first) if first else None))
        result[kind] = (minutes, unseen)
    return result


def found_of(minutes: Sequence[Taken]) -> dict[str, Any]:
    """How many jobs, how many found, and p50 and p95 of the minutes of those found."""
    taken = [m.minutes for m in minutes if m.minutes is not None]
    return {"jobs": len(minutes), "found": len(taken), **p50_p95(taken)}
