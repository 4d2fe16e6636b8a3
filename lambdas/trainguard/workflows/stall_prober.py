"""The stall prober, every minute: publish each watched job's log silence over its own limit (the
log-silence alarms watch it), set a muted stall alarm back to OK when its mute window has ended, report
stops stuck for 30 minutes, and sweep alarms whose job is no longer watched.

It reads the watch list from the ledger (one Query, where the log subscription keeps each job's
newest log line), never the Logs read APIs: those allow a few calls per second per account, which
would not cover 2,000 jobs a minute. If the prober stops, the silence metric goes missing and the
alarms treat missing data as not breaching: no job is stopped for it; the prober's own heartbeat
metric has an alarm of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from trainguard.domain.messages import compose_stuck_stopping_notification
from trainguard.domain.model import Category, Decision
from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard.domain.stall_alarms import owned_alarm_job
from trainguard.domain.stalls import StallSignal, alarm_name
from trainguard.domain.watched_job import WatchedJob, is_stuck_stopping, log_silence_over_limit, stuck_stopping_reason
from trainguard.workflows.function_ports import StallProberPorts
from trainguard.workflows.once import once

SWEEP_EVERY_MINUTES = 15


@dataclass
class ProbeReport:
    watched: int = 0
    published: int = 0
    swept: list[str] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)


def probe(ports: StallProberPorts) -> ProbeReport:
    now = ports.clock()
    watched = ports.stall_ledger.watched()
    silence = {job.job_name: round(log_silence_over_limit(job, now), 2) for job in watched}
    ports.alarms.publish_log_silence(silence, now)
    report = ProbeReport(watched=len(watched), published=len(silence))
    for job in watched:
        if job.muted_until is not None and now >= job.muted_until:
            _end_mute(ports, job)
        if is_stuck_stopping(job, now):
            outcome = _report_stuck(ports, job, now)
            if outcome is not None:
                report.outcomes.append(outcome)
    if now.minute % SWEEP_EVERY_MINUTES == 0:
        report.swept = sweep_orphan_alarms(ports, {job.job_name for job in watched})
    return report


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


def _report_stuck(ports: StallProberPorts, job: WatchedJob, now: datetime) -> Outcome | None:
    """Once per stuck stop (busy: another prober cycle is telling it right now)."""
    with once(ports, job.job_name, "stuck-stopping", now, skip_if_busy=True) as step:
        if step.done or step.busy:
            return None
        why = stuck_stopping_reason(job, now)
        outcome = Outcome(OutcomeKind.STUCK_STOPPING, job.job_name, why, Decision.NOTIFY, Category.STUCK_STOPPING)
        ports.notifier.publish(compose_stuck_stopping_notification(outcome, ports.region, now))
        return step.record(outcome)
