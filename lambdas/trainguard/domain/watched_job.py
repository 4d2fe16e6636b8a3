"""A job trainguard watches for stalls: what the prober reads each minute from the ledger (its hosts, when it
started training, its newest log line and its log rhythm), the value its log-silence alarm watches, and a
stop that does not finish."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from trainguard.domain.log_rhythm import LogRhythm, SilenceLimit
from trainguard.domain.progress_limits import ProgressJudgement, judge_progress
from trainguard.domain.progress_rule import ProgressRule, compile_template
from trainguard.domain.progress_settings import ProgressSettings
from trainguard.domain.progress_watch import ProgressState
from trainguard.domain.stalls import StallThresholds, job_silence_limit, silence_clock_start


@dataclass(frozen=True)
class WatchedJob:
    """A job trainguard watches for stalls: what the prober needs each minute, kept in the ledger."""

    job_name: str
    instance_type: str
    host_count: int
    thresholds: StallThresholds
    training_since: datetime | None  # None while the job is not Training (Starting, Downloading, ...)
    last_log_time: datetime | None = None
    last_log_line: str = ""
    stopping_since: datetime | None = None
    rhythm: LogRhythm = field(default_factory=LogRhythm)
    muted_until: datetime | None = None  # a muted stall alarm: re-armed when its mute window ends
    muted_alarm: str = ""
    checkpoint_uri: str = ""  # CheckpointConfig.S3Uri: the prefix checkpoint_health.py reads
    deferred_line: datetime | None = None  # the newest line when a busy silence was deferred (stalls.py)
    progress: ProgressState = field(default_factory=ProgressState)  # what its lines said of its steps
    progress_settings: ProgressSettings = field(default_factory=ProgressSettings)  # its progress rules' figures

    @property
    def silence_deferred(self) -> bool:
        """The present silence (since the newest line) waits for the fixed threshold."""
        return self.deferred_line is not None and self.deferred_line == self.last_log_time

    def silence_limit(self) -> SilenceLimit:
        return job_silence_limit(self.thresholds, self.rhythm, self.last_log_line, deferred=self.silence_deferred)


@dataclass(frozen=True)
class LoggedLines:
    """What a delivery of a watched job's lines changes in its entry: its newest line, its rhythm and its progress
    (None: left as it is)."""

    newest: datetime
    last_line: str
    rhythm: LogRhythm
    progress: ProgressState | None = None


STUCK_STOPPING = timedelta(minutes=30)


def log_silence_minutes(job: WatchedJob, now: datetime) -> float:
    """The value the log-silence alarm watches: minutes since `silence_clock_start`, 0 while the job is
    not Training or is in its startup grace, so the alarm crosses its threshold only once a verdict is
    allowed (an alarm that went to ALARM during the grace would send no new event when it ends)."""
    if job.training_since is None or job.stopping_since is not None:
        return 0.0
    start = silence_clock_start(job.training_since, job.last_log_time, job.thresholds)
    return max(0.0, (now - start).total_seconds() / 60)


def log_silence_over_limit(job: WatchedJob, now: datetime) -> float:
    """The value the log-silence alarm watches (>= 0 fires it): the job's log silence minus its own limit,
    in minutes. Negative: the minutes left before a verdict. The limit moves with the job's rhythm and its
    newest line, so the alarm itself never has to be changed."""
    return log_silence_minutes(job, now) - job.silence_limit().minutes


def progress_rule(job: WatchedJob) -> ProgressRule | None:
    """The job's own progress rule (its progress-pattern tag, checked when the watch began), compiled."""
    compiled = compile_template(job.progress_settings.pattern) if job.progress_settings.pattern else None
    return None if isinstance(compiled, str) else compiled


def progress_judgement(job: WatchedJob, now: datetime) -> ProgressJudgement | None:
    """The job's progress verdict now (progress_limits.py), or None when it reports no progress."""
    settings, fixed = job.progress_settings, job.thresholds.stall_minutes
    since, newest = job.training_since, job.last_log_time
    grace_end = rhythm_counted_from(job) if since is not None else None
    return judge_progress(
        job.progress, settings, now, fixed_minutes=fixed, training_since=since, newest_line=newest, grace_end=grace_end
    )


def stall_over_limit(job: WatchedJob, now: datetime) -> float:
    """The value the log-silence alarm watches (>= 0 fires it). A job that reports progress: the minutes past its
    progress deadline, never before the end of its startup grace (the silence's clock starts there too); one that
    reports nothing: its log silence over its own limit (log_silence_over_limit)."""
    judgement = progress_judgement(job, now) if job.training_since and job.stopping_since is None else None
    if judgement is None or job.training_since is None:
        return log_silence_over_limit(job, now)
    grace_end = job.training_since + timedelta(minutes=job.thresholds.startup_grace_minutes)
    return min(judgement.over_limit_minutes(now), (now - grace_end).total_seconds() / 60)


def rhythm_counted_from(job: WatchedJob) -> datetime:
    """From when a job's log gaps count in its rhythm: the end of its startup grace (never, before it trains)."""
    if job.training_since is None:
        return datetime.max.replace(tzinfo=UTC)
    return job.training_since + timedelta(minutes=job.thresholds.startup_grace_minutes)


def verdict_look_back(thresholds: StallThresholds, watched: WatchedJob | None) -> timedelta:
    """How far back the stall verdict reads a job's newest log line: the longest of the alarms' thresholds and the
    job's own log-silence limit, and 5 minutes more."""
    limit = watched.silence_limit().minutes if watched else 0.0
    return timedelta(minutes=max(thresholds.stall_minutes, thresholds.gpu_idle_minutes, limit) + 5)


def is_stuck_stopping(job: WatchedJob, now: datetime) -> bool:
    """A stop that has not finished in 30 min: users have seen stops hang for a day on a stalled upload."""
    return job.stopping_since is not None and now - job.stopping_since >= STUCK_STOPPING


def stuck_stopping_reason(job: WatchedJob, now: datetime) -> str:
    assert job.stopping_since is not None
    minutes = int((now - job.stopping_since).total_seconds() // 60)
    return (
        f"{job.job_name} has been Stopping for {minutes} min. A stop sends SIGTERM and kills the job after "
        "120 s, then uploads the model and the checkpoints; a stop that takes this long usually means the upload "
        "has stalled. The instances may still be billed."
    )
