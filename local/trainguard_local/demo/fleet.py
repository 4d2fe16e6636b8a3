"""`make demo`: a day in the life of a small fleet, under trainguard and without it.

Seventeen training jobs over 24 hours of fleet time, one of each fault kind the simulator knows and one
healthy job (the fleet simulator's own trace generator, seed `DEMO_SEED`), some of them reporting their progress
(issue 27): a chatty job that prints trainguard's progress contract hangs, a healthy one announces long saves, and a
framework's job keeps logging through a livelock; a job on a degraded host slows down and its host is named, and a
run whose loss turns NaN is stopped with its owner's leave (issue 28). The production handlers and
adapters run over them on the in-process stand-in, on a virtual clock (fleet/trainguard_strategy.py);
the same trace is also run without a guard, with SageMaker's RetryStrategy and with Debugger's
StalledTrainingRule (models of their documentation). The demo prints the trace, what happened to each
job under trainguard, the SNS messages trainguard published (the production code's own, as sent), the
figures of the five strategies and trainguard's own AWS cost; it writes the timeline (no guard above
trainguard, one PNG), the HTML report and the JSON report into `demo-out/`.
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
from trainguard_local.fleet.html_report import ReportPage, write_html
from trainguard_local.fleet.model import JobOutcome
from trainguard_local.fleet.progress import Progress
from trainguard_local.fleet.simulate import comparison_png, report_pictures, simulate_trace
from trainguard_local.fleet.stories import as_sent, job_story, trace_line
from trainguard_local.fleet.summary import render_summary
from trainguard_local.fleet.timeline import TIMELINE_COLOURS
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.reporting import CONTRACT, FRAMEWORKS, JobReporting, Reporting
from trainguard_local.simulation.rhythm import JobRhythm
from trainguard_local.simulation.todays_sagemaker import ALTERNATIVES
from trainguard_local.simulation.trace import Trace, generate_trace

DEMO_JOBS, DEMO_HOURS, DEMO_SEED = 17, 24.0, 15
DEMO_SPOT_SHARE = 0.3  # enough spot jobs for a spot interruption
Say = Callable[[str], None]
# What a message says when a fallback changed the relaunch (domain/fallbacks.py): each is shown in full once.
DEMO_STEPS = 2  # what the progress line on stderr counts: the strategies on the fleet, then the files
FALLBACK_WORDS = ("InstancePreferences", "on on-demand instances", "whose quota has room")


def demo_trace() -> Trace:
    """Every fault kind once (the generator gives each kind a job before drawing more), one healthy job; the three
    fallbacks of today's SageMaker, each on the job whose wall it meets (fallbacks_shown); two log rhythms at their
    extremes (rhythms_shown), a checkpoint sync that stops after trainguard has learned its interval
    (checkpoints_shown), and the jobs that show how a job that reports its progress is judged (progress_shown)."""
    # The drawn kinds; of the six jobs left, the checkpoint sync stop, the livelock, the hang in a phase, the degraded
    # host and the divergence take five (later_faults.py), and one stays healthy.
    faulty = (DEMO_JOBS - 6) / DEMO_JOBS
    trace = generate_trace(DEMO_JOBS, DEMO_HOURS, DEMO_SEED, spot_share=DEMO_SPOT_SHARE, fault_share=faulty)
    trace = replace(trace, jobs=tuple(replace(job, steps=None) for job in trace.jobs))  # every step at its cadence
    return findings_shown(progress_shown(checkpoints_shown(rhythms_shown(fallbacks_shown(trace)))))


CHATTY = JobRhythm(log_every_seconds=10.0, checkpoint_write_minutes=1.0, announces_phases=True)
SLOW_EPOCHS = JobRhythm(log_every_seconds=2400.0)  # its saves log nothing: one line per epoch, and only that


def rhythms_shown(trace: Trace) -> Trace:
    """Two log rhythms at their extremes: the deadlocked data loader's job logs every 10 s (and announces its
    saves), so it is stopped minutes into its hang; the healthy job that falls silent logs once per 40-minute
    epoch, silent far longer than the fixed 30 minutes, and is left alone."""
    shown = {FaultKind.HANG_IDLE_GPU: CHATTY, FaultKind.SLOW_BUT_HEALTHY: SLOW_EPOCHS}
    rhythm_of = {f.job_name: shown[f.kind] for f in trace.faults if f.kind in shown}
    jobs = tuple(
        replace(job, rhythm=rhythm_of[job.name], reporting=JobReporting()) if job.name in rhythm_of else job
        for job in trace.jobs
    )  # both report nothing: the log-silence rules judge them
    return replace(trace, jobs=jobs)


SYNC_CHECKPOINT_EVERY_MINUTES = 15  # three writes reach S3 before the demo's sync stops: its interval is learned


def checkpoints_shown(trace: Trace) -> Trace:
    """The job whose checkpoint sync stops writes a checkpoint every 15 minutes, so that the writes that reach S3
    before the stop teach trainguard its interval (checkpoint_health.MIN_WRITES) and it is warned about before its
    hardware failure strikes."""
    stops = {f.job_name for f in trace.faults if f.kind is FaultKind.CHECKPOINT_SYNC_STOPPED}
    every = SYNC_CHECKPOINT_EVERY_MINUTES
    jobs = tuple(replace(job, checkpoint_every_minutes=every) if job.name in stops else job for job in trace.jobs)
    return replace(trace, jobs=jobs)


CONTRACT_REPORTING = JobReporting(Reporting.PROGRESS, CONTRACT)
MEGATRON_REPORTING = JobReporting(Reporting.FRAMEWORK, next(d for d in FRAMEWORKS if d.name == "megatron"))
# A healthy job's announced saves: longer than the 2-min floor of a step limit and than the learned log-silence
# limit of a job that logs every 10 s (issue 27's sources: a 70B save takes about 10 min, Megatron-LLM#69).
LONG_SAVES = JobRhythm(log_every_seconds=10.0, checkpoint_write_minutes=14.0, announces_phases=True)
LONG_SAVES_EVERY_MINUTES = 60  # a phase takes at most half the time between checkpoints (rhythm.PHASE_SHARE_MAX)
LIVELOCK_RHYTHM = JobRhythm(log_every_seconds=30.0, checkpoint_write_minutes=2.0)  # Megatron announces its saves


def progress_shown(trace: Trace) -> Trace:
    """Issue 27's scenes: the busy-GPU hang's job prints trainguard's progress contract every 10 s (CHATTY), so its
    steps stop advancing minutes before a silence would tell; the healthy job prints the contract and announces
    14-minute saves, each left alone; the livelock's job prints Megatron-LM's lines every 30 s and keeps logging a
    heartbeat through its livelock, stopped because its step no longer advances; the hang in a phase strikes a job
    that prints the contract, judged by the save it announced."""
    healthy = {job.name for job in trace.jobs} - {fault.job_name for fault in trace.faults}
    shown = {
        FaultKind.HANG_BUSY_GPU: (CHATTY, CONTRACT_REPORTING),
        FaultKind.LIVELOCK: (LIVELOCK_RHYTHM, MEGATRON_REPORTING),
        FaultKind.HANG_IN_PHASE: (None, CONTRACT_REPORTING),
    }
    chosen = {f.job_name: shown[f.kind] for f in trace.faults if f.kind in shown}
    jobs = []
    for job in trace.jobs:
        if job.name in healthy:
            job = replace(job, rhythm=LONG_SAVES, checkpoint_every_minutes=LONG_SAVES_EVERY_MINUTES)
            job = replace(job, reporting=CONTRACT_REPORTING)
        elif job.name in chosen:
            rhythm, reporting = chosen[job.name]
            job = replace(job, rhythm=rhythm or job.rhythm, reporting=reporting)
        jobs.append(job)
    return replace(trace, jobs=tuple(jobs))


DEGRADED_HOSTS, DEGRADED_FACTOR = 4, 2.2  # the measurement on an H200: 2.2 times slower
FINDING_RHYTHM = JobRhythm(log_every_seconds=20.0, checkpoint_write_minutes=1.0, announces_phases=True)


def findings_shown(trace: Trace) -> Trace:
    """Issue 28's scenes, on jobs that print the progress contract every 20 s: the degraded host's job runs on
    DEGRADED_HOSTS hosts, the third waiting on its own input (its GPU reads low, the others wait on it), 2.2 times
    slower from a point of its work: found and its host named; the diverged run's owner gave trainguard leave to stop
    it (`trainguard:stop-if-diverged=true`): stopped minutes after its first NaN, and not relaunched."""
    jobs = {job.name: job for job in trace.jobs}
    faults = []
    for fault in trace.faults:
        job = jobs[fault.job_name]
        if fault.kind in (FaultKind.DEGRADED_HOST, FaultKind.DIVERGED):
            job = replace(job, rhythm=FINDING_RHYTHM, reporting=CONTRACT_REPORTING)
        if fault.kind is FaultKind.DEGRADED_HOST:
            job = replace(job, instance_count=DEGRADED_HOSTS)
            fault = replace(fault, slowdown_factor=DEGRADED_FACTOR, slow_host=2)
        if fault.kind is FaultKind.DIVERGED:
            job = replace(job, owner_tags=(("trainguard:stop-if-diverged", "true"),))
        jobs[job.name] = job
        faults.append(fault)
    return replace(trace, jobs=tuple(jobs[job.name] for job in trace.jobs), faults=tuple(faults))


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


def say_now(line: str) -> None:
    """A line of the demo on stdout at once, also when stdout is a pipe (`make demo | tee demo.log`)."""
    print(line, flush=True)


def run_fleet_demo(out_dir: Path, say: Say = say_now, progress: TextIO | None = sys.stderr) -> dict[str, Any]:
    """Run the demo; what it showed, for a test or --json: the report, the messages, the files written."""
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    trace = demo_trace()
    say(f"A fleet of {len(trace.jobs)} training jobs over {trace.hours:g} hours of fleet time (seed {trace.seed}):")
    say("one fault of each kind the simulator knows, and one healthy job. Times are hours on the fleet's clock.\n")
    for job in trace.jobs:
        say("  " + trace_line(trace, job))
    say("\nThe production handlers and adapters, on the in-process stand-in (moto + simulated SageMaker):")
    shown = Progress("demo", steps=DEMO_STEPS, stream=progress) if progress is not None else None
    report, outcomes, notifications = run_strategies(trace, shown)
    say("\nWhat happened to each job under trainguard (and when its work was done, against no guard):")
    unguarded = {o.job.name: o for o in outcomes["none"]}
    for outcome in outcomes["trainguard"]:
        say("")
        for line in job_story(trace, outcome, unguarded[outcome.job.name]):
            say("  " + line)
    say_messages(notifications, say)
    if shown is not None:
        shown.update(2, f"the timeline, the HTML report and the JSON report in {out_dir}/")
    written = write_files(out_dir, trace, report, outcomes, notifications)
    if shown is not None:
        shown.done(f"wrote {', '.join(written.values())}")
    say("\n" + render_summary({**report, "written": written}))
    say(f"the timeline: one row per job, no guard above trainguard. {TIMELINE_COLOURS}")
    return {"report": report, "notifications": notifications, "written": written}


def run_strategies(
    trace: Trace, shown: Progress | None
) -> tuple[dict[str, Any], dict[str, list[JobOutcome]], list[dict[str, Any]]]:
    """The trace under the anchors and trainguard (step 1 of the demo's progress, with trainguard's fleet clock):
    the report, each strategy's outcomes, and the SNS messages trainguard published, as sent."""
    from trainguard_local.fleet.trainguard_strategy import TrainguardStrategy

    if shown is not None:
        shown.update(1, "the four other strategies on the fleet, then trainguard's run")
    guard = TrainguardStrategy(on_progress=shown.fleet_clock(1, "trainguard's run", trace.hours) if shown else None)
    report, outcomes = simulate_trace(trace, [*anchor_strategies(), guard])
    if shown is not None:
        shown.done(f"step 1 of {DEMO_STEPS}: trainguard's run, {trace.hours:g} h of fleet time, done")
    assert guard.last_run is not None
    return report, outcomes, as_sent(guard.last_run.notifications)


def say_messages(notifications: list[dict[str, Any]], say: Say) -> None:
    """Each message's time and subject, then the full text of the first of each outcome (and of each fallback)."""
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


def write_files(
    out_dir: Path,
    trace: Trace,
    report: dict[str, Any],
    outcomes: dict[str, list[JobOutcome]],
    notifications: list[dict[str, Any]],
) -> dict[str, str]:
    """The timeline (PNG), the HTML report and the JSON report in `out_dir`: where each was written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {"png": out_dir / "timeline.png", "html": out_dir / "report.html", "json": out_dir / "report.json"}
    timeline = comparison_png(report, outcomes)
    written["png"].write_bytes(timeline)
    page = ReportPage(
        title=f"trainguard on a simulated demo fleet: {len(trace.jobs)} jobs, every fault kind, {trace.hours:g} h",
        command="make demo",
        report=report,
        trace=trace,
        outcomes=outcomes,
        notifications=notifications,
        pictures=report_pictures(report, timeline),
    )
    write_html(written["html"], page)
    written["json"].write_text(json.dumps({**report, "notifications": notifications}, indent=2, sort_keys=True))
    return {k: str(v) for k, v in written.items()}
