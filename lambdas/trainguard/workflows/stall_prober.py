"""The stall prober, every minute: publish each watched job's log silence over its own limit (the
log-silence alarms watch it), set a muted stall alarm back to OK when its mute window has ended, report
stops stuck for 30 minutes, read the checkpoints of one job in 15 (each job every 15 minutes: a warning
when they have stopped reaching S3, domain/checkpoint_health.py), tell once of a slowdown or a divergence
the job's own step lines show (domain/progress_findings.py, folded in as its lines arrive), start watching
the opted-in jobs that train unwatched (opted in while they ran: workflows/watch_discovery.py), and sweep
alarms whose job is no longer watched.

It reads the watch list from the ledger (one Query, where the log subscription keeps each job's
newest log line), never the Logs read APIs: those allow a few calls per second per account, which
would not cover 2,000 jobs a minute. If the prober stops, the silence metric goes missing and the
alarms treat missing data as not breaching: no job is stopped for it; the prober's own heartbeat
metric has an alarm of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from trainguard.domain.checkpoint_health import checked_now, judge_checkpoints
from trainguard.domain.model import Category, Decision
from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard.domain.stall_alarms import owned_alarm_job, plan_stall_alarms
from trainguard.domain.stall_messages import compose_prober_notice
from trainguard.domain.stalls import StallSignal, alarm_name, parse_alarm_name
from trainguard.domain.watched_job import WatchedJob, is_stuck_stopping, stall_over_limit, stuck_stopping_reason
from trainguard.workflows.findings import tell_findings
from trainguard.workflows.function_ports import StallProberPorts
from trainguard.workflows.once import once
from trainguard.workflows.stall_watch import WATCH_STARTED
from trainguard.workflows.watch_discovery import watch_unwatched_jobs

SWEEP_EVERY_MINUTES = 15


@dataclass
class ProbeReport:
    watched: int = 0
    published: int = 0
    swept: list[str] = field(default_factory=list)
    renewed: list[str] = field(default_factory=list)  # log-silence alarms an earlier version made, put again
    started: list[str] = field(default_factory=list)  # opted-in jobs found Training unwatched, watched now
    outcomes: list[Outcome] = field(default_factory=list)


def probe(ports: StallProberPorts) -> ProbeReport:
    now = ports.clock()
    watched = ports.stall_ledger.watched()
    # A job that reports progress: the minutes past its progress deadline, on the same metric (watched_job.py).
    silence = {job.job_name: round(stall_over_limit(job, now), 2) for job in watched}
    ports.alarms.publish_log_silence(silence, now)
    report = ProbeReport(watched=len(watched), published=len(silence))
    for job in watched:
        if job.muted_until is not None and now >= job.muted_until:
            _end_mute(ports, job)
        told = (
            _report_stuck(ports, job, now) if is_stuck_stopping(job, now) else None,
            _check_checkpoints(ports, job, now) if _checkpoints_due(job, now) else None,
        )
        report.outcomes += [outcome for outcome in told if outcome is not None]
        report.outcomes += tell_findings(ports, job, now) if _training(job) else []
    started = watch_unwatched_jobs(ports, {job.job_name for job in watched}, now)
    report.started = [o.job_name for o in started if o.kind in WATCH_STARTED]
    report.outcomes += started
    if now.minute % SWEEP_EVERY_MINUTES == 0:
        # the jobs just started are watched too: their alarms are no orphans
        report.swept = sweep_orphan_alarms(ports, {job.job_name for job in watched} | set(report.started))
        report.renewed = renew_outdated_alarms(ports, watched)
    return report


def renew_outdated_alarms(ports: StallProberPorts, watched: list[WatchedJob]) -> list[str]:
    """Put again the log-silence alarm of each watched job that an earlier version made on another metric
    (LogSilenceMinutes, which nothing publishes any more): without this, a job watched across an upgrade
    would never be judged on log silence again. Orphans are the sweep's."""
    by_name = {job.job_name: job for job in watched}
    renewed = []
    for name in ports.alarms.outdated_log_silence_alarms():
        parsed = parse_alarm_name(name)
        job = by_name.get(parsed[1]) if parsed else None
        if job is None:
            continue
        plan = plan_stall_alarms(job.job_name, job.instance_type, job.host_count, job.thresholds)
        ports.alarms.put_metric_alarm(plan.metric_alarms[0])
        renewed.append(name)
    return renewed


def sweep_orphan_alarms(ports: StallProberPorts, watched: set[str]) -> list[str]:
    """Delete every trainguard alarm whose job is not watched: no alarm outlives its job."""
    owners = {name: owned_alarm_job(name) for name in ports.alarms.list_owned()}
    orphans = [name for name, job in owners.items() if job is not None and job not in watched]
    if orphans:
        ports.alarms.delete(orphans)
    return orphans


def _end_mute(ports: StallProberPorts, job: WatchedJob) -> None:
    """The mute window of a muted stall alarm has ended: back to OK, so it fires again if the job is still
    stalled, unmuted this time (an alarm left in ALARM sends no new event)."""
    for signal in StallSignal:  # both: each may have fired under the mute (a missing alarm is no error)
        ports.alarms.rearm(alarm_name(signal, job.job_name), "trainguard: the alarm mute window has ended")
    ports.stall_ledger.unmute(job.job_name)


def _training(job: WatchedJob) -> bool:
    return job.training_since is not None and job.stopping_since is None


def _checkpoints_due(job: WatchedJob, now: datetime) -> bool:
    return _training(job) and bool(job.checkpoint_uri) and checked_now(job.job_name, now.minute)


def _check_checkpoints(ports: StallProberPorts, job: WatchedJob, now: datetime) -> Outcome | None:
    """Warn once per newest checkpoint when the job's checkpoints have stopped reaching S3; never stop it."""
    state = ports.checkpoints.read(job.checkpoint_uri)
    health = judge_checkpoints(state, job.training_since, now)
    if not health.stale or state.newest_object_time is None:
        return None
    with once(ports, job.job_name, f"checkpoint-stale#{int(state.newest_object_time.timestamp())}", now) as step:
        if step.done:
            return None
        details = {
            "age_minutes": round((health.age or timedelta(0)).total_seconds() / 60, 1),
            "interval_minutes": round((health.interval or timedelta(0)).total_seconds() / 60, 1),
        }
        kind, category = OutcomeKind.CHECKPOINT_STALE, Category.CHECKPOINT_STALE
        outcome = Outcome(kind, job.job_name, health.reason, Decision.NOTIFY, category, details=details)
        ports.notifier.publish(compose_prober_notice(outcome, ports.region, now))
        return step.record(outcome)


def _report_stuck(ports: StallProberPorts, job: WatchedJob, now: datetime) -> Outcome | None:
    """Once per stuck stop (busy: another prober cycle is telling it right now)."""
    with once(ports, job.job_name, "stuck-stopping", now, skip_if_busy=True) as step:
        if step.done or step.busy:
            return None
        why = stuck_stopping_reason(job, now)
        outcome = Outcome(OutcomeKind.STUCK_STOPPING, job.job_name, why, Decision.NOTIFY, Category.STUCK_STOPPING)
        ports.notifier.publish(compose_prober_notice(outcome, ports.region, now))
        return step.record(outcome)
