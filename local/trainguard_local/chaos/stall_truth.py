"""What a job really did, minute by minute: its log lines and its GPUs. The evidence the replay writes to
CloudWatch comes from here, and so does the audit's verdict on every stop, computed with the documented
stall rule (docs/decisions.md, "Stalls") on the truth rather than on what trainguard read.

A job writes one log line a minute from the moment it trains, except while hung or in a healthy silence
(a job silent from its start wrote one line as training started); each host reports GPUUtilization once a
minute: 70 per GPU while working, 0 when hung with idle GPUs or loading a first checkpoint, 100 per GPU in
a hung collective.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from trainguard.domain.instance_types import gpus_per_host
from trainguard.domain.stalls import StallThresholds
from trainguard_local.chaos.world import JobTruth

MINUTE = timedelta(minutes=1)
WORKING_PER_GPU = 70.0
HUNG_COLLECTIVE_PER_GPU = 100.0


def last_log_time(job: JobTruth, moment: datetime) -> datetime | None:
    if job.training_since is None or moment < job.training_since:
        return None
    end = moment
    if job.hung_since is not None and job.hung_since <= end:
        end = job.hung_since
    if job.silent is not None and job.silent[0] <= end < job.silent[1]:
        end = job.silent[0]
    return job.training_since + MINUTE * ((end - job.training_since) // MINUTE)


def gpu_per_host(job: JobTruth, moment: datetime) -> float | None:
    """A host's GPUUtilization at `moment` (100 per GPU), or None before the job trains."""
    if job.training_since is None or moment < job.training_since:
        return None
    gpus = gpus_per_host(job.instance_type) or 1
    if job.hung_since is not None and moment >= job.hung_since:
        return 0.0 if job.gpus_idle_when_hung else HUNG_COLLECTIVE_PER_GPU * gpus
    if job.silent is not None and job.silent[0] <= moment < job.silent[1] and job.silent_gpus_idle:
        return 0.0
    return WORKING_PER_GPU * gpus


def minute_marks(job: JobTruth, start: datetime, end: datetime) -> list[datetime]:
    """The minutes at which the job reported, from `start` to `end` (both included)."""
    if job.training_since is None:
        return []
    first = max(start, job.training_since)
    offset = (first - job.training_since) // MINUTE
    mark = job.training_since + MINUTE * offset
    if mark < first:
        mark += MINUTE
    marks = []
    while mark <= end:
        marks.append(mark)
        mark += MINUTE
    return marks


def stalled(job: JobTruth, moment: datetime, thresholds: StallThresholds) -> bool:
    """The documented rule on the truth: past the startup grace, silent for `stall_minutes`, or silent for
    `gpu_idle_minutes` with every GPU idle over that window."""
    if job.training_since is None:
        return False
    grace_end = job.training_since + timedelta(minutes=thresholds.startup_grace_minutes)
    if moment < grace_end:
        return False
    newest = last_log_time(job, moment)
    silence = moment - max(newest or grace_end, grace_end)
    if silence >= timedelta(minutes=thresholds.stall_minutes):
        return True
    window = timedelta(minutes=thresholds.gpu_idle_minutes)
    if silence < window:
        return False
    gpus = gpus_per_host(job.instance_type) or 1
    idle_at = thresholds.gpu_idle_percent * gpus
    values = [gpu_per_host(job, mark) for mark in minute_marks(job, moment - window, moment)]
    return bool(values) and all(value is not None and value <= idle_at for value in values)
