"""The ports each Lambda function runs with: only the adapters its workflows call, each as narrow as its calls.

Each handler module builds its function's (its `build_ports`), and the function's IAM role is derived from them
(infra/port_permissions.actions_of_ports); tests/unit/test_function_ports.py reads the workflows to show that every
port here is called and that no narrower one would need fewer actions. A workflow shared by functions takes the
union of their ports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from trainguard.config import GuardConfig
from trainguard.domain.policy import TagKeys
from trainguard.workflows.ports import (
    AlarmRearmer,
    AlarmWatch,
    Checkpoints,
    GpuAveragesPort,
    GpuMetricsPort,
    JobLauncher,
    JobLogsPort,
    JobStopper,
    JobWatch,
    LedgerPort,
    LogActivityLedger,
    NotifierPort,
    ProberAlarms,
    ProberJobs,
    ProberWatchList,
    QuotaLedgerPort,
    QuotasPort,
    QuotaWallQuotas,
    SchedulerPort,
    StallEvidence,
    StallRecords,
    StepLedger,
)


@dataclass(frozen=True, kw_only=True)
class Settled:
    """What every deciding function has besides its adapters: its settings, its region and its clock."""

    config: GuardConfig
    region: str
    clock: Callable[[], datetime]

    @property
    def keys(self) -> TagKeys:
        return TagKeys(self.config.tag_prefix)


@dataclass(frozen=True, kw_only=True)
class QuotaWallPorts(Settled):
    """What meeting a quota wall takes (trainguard.workflows.quota_wall): launch on a fallback, request the
    quota, keep the launch waiting, tell. Each function that meets one has these and more."""

    jobs: JobLauncher
    ledger: LedgerPort
    notifier: NotifierPort
    quotas: QuotaWallQuotas
    quota_ledger: QuotaLedgerPort


@dataclass(frozen=True, kw_only=True)
class RetryLauncherPorts(QuotaWallPorts):
    """A relaunch that waited for capacity, delivered by EventBridge Scheduler."""

    checkpoints: Checkpoints
    stall_ledger: StallRecords
    create_request_shape: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class JobEventsPorts(RetryLauncherPorts):
    """A job's state changes: watch it while it trains (its alarms), and when it ends, what the retry
    launcher does (relaunch it, or meet its quota wall) or schedules the relaunch for later."""

    scheduler: SchedulerPort
    stall_ledger: JobWatch
    alarms: AlarmWatch


@dataclass(frozen=True, kw_only=True)
class FailedLaunchesPorts(QuotaWallPorts):
    """A CreateTrainingJob refused for a quota (CloudTrail): request the quota, launch on a listed fallback."""

    create_request_shape: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class QuotaWatchPorts(QuotaWallPorts):
    """Every few minutes: follow open quota requests and launch what waited for them."""

    quotas: QuotasPort


@dataclass(frozen=True, kw_only=True)
class StallAlarmsPorts(Settled):
    """A stall alarm fired: gather the evidence, stop the job or re-arm the alarm."""

    jobs: JobStopper
    checkpoints: Checkpoints
    ledger: StepLedger
    notifier: NotifierPort
    stall_ledger: StallEvidence
    alarms: AlarmRearmer
    job_logs: JobLogsPort
    gpu_metrics: GpuMetricsPort


@dataclass(frozen=True, kw_only=True)
class StallProberPorts(Settled):
    """Every minute: publish log silence, report stops that do not finish, warn of checkpoints that stopped
    reaching S3, tell (and with leave act on) a slowdown or a divergence, sweep orphaned alarms, start watching
    opted-in jobs that train unwatched."""

    jobs: ProberJobs
    ledger: StepLedger
    notifier: NotifierPort
    stall_ledger: ProberWatchList
    alarms: ProberAlarms
    checkpoints: Checkpoints
    gpu_metrics: GpuAveragesPort


@dataclass(frozen=True, kw_only=True)
class LogActivityPorts(Settled):
    """The training log subscription (and, in a hub, its spokes' forwarded deliveries): record each watched
    job's newest line."""

    stall_ledger: LogActivityLedger


# The workflows several functions share take the union of those functions' ports.
EndedJobPorts = RetryLauncherPorts  # and JobEventsPorts, a subclass
WatchStartPorts = JobEventsPorts | StallProberPorts  # a state change, or the prober finding a job unwatched
StallWatchPorts = JobEventsPorts | StallAlarmsPorts | StallProberPorts
