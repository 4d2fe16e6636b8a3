"""The samples of the messages about a job that trains: a verified stall (stopped, stopped for its parent, muted,
left to its owner, in dry run), what the prober tells once (a checkpoint sync that stopped, a stop stuck in
Stopping), a job too large for an idle-GPU alarm (domain/stall_alarms.py, watch_messages.py) and a job watched with
defaults for tags it could not read, from sample
evidence put through the domain's own judgements (trainguard.domain.stalls, checkpoint_health, watched_job) and
rendered by its composers (trainguard.domain.stall_messages)."""

from __future__ import annotations

from datetime import datetime, timedelta

from trainguard.domain.checkpoint_health import judge_checkpoints
from trainguard.domain.finding_actions import DeployerSettings, FindingDecision, decide_on_finding
from trainguard.domain.finding_messages import compose_finding_notice
from trainguard.domain.log_rhythm import LogRhythm
from trainguard.domain.messages import Notification
from trainguard.domain.model import Category, Decision
from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard.domain.progress_findings import FindingKind, judge_loss, judge_pace
from trainguard.domain.progress_settings import ProgressSettings, read_progress_settings
from trainguard.domain.progress_watch import ProgressState, with_lines
from trainguard.domain.stall_alarms import MAX_GPU_HOSTS, plan_stall_alarms
from trainguard.domain.stall_messages import compose_prober_notice, compose_stall_notification, what_was_done
from trainguard.domain.stalls import StallEvidence, StallSignal, StallThresholds, judge_stall, read_stall_thresholds
from trainguard.domain.watch_messages import compose_partly_watched_notice, compose_unread_tags_notice
from trainguard.domain.watched_job import stuck_stopping_reason
from trainguard_cli.sample_facts import (
    KEYS,
    PIPELINE_TAGS,
    SAMPLE_JOB,
    SAMPLE_LOG_LINE,
    job_end,
    sample_checkpoints,
    sample_job,
    watched,
)

MUTE_RULE = "sample-maintenance-window"  # the name a team gave its CloudWatch alarm mute rule


def _stall(
    region: str, now: datetime, tags: dict[str, str] | None = None, muted_by: str = "", *, stop_parents: bool = True
) -> Notification:
    """The sample job silent in its logs past its limit, its GPUs idle: the stall alarm's function's verdict and
    message (workflows/stall_alarm.py), with the job's `tags`, the alarm muted by `muted_by` if set, and the setting
    stop_stalled_parent_jobs as `stop_parents`."""
    job = sample_job("InProgress", "", now, tags)
    policy, _ = job_end(job)
    thresholds = read_stall_thresholds(job.tags, StallThresholds(), KEYS)
    evidence = StallEvidence(
        last_log_time=now - timedelta(minutes=thresholds.stall_minutes + 7),
        last_log_line=SAMPLE_LOG_LINE,
        gpu_by_host={f"{job.name}/algo-{n}": 0.0 for n in range(1, 5)},
        gpus_per_host=8,
        rhythm=LogRhythm(),
    )
    signal = StallSignal.LOG_SILENCE
    verdict = judge_stall(
        signal, job, policy, thresholds, evidence, now, muted_by=muted_by, stop_parent_jobs=stop_parents
    )
    muted_until = now + timedelta(minutes=30) if muted_by else None
    did, kind = what_was_done(verdict, stopped=verdict.act, muted_until=muted_until)
    decision = Decision.STOP if verdict.act else Decision.NOTIFY
    outcome = Outcome(kind, job.name, verdict.reason, decision, Category.STALL)
    return compose_stall_notification(
        job.name, signal.value, verdict, evidence, sample_checkpoints(now), did, outcome, region, now
    )


def stall_stopped(region: str, now: datetime) -> Notification:
    return _stall(region, now)


def stall_muted(region: str, now: datetime) -> Notification:
    return _stall(region, now, muted_by=MUTE_RULE)


def stall_stopped_for_owner(region: str, now: datetime) -> Notification:
    return _stall(region, now, PIPELINE_TAGS)


def stall_left_to_owner(region: str, now: datetime) -> Notification:
    return _stall(region, now, PIPELINE_TAGS, stop_parents=False)


def stall_dry_run(region: str, now: datetime) -> Notification:
    return _stall(region, now, {KEYS.actions: "notify"})


def checkpoint_stale(region: str, now: datetime) -> Notification:
    """Checkpoints written every 20 minutes until 3 hours ago: the prober's judgement, told once."""
    job = watched(now)
    health = judge_checkpoints(
        sample_checkpoints(now, newest_minutes_ago=180, every_minutes=20), job.training_since, now
    )
    kind, category = OutcomeKind.CHECKPOINT_STALE, Category.CHECKPOINT_STALE
    return compose_prober_notice(Outcome(kind, job.job_name, health.reason, Decision.NOTIFY, category), region, now)


def _step_lines(now: datetime, gaps: list[float], losses: list[float]) -> ProgressState:
    """The sample job's contract step lines, one after each of `gaps` up to `now`, folded as the subscription does."""
    times = [now - timedelta(seconds=sum(gaps[i:])) for i in range(len(gaps) + 1)]
    lines = [(at, f"trainguard:progress step={i + 1} loss={losses[i]}") for i, at in enumerate(times)]
    return with_lines(ProgressState(), lines, None)


def slowdown_found(region: str, now: datetime, tags: dict[str, str] | None = None) -> Notification:
    """A step every 10 s, then every 16 s for the last 16 minutes: the prober's notice of the slowdown, and what it
    did about it with the sample job's `tags`."""
    state = _step_lines(now, [10.0] * 120 + [16.0] * 60, [2.0] * 181)
    finding = judge_pace(state, ProgressSettings())
    assert finding is not None
    decision = _decision(FindingKind.SLOWDOWN, now, tags)
    return compose_finding_notice(SAMPLE_JOB, "ml.p4d.24xlarge", 4, finding, None, decision, region=region, now=now)


def divergence_found(region: str, now: datetime, tags: dict[str, str] | None = None) -> Notification:
    """A loss of 2.0 turned NaN a minute ago: the prober's notice, with the checkpoint written before it."""
    state = _step_lines(now, [10.0] * 60, [2.0] * 55 + [float("nan")] * 6)
    finding = judge_loss(state, ProgressSettings())
    assert finding is not None
    checkpoints = sample_checkpoints(now, newest_minutes_ago=10, every_minutes=20)
    decision = _decision(FindingKind.DIVERGED, now, tags)
    return compose_finding_notice(
        SAMPLE_JOB, "ml.p4d.24xlarge", 4, finding, checkpoints, decision, region=region, now=now
    )


def slowdown_stopped(region: str, now: datetime) -> Notification:
    return slowdown_found(region, now, {KEYS.relaunch_if_slow: "true"})


def divergence_stopped(region: str, now: datetime) -> Notification:
    return divergence_found(region, now, {KEYS.stop_if_diverged: "true"})


def _decision(kind: FindingKind, now: datetime, tags: dict[str, str] | None) -> FindingDecision:
    """What the prober decides for the sample job, training, with `tags` besides its opt-in."""
    job = sample_job("InProgress", "", now, tags)
    policy, _ = job_end(job)
    return decide_on_finding(kind, job, policy, None, KEYS, deployer=DeployerSettings(infra_check=True))


def stuck_stopping(region: str, now: datetime) -> Notification:
    job = watched(now, stopping_since=now - timedelta(minutes=42))
    why = stuck_stopping_reason(job, now)
    outcome = Outcome(OutcomeKind.STUCK_STOPPING, job.job_name, why, Decision.NOTIFY, Category.STUCK_STOPPING)
    return compose_prober_notice(outcome, region, now)


def gpus_not_watched(region: str, now: datetime) -> Notification:
    """The sample job at one host more than an idle-GPU alarm can watch: the domain's plan says why, the
    watch's message tells it (workflows/stall_watch.py)."""
    plan = plan_stall_alarms(
        sample_job("InProgress", "", now).name, "ml.p5.48xlarge", MAX_GPU_HOSTS + 1, StallThresholds()
    )
    outcome = Outcome(
        OutcomeKind.PARTLY_WATCHED, plan.job_name, plan.gpu_unwatched, Decision.NOTIFY, Category.IN_PROGRESS
    )
    return compose_partly_watched_notice(outcome, region, now)


# Tags a person mistyped: a step template with a placeholder misspelt, a factor past its bound, minutes with a unit.
UNREADABLE_WATCH_TAGS = {
    KEYS.progress_pattern: "iteration @stp lm loss: @loss",
    KEYS.key("progress-interval-factor"): "50",
    KEYS.key("stall-minutes"): "45m",
}


def watch_tags_not_read(region: str, now: datetime) -> Notification:
    """The sample job with stall and progress tags that cannot be read: the domain's readers say why and what they use
    instead, the watch's start tells it (workflows/stall_watch.py)."""
    job = sample_job("InProgress", "", now, UNREADABLE_WATCH_TAGS)
    problems = (
        *read_stall_thresholds(job.tags, StallThresholds(), KEYS).problems,
        *read_progress_settings(job.tags, ProgressSettings(), KEYS).problems,
    )
    return compose_unread_tags_notice(job.name, problems, region, now)
