"""A stall alarm went to ALARM: describe the job again, gather the evidence, judge, stop it once, record
the stall with its evidence, and tell. The job's Stopped event then relaunches it (job_ended.py), unless a
parent owns the job (domain/ownership.py): then it is recorded, and the parent decides what follows.

A muted alarm (an alarm mute rule: the team said "leave it alone for now") is judged the same way, but a
stall is only told, once per mute, and the alarm is left in ALARM until the mute window ends: the prober
then sets it back to OK, so that it fires again, unmuted, if the job is still stalled."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Any

from trainguard.domain.checkpoints import CheckpointState
from trainguard.domain.instance_types import gpus_per_host
from trainguard.domain.log_rhythm import LogRhythm
from trainguard.domain.model import Category, Decision, TrainingJob
from trainguard.domain.outcome import Outcome, OutcomeKind, skipped
from trainguard.domain.policy import read_job_policy
from trainguard.domain.progress_lines import read_progress_line
from trainguard.domain.progress_watch import ProgressState, advance
from trainguard.domain.stall_messages import compose_stall_notification, what_was_done
from trainguard.domain.stalls import (
    StallEvidence,
    StallSignal,
    StallThresholds,
    StallVerdict,
    gpu_window_start,
    job_hosts,
    judge_stall,
    parse_alarm_name,
    read_stall_thresholds,
)
from trainguard.domain.watched_job import WatchedJob, progress_rule, verdict_look_back
from trainguard.events.alarm_state_change import AlarmMute, AlarmStateChange
from trainguard.workflows.function_ports import StallAlarmsPorts
from trainguard.workflows.once import once
from trainguard.workflows.ports import fresh
from trainguard.workflows.stall_watch import stop_watching

STEP = "stall-stop"
MUTED_STEP = "stall-muted"
MUTE_RECHECK = timedelta(hours=1)  # a mute whose window end is not given is looked at again after this


def handle_stall_alarm(ports: StallAlarmsPorts, change: AlarmStateChange) -> Outcome:
    parsed = parse_alarm_name(change.alarm_name)
    if parsed is None:
        return skipped("", f"alarm {change.alarm_name} is not a trainguard stall alarm")
    signal, job_name = parsed
    if change.state != "ALARM":
        return skipped(job_name, f"alarm {change.alarm_name} moved to {change.state}; only ALARM is acted on")
    job = fresh(ports.jobs.describe(job_name))
    if job is None:
        stop_watching(ports, job_name)
        return skipped(job_name, "the job no longer exists")
    policy = read_job_policy(job.tags, ports.config.policy_defaults, ports.keys)
    if not policy.enabled:
        stop_watching(ports, job_name)
        return skipped(job_name, f"not opted in any more: {policy.why_not_enabled}")
    now = ports.clock()
    thresholds = read_stall_thresholds(job.tags, ports.config.stall_defaults, ports.keys)
    evidence = gather_evidence(ports, job, thresholds, now)
    muted = change.mute is not None and (change.mute.window_end is None or change.mute.window_end > now)
    muted_by = change.mute.rule_name if muted and change.mute else ""
    stop_parent_jobs = ports.config.stop_stalled_parent_jobs
    verdict = judge_stall(
        signal, job, policy, thresholds, evidence, now, muted_by=muted_by, stop_parent_jobs=stop_parent_jobs
    )
    if not verdict.stalled:
        if verdict.defer and evidence.last_log_time is not None:
            ports.stall_ledger.defer(job.name, evidence.last_log_time)
        if verdict.rearm:
            ports.alarms.rearm(change.alarm_name, f"trainguard: not a stall yet: {verdict.reason}"[:1000])
        return skipped(job_name, verdict.reason)
    step_name, muted_until = STEP, None
    if verdict.muted_by and change.mute is not None:
        step_name, muted_until = _mute(ports, job, change.alarm_name, change.mute, now)

    with once(ports, job.name, step_name, now) as step:
        if step.done:
            decision = Decision.NOTIFY if muted_until else Decision.STOP
            why = "the stall was already told" if muted_until else "the stall was already handled"
            return Outcome(OutcomeKind.ALREADY_HANDLED, job.name, why, decision, Category.STALL)
        checkpoint = ports.checkpoints.read(job.checkpoint_s3_uri)
        return step.record(_act(ports, job, signal, verdict, evidence, checkpoint, now, muted_until))


def _mute(
    ports: StallAlarmsPorts, job: TrainingJob, alarm_name: str, mute: AlarmMute, now: datetime
) -> tuple[str, datetime]:
    """A stall under a mute: remembered, so that the prober re-arms the alarm when the mute ends (or after
    MUTE_RECHECK when its end is not given); told once per mute rule and window start (a redelivery, or the
    same mute firing again after a re-check, tells nothing new). The step's name and the mute's end."""
    until = mute.window_end if mute.window_end and mute.window_end > now else now + MUTE_RECHECK
    ports.stall_ledger.mute(job.name, alarm_name, until)
    # Hashed: the rule's ARN comes from the event, and the ledger's sort key is bounded.
    mute_key = hashlib.sha256(f"{mute.rule_arn}#{mute.window_start}".encode()).hexdigest()[:16]
    return f"{MUTED_STEP}#{mute_key}", until


def gather_evidence(
    ports: StallAlarmsPorts, job: TrainingJob, thresholds: StallThresholds, now: datetime
) -> StallEvidence:
    """The newest log line (from the Logs API, and the subscription's record, whichever is newer) and
    each host's GPU peak over the idle window."""
    instance_type, hosts = job_hosts(job)
    watched = ports.stall_ledger.watched_job(job.name)
    rhythm = watched[0].rhythm if watched else LogRhythm()
    newest, line = ports.job_logs.newest_event(job.name, now - verdict_look_back(thresholds, next(iter(watched), None)))
    progress = fresh_progress(watched[0], newest, line) if watched else ProgressState()
    for entry in watched:
        if entry.last_log_time and (newest is None or entry.last_log_time > newest):
            newest, line = entry.last_log_time, entry.last_log_line
    since = gpu_window_start(thresholds, newest, now)
    gpu = ports.gpu_metrics.busiest_by_host(job.name, hosts, since, now)
    deferred = bool(watched) and watched[0].silence_deferred and watched[0].last_log_time == newest
    settings = watched[0].progress_settings if watched else ports.config.progress_defaults
    return StallEvidence(newest, line, gpu, gpus_per_host(instance_type), rhythm, deferred, progress, settings)


def fresh_progress(watched: WatchedJob, newest: datetime | None, line: str) -> ProgressState:
    """The job's progress as the subscription recorded it, with the newest line the Logs API returned read as well
    when it is newer: a step the subscription has not delivered yet is progress."""
    if newest is None or (watched.last_log_time is not None and newest <= watched.last_log_time):
        return watched.progress
    return advance(watched.progress, read_progress_line(line, progress_rule(watched)), newest)


def _stop_is_ours(ports: StallAlarmsPorts, job_name: str) -> bool:
    """StopTrainingJob found the job no longer InProgress. When SageMaker's answer to an earlier attempt of the
    call was lost (a read timeout after it acted), botocore's retry finds the job Stopping: that is trainguard's
    stop. The ledger tells it the way job_ended.py does (the job is Stopping or Stopped and the stall record says
    trainguard asked for the stop), so this message and the relaunch that follows agree. A job that failed or
    completed on its own meanwhile has no stop of trainguard's to report."""
    job = fresh(ports.jobs.describe(job_name))
    stopping = job is not None and job.status in ("Stopping", "Stopped")
    return stopping and ports.stall_ledger.stall_record(job_name) is not None


def _act(
    ports: StallAlarmsPorts,
    job: TrainingJob,
    signal: StallSignal,
    verdict: StallVerdict,
    evidence: StallEvidence,
    checkpoint: CheckpointState,
    now: datetime,
    muted_until: datetime | None = None,
) -> Outcome:
    record: dict[str, Any] = {
        "signal": signal.value,
        "reason": verdict.reason,
        "last_log_time": evidence.last_log_time,
        "last_log_line": evidence.last_log_line,
        "gpu_by_host": evidence.gpu_by_host,
        "gpus_per_host": evidence.gpus_per_host,
        "checkpoint": checkpoint.describe(now),
    }
    stopped = False
    if verdict.act:
        # The record first: a process that dies right after StopTrainingJob must leave the record behind, or
        # the job's Stopped event reads as a person's stop and the stalled job is never relaunched.
        ports.stall_ledger.record_stall(job.name, record, now)
        stopped = ports.jobs.stop(job.name) or _stop_is_ours(ports, job.name)
    elif verdict.muted_by and muted_until is not None:
        record["muted_by"] = verdict.muted_by
    did, kind = what_was_done(verdict, stopped, muted_until)
    decision = Decision.STOP if verdict.act else Decision.NOTIFY
    outcome = Outcome(kind, job.name, verdict.reason, decision, Category.STALL, "", record)
    ports.notifier.publish(
        compose_stall_notification(
            job.name, signal.value, verdict, evidence, checkpoint, did, outcome, ports.region, now
        )
    )
    return outcome
