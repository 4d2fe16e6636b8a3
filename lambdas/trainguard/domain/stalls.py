"""Stalls: a job that is InProgress but does nothing. Two signals, per job, with a startup grace.

- Log silence: no new log event in any of the job's streams for longer than the job's own limit
  (log_rhythm.py: its `stall-minutes` tag, else what its own log rhythm says once it has shown enough of
  it, else the fixed `stall-minutes`, default 30). The broad signal: a hung NCCL collective often keeps
  the GPUs at 100% and writes nothing.
- Idle GPUs: GPUUtilization at or below `gpu-idle-percent` of every GPU on every host for
  `gpu-idle-minutes` (default 20). The fast confirmation of a dead data loader. A job whose GPUs are
  idle but whose logs still move is in a CPU phase (evaluation, preprocessing): it is not stopped.
  So the idle-GPU signal stops a job only when its logs have also been silent that long, and longer
  than a normal gap of its own rhythm (`idle_gpu_silence_minutes`).

No verdict while the job is not Training (Starting, Downloading, Uploading, ...), nor during
`startup-grace-minutes` (default 20) after training (re)started: a first checkpoint load or a
compile step is not a hang. Silence is counted from the end of the grace at the earliest, so a job
silent from its start is stopped no sooner than grace + limit. A stall alarm muted by a CloudWatch
alarm mute rule is told, never acted on. A hang of a job a parent owns (ownership.py) is stopped like any other,
never relaunched, unless the setting `stop_stalled_parent_jobs` is off: then it is told, never stopped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from trainguard.domain.log_rhythm import LogRhythm, SilenceLimit, lowered, silence_limit
from trainguard.domain.model import TrainingJob, instances_of
from trainguard.domain.ownership import Parent, find_parent, stall_left_to_parent, stall_stopped_for_parent
from trainguard.domain.policy import JobPolicy, TagKeys, TagProblem, read_int_tag
from trainguard.domain.progress_limits import ProgressCheck, judge_progress
from trainguard.domain.progress_settings import ProgressSettings
from trainguard.domain.progress_watch import ProgressState
from trainguard.domain.wording import format_value

ALARM_PREFIX = "trainguard-stall-"


class StallSignal(StrEnum):
    LOG_SILENCE = "log-silence"
    IDLE_GPU = "idle-gpu"


@dataclass(frozen=True)
class StallThresholds:
    stall_minutes: int = 30
    gpu_idle_minutes: int = 20
    gpu_idle_percent: int = 5
    startup_grace_minutes: int = 20
    problems: tuple[TagProblem, ...] = field(default=())
    stall_minutes_tagged: bool = False  # the job's own stall-minutes tag set stall_minutes: it wins over rhythm


def read_stall_thresholds(tags: Mapping[str, str], defaults: StallThresholds, keys: TagKeys) -> StallThresholds:
    """The job's thresholds: the defaults, overridden per job by tag. Bad values fall back and are reported."""
    problems: list[TagProblem] = []
    stall_key = keys.key("stall-minutes")
    stall_minutes = read_int_tag(tags, stall_key, defaults.stall_minutes, 5, 1440, problems, " min")
    return StallThresholds(
        stall_minutes=stall_minutes,
        gpu_idle_minutes=read_int_tag(
            tags, keys.key("gpu-idle-minutes"), defaults.gpu_idle_minutes, 5, 1440, problems, " min"
        ),
        gpu_idle_percent=read_int_tag(
            tags, keys.key("gpu-idle-percent"), defaults.gpu_idle_percent, 0, 50, problems, "%"
        ),
        startup_grace_minutes=read_int_tag(
            tags, keys.key("startup-grace-minutes"), defaults.startup_grace_minutes, 0, 720, problems, " min"
        ),
        problems=tuple(problems),
        stall_minutes_tagged=stall_key in tags and not any(p.key == stall_key for p in problems),
    )


def job_hosts(job: TrainingJob) -> tuple[str, int]:
    """The job's instance type and its number of hosts (instance groups added up; Host dimensions run
    algo-1..algo-<total>, an assumption for heterogeneous clusters)."""
    kind, count = instances_of(job.description.get("ResourceConfig"))
    return kind, max(count, 1)


def alarm_name(signal: StallSignal, job_name: str) -> str:
    """`trainguard-stall-<signal>-<job>`: the signal first, so a job name with hyphens parses back."""
    return f"{ALARM_PREFIX}{signal.value}-{job_name}"


def parse_alarm_name(name: str) -> tuple[StallSignal, str] | None:
    if not name.startswith(ALARM_PREFIX):
        return None
    rest = name[len(ALARM_PREFIX) :]
    for signal in StallSignal:
        if rest.startswith(signal.value + "-") and len(rest) > len(signal.value) + 1:
            return signal, rest[len(signal.value) + 1 :]
    return None


# Secondary statuses in which a quiet job is expected to be quiet.
_NOT_TRAINING_YET = "is {status}: a job that is not Training yet (or any more) is expected to be quiet"

# Cluster repair: "If you are running a training job that fails on a GPU, SageMaker AI will run a GPU health
# check [...] reboot the instance [or] replace the instance. [...] During this process, you will see the
# following message in your training job status: Repairing training cluster due to hardware failure. SageMaker AI
# will attempt to repair the cluster up to 10 times. If the cluster repair is successful, SageMaker AI will
# automatically restart the training job from the previous checkpoint. If the cluster repair fails, the training
# job will also fail." (https://docs.aws.amazon.com/sagemaker/latest/dg/model-checkpoints-cluster-repair.html)
# The page names no SecondaryStatus; botocore's enum has "Restarting", undocumented in its text. AWS warns not to
# branch on status messages to *initiate* actions; here the message only *holds one back*, the safe direction, so
# either sign is enough. A repair that fails ends the job Failed, and that end is handled as usual.
REPAIR_SECONDARY_STATUSES = frozenset({"Restarting"})
_REPAIR_MESSAGE = "repairing training cluster"


def repair_under_way(job: TrainingJob) -> str:
    """Why SageMaker is repairing or restarting the job's cluster itself ('' when nothing says so)."""
    if job.status != "InProgress":
        return ""
    if job.secondary_status in REPAIR_SECONDARY_STATUSES:
        return f"SageMaker is restarting the job itself (SecondaryStatus {job.secondary_status})"
    transitions = job.description.get("SecondaryStatusTransitions")
    newest = transitions[-1] if isinstance(transitions, list) and transitions else None
    message = newest.get("StatusMessage") if isinstance(newest, Mapping) else None
    if isinstance(message, str) and _REPAIR_MESSAGE in message.lower():
        return (
            f"SageMaker is repairing the training cluster and will restart the job itself ({message.strip()[:120]!r})"
        )
    return ""


def grace_reason(job: TrainingJob, thresholds: StallThresholds, now: datetime) -> str:
    """Why no stall verdict may be given now ('' when one may)."""
    if job.status != "InProgress":
        return f"the job is {job.status}, not InProgress"
    if repair := repair_under_way(job):
        return repair
    if job.secondary_status != "Training":
        return "the job " + _NOT_TRAINING_YET.format(status=job.secondary_status or "in an unknown phase")
    if job.training_since is None:
        return "the job has not reported when training started"
    grace = timedelta(minutes=thresholds.startup_grace_minutes)
    if now - job.training_since < grace:
        return (
            f"training (re)started {_minutes(now - job.training_since)} ago, within the "
            f"{thresholds.startup_grace_minutes} min startup grace"
        )
    return ""


@dataclass(frozen=True)
class StallEvidence:
    last_log_time: datetime | None  # newest event in any of the job's streams (None: none found)
    last_log_line: str
    gpu_by_host: dict[str, float]  # each host's highest GPUUtilization over the idle window
    gpus_per_host: int | None  # None when the instance type's GPU count is not known
    rhythm: LogRhythm = field(default_factory=LogRhythm)  # the job's log rhythm, as the ledger has it
    deferred: bool = False  # this silence was judged busy past the learned limit: the fixed threshold applies
    # What the job's lines said of its steps (progress_watch.py) and its rules' figures: a job that reports
    # progress is judged by it (progress_limits.py), not by its silence.
    progress: ProgressState = field(default_factory=ProgressState)
    progress_settings: ProgressSettings = field(default_factory=ProgressSettings)


@dataclass(frozen=True)
class StallVerdict:
    stalled: bool
    act: bool  # stalled and the job's actions allow a stop (not a dry run)
    reason: str
    silence: timedelta | None = None
    parent: Parent | None = None  # the service that owns the job: a stop is never followed by a relaunch
    parent_stops_off: bool = False  # a parent's job, told only: the setting stop_stalled_parent_jobs is off
    # Set the alarm back to OK: it fired during the startup grace, and would stay in ALARM and send no new
    # event when the grace ends; back in OK, it fires again if the condition still holds. Other "not a
    # stall" verdicts clear themselves (the metric moves back) or are covered by the other signal (idle GPUs
    # while the job logs: if the logs then stop, the log-silence alarm fires).
    rearm: bool = False
    limit: SilenceLimit | None = None  # the log silence that makes a stall for this job, and why
    muted_by: str = ""  # the alarm mute rule that muted the alarm: a stall is told, never stopped
    # Past a learned limit with busy GPUs: judge this silence at the fixed threshold (the ledger keeps it, the
    # prober's metric drops below 0, and the alarm fires again at the fixed threshold if no line comes).
    defer: bool = False
    progress: ProgressCheck | None = None  # the progress rule that judged the job (None: judged by its silence)


def job_silence_limit(
    thresholds: StallThresholds, rhythm: LogRhythm, newest_line: str, *, deferred: bool = False
) -> SilenceLimit:
    """The job's log-silence limit: its tag, its own rhythm, or the fixed threshold (log_rhythm.py).
    `deferred`: this silence went past the learned limit with busy GPUs, and waits for the fixed one."""
    return silence_limit(
        thresholds.stall_minutes, rhythm, newest_line, tagged=thresholds.stall_minutes_tagged, deferred=deferred
    )


def gpu_window_start(thresholds: StallThresholds, newest_line: datetime | None, now: datetime) -> datetime:
    """From when the verdict reads the GPUs: the idle window, or the silence if it is shorter (a silence past a
    learned limit of a few minutes is a stall only if the GPUs went idle with it); never less than two minutes."""
    since = now - timedelta(minutes=thresholds.gpu_idle_minutes)
    if newest_line is None:
        return since
    return min(max(since, newest_line + timedelta(minutes=1)), now - timedelta(minutes=2))


def idle_gpu_silence_minutes(thresholds: StallThresholds, limit: SilenceLimit) -> float:
    """The log silence that idle GPUs need beside them to be a stall: `gpu-idle-minutes`, but never less than
    what the job's own rhythm calls a normal gap, and never more than its log-silence limit (which stops the
    job on silence alone). Without rhythm this is today's rule: 20 idle minutes with 20 silent ones."""
    return min(limit.minutes, max(float(thresholds.gpu_idle_minutes), limit.rhythm_minutes))


def judge_stall(
    signal: StallSignal,
    job: TrainingJob,
    policy: JobPolicy,
    thresholds: StallThresholds,
    evidence: StallEvidence,
    now: datetime,
    *,
    muted_by: str = "",
    stop_parent_jobs: bool = True,
) -> StallVerdict:
    """Is the job stalled now, by this signal? The alarm is a hint; this is checked on fresh facts.
    `muted_by`: the mute rule that muted the alarm (the team said "leave it alone for now").
    `stop_parent_jobs`: the setting stop_stalled_parent_jobs (off: a parent's hung job is told, never stopped)."""
    if not policy.enabled:
        return StallVerdict(False, False, f"not opted in: {policy.why_not_enabled}")
    grace = grace_reason(job, thresholds, now)
    if grace:
        return StallVerdict(False, False, f"no stall verdict: {grace}", rearm=job.status == "InProgress")
    assert job.training_since is not None
    silence = now - silence_clock_start(job.training_since, evidence.last_log_time, thresholds)
    limit = job_silence_limit(thresholds, evidence.rhythm, evidence.last_log_line, deferred=evidence.deferred)
    since, newest = job.training_since, evidence.last_log_time
    fixed, reported, settings = thresholds.stall_minutes, evidence.progress, evidence.progress_settings
    grace_end = silence_clock_start(since, None, thresholds)  # no step limit counts from before it either
    progress = judge_progress(
        reported, settings, now, fixed_minutes=fixed, training_since=since, newest_line=newest, grace_end=grace_end
    )
    quiet_since = evidence.progress.quiet_since
    if progress is not None and quiet_since is not None:  # no advancing step is no sign of life
        silence = max(silence, now - silence_clock_start(since, quiet_since, thresholds))
    if signal is StallSignal.LOG_SILENCE and progress is not None:
        if not progress.stalled:
            why = f"not a stall: {progress.reason}"
            return StallVerdict(False, False, why, silence, rearm=True, progress=progress.check)
        reason = progress.reason
    elif signal is StallSignal.LOG_SILENCE:
        fixed_span = timedelta(minutes=thresholds.stall_minutes)
        if timedelta(minutes=limit.minutes) <= silence < fixed_span and lowered(limit, thresholds.stall_minutes):
            idle, gpu_text = _gpus_idle(evidence, thresholds)
            if not idle:
                why = (
                    f"no new log line for {_minutes(silence)}, past the job's learned limit of {limit.describe()}. "
                    f"But its GPUs are busy: {gpu_text}. A phase it has not shown before looks the same as a hung "
                    f"collective, so this silence is judged at the fixed {thresholds.stall_minutes} min"
                )
                return StallVerdict(False, False, why, silence, limit=limit, defer=True)
        if silence < timedelta(minutes=limit.minutes):
            why = f"the job logged {_minutes(silence)} ago, within its limit of {limit.describe()}; not a stall"
            # Re-armed: the prober's view of the limit (the ledger's line and tags) may differ from this fresh one
            # (a line the Logs API returns first, a tag changed since); left in ALARM, the alarm would never fire again.
            return StallVerdict(False, False, why, silence, limit=limit, rearm=True)
        reason = f"no new log line for {_minutes(silence)}, past this job's log-silence limit of {limit.minutes:g} min"
    else:
        idle, gpu_text = _gpus_idle(evidence, thresholds)
        if not idle:
            return StallVerdict(
                False, False, f"the GPUs are not idle now, so not a stall: {gpu_text}", silence, limit=limit
            )
        needed = idle_gpu_silence_minutes(thresholds, limit)
        if silence < timedelta(minutes=needed):
            why = (
                f"the GPUs are idle but the job logged {_minutes(silence)} ago: a CPU phase, not a stall. With idle "
                f"GPUs, {needed:g} min of silence make a stall for this job. GPUs: {gpu_text}"
            )
            return StallVerdict(False, False, why, silence, limit=limit)
        reason = (
            f"GPUs idle for {thresholds.gpu_idle_minutes} min and no new log line for {_minutes(silence)}. With idle "
            f"GPUs, {needed:g} min of silence make a stall for this job; its log-silence limit is {limit.minutes:g} "
            f"min. GPUs: {gpu_text}"
        )
    check = progress.check if progress is not None else None
    parent = find_parent(job_name=job.name, description=job.description, tags=job.tags)
    if parent is not None and not stop_parent_jobs:
        why = stall_left_to_parent(reason, parent)
        return StallVerdict(True, False, why, silence, parent, True, limit=limit, progress=check)
    if parent is not None:
        reason = stall_stopped_for_parent(reason, parent)
    if muted_by:
        why = f"{reason}. Not stopped: the alarm is muted by {muted_by}, so trainguard only tells"
        return StallVerdict(True, False, why, silence, parent, limit=limit, muted_by=muted_by, progress=check)
    if not policy.allows("stop"):
        why = f"{reason}; dry run: trainguard would stop it, but does nothing"
        return StallVerdict(True, False, why, silence, parent, limit=limit, progress=check)
    return StallVerdict(True, True, reason, silence, parent, limit=limit, progress=check)


def _gpus_idle(evidence: StallEvidence, thresholds: StallThresholds) -> tuple[bool, str]:
    if not evidence.gpu_by_host:
        return False, "no GPU figures"
    per_host_limit = thresholds.gpu_idle_percent * (evidence.gpus_per_host or 1)
    busiest = max(evidence.gpu_by_host.values())
    most = f" of a possible {100 * evidence.gpus_per_host}%" if evidence.gpus_per_host else ""
    text = (
        f"the busiest host's GPUUtilization peaked at {format_value(busiest)}%{most}, and idle is at or below "
        f"{format_value(per_host_limit)}%"
    )
    return busiest <= per_host_limit, text


def _minutes(delta: timedelta) -> str:
    return f"{int(delta.total_seconds() // 60)} min"


def silence_clock_start(
    training_since: datetime, last_log_time: datetime | None, thresholds: StallThresholds
) -> datetime:
    """Where a job's silence is counted from: its newest log line, but never earlier than the end of its startup
    grace. A first checkpoint load silent for the grace and then some is given the whole threshold after the grace."""
    grace_end = training_since + timedelta(minutes=thresholds.startup_grace_minutes)
    return max(last_log_time or grace_end, grace_end)
