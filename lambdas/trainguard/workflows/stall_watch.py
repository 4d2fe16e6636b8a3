"""Follow a job's state for stall detection: watch it (and put its alarms) while it trains, stop
watching (and delete its alarms) when it ends. The job-events function does it on each state change, and the
stall prober for an opted-in job it finds Training unwatched (a job opted in while it ran: watch_discovery.py)."""

from __future__ import annotations

from datetime import datetime

from trainguard.domain.model import Category, Decision
from trainguard.domain.outcome import Outcome, OutcomeKind, skipped
from trainguard.domain.policy import TagProblem, read_job_policy
from trainguard.domain.progress_settings import read_progress_settings
from trainguard.domain.stall_alarms import StallAlarmPlan, plan_stall_alarms
from trainguard.domain.stalls import job_hosts, read_stall_thresholds
from trainguard.domain.watch_messages import compose_partly_watched_notice, compose_unread_tags_notice
from trainguard.domain.watched_job import WatchedJob
from trainguard.workflows.function_ports import StallWatchPorts, WatchStartPorts
from trainguard.workflows.once import once
from trainguard.workflows.ports import fresh

WATCHED_STATUSES = ("InProgress", "Stopping")
PARTLY_WATCHED_STEP = "gpus-not-watched"
UNREAD_TAGS_STEP = "watch-tags-not-read"
# What follow_training_state returns when the job is watched (else a skip).
WATCH_STARTED = frozenset({OutcomeKind.WATCHING, OutcomeKind.PARTLY_WATCHED, OutcomeKind.WATCHED_WITH_DEFAULTS})


def follow_training_state(ports: WatchStartPorts, job_name: str) -> Outcome:
    """Watch the job if it is opted in and InProgress or Stopping (described again here: the event is a hint),
    and put its alarms while it trains; else forget it. Safe to repeat: the ledger item and the alarms are
    put, never added."""
    job = fresh(ports.jobs.describe(job_name))
    if job is None:
        ports.stall_ledger.unwatch(job_name)
        return skipped(job_name, "the job no longer exists")
    policy = read_job_policy(job.tags, ports.config.policy_defaults, ports.keys)
    if not policy.enabled or job.status not in WATCHED_STATUSES:
        stop_watching(ports, job.name)
        why = f"not opted in: {policy.why_not_enabled}" if not policy.enabled else f"the job is {job.status}"
        return skipped(job.name, f"not watched for stalls: {why}")
    thresholds = read_stall_thresholds(job.tags, ports.config.stall_defaults, ports.keys)
    instance_type, hosts = job_hosts(job)
    watched = WatchedJob(
        job_name=job.name,
        instance_type=instance_type,
        host_count=hosts,
        thresholds=thresholds,
        training_since=job.training_since if job.secondary_status == "Training" else None,
        stopping_since=ports.clock() if job.status == "Stopping" else None,
        checkpoint_uri=job.checkpoint_s3_uri,
        progress_settings=read_progress_settings(job.tags, ports.config.progress_defaults, ports.keys),
    )
    plan = plan_stall_alarms(job.name, instance_type, hosts, thresholds, keys=ports.keys)
    ports.stall_ledger.watch(watched)  # first: the orphan sweep deletes alarms of jobs not in this list
    if job.secondary_status == "Training":
        ports.alarms.create(plan)
    phase = "training" if watched.training_since else job.secondary_status or job.status
    problems = (*thresholds.problems, *watched.progress_settings.problems)
    told = _tell_unread_tags(ports, job.name, problems, ports.clock()) if problems else None
    if plan.gpu_unwatched:
        return _tell_partly_watched(ports, plan, f"{phase}, {hosts} hosts", ports.clock())
    return told or Outcome(OutcomeKind.WATCHING, job.name, f"watched for stalls ({phase}, {hosts} hosts)")


def _tell_unread_tags(
    ports: WatchStartPorts, job_name: str, problems: tuple[TagProblem, ...], now: datetime
) -> Outcome | None:
    """Watched with defaults in place of the tags it could not read: its owners are told once per job (not at each
    state change, nor at each prober cycle that starts it), never left to find out. The outcome when told now."""
    reason = "watched for stalls with defaults in place of tags it could not read: " + "; ".join(
        problem.describe() for problem in problems
    )
    # skip_if_busy: a start of the same job telling it at this moment (a state change beside the prober's discovery)
    # is left to do so, and this start, which may be one of many in a prober cycle, does not fail for it.
    with once(ports, job_name, UNREAD_TAGS_STEP, now, skip_if_busy=True) as step:
        if step.done or step.busy:
            return None
        outcome = Outcome(OutcomeKind.WATCHED_WITH_DEFAULTS, job_name, reason, Decision.NOTIFY, Category.IN_PROGRESS)
        ports.notifier.publish(compose_unread_tags_notice(job_name, problems, ports.region, now))
        return step.record(outcome)


def _tell_partly_watched(ports: WatchStartPorts, plan: StallAlarmPlan, where: str, now: datetime) -> Outcome:
    """Watched on log silence only: its owners are told once, never left to find out."""
    reason = f"watched for stalls on log silence only ({where}): no idle-GPU alarm, because {plan.gpu_unwatched}"
    with once(ports, plan.job_name, PARTLY_WATCHED_STEP, now) as step:
        if step.done:
            return Outcome(OutcomeKind.WATCHING, plan.job_name, reason)
        outcome = Outcome(
            OutcomeKind.PARTLY_WATCHED, plan.job_name, plan.gpu_unwatched, Decision.NOTIFY, Category.IN_PROGRESS
        )
        ports.notifier.publish(compose_partly_watched_notice(outcome, ports.region, now))
        return step.record(outcome)


def stop_watching(ports: StallWatchPorts, job_name: str) -> None:
    """Delete the job's alarms and forget it; the orphan sweep catches anything missed here."""
    for watched in ports.stall_ledger.watched_job(job_name):
        plan = plan_stall_alarms(watched.job_name, watched.instance_type, watched.host_count, watched.thresholds)
        ports.alarms.delete(plan.deletion_order())
    ports.stall_ledger.unwatch(job_name)
