"""The ports a workflow acts through. The adapters implement them; tests pass fakes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from trainguard.domain.checkpoints import CheckpointState
from trainguard.domain.messages import Notification
from trainguard.domain.model import TrainingJob
from trainguard.domain.outcome import Outcome
from trainguard.domain.quotas import WaitingLaunch
from trainguard.domain.watch_discovery import ListedJob
from trainguard.domain.watched_job import LoggedLines, WatchedJob


@dataclass(frozen=True)
class JobNotFound:
    name: str


class LaunchResult(StrEnum):
    CREATED = "created"
    ALREADY_EXISTS = "already-exists"  # an earlier delivery created it: the same failure, the same name


class NameTaken(RuntimeError):
    """The relaunch's name belongs to a job trainguard did not launch for this failure."""


class LaunchRefused(RuntimeError):
    """SageMaker refused the CreateTrainingJob request for a reason a retry of the call won't fix."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class StepInProgress(RuntimeError):
    """Another invocation holds the lease on this step; raise so Lambda redelivers later."""


class StepState(StrEnum):
    FIRST = "first"  # this invocation holds the lease and should act
    DONE = "done"  # already handled; `recorded` holds what was done


@dataclass(frozen=True)
class StepStart:
    state: StepState
    recorded: dict[str, Any]


@dataclass(frozen=True)
class QuotaInfo:
    code: str
    name: str
    value: float


@dataclass(frozen=True)
class QuotaRequestState:
    request_id: str
    quota_code: str
    quota_name: str
    desired_value: float
    status: str  # PENDING, CASE_OPENED, APPROVED, DENIED, NOT_APPROVED, CASE_CLOSED, INVALID_REQUEST
    case_id: str = ""

    @property
    def is_open(self) -> bool:
        return self.status in ("PENDING", "CASE_OPENED")


def fresh(found: TrainingJob | JobNotFound) -> TrainingJob | None:
    """The described job, or None when it no longer exists."""
    return found if isinstance(found, TrainingJob) else None


# Each port names only the methods its callers call: a function is granted the IAM actions of its ports'
# methods (trainguard.adapters.permissions), so a narrower port is a narrower role.
class JobReader(Protocol):
    def describe(self, name: str) -> TrainingJob | JobNotFound: ...


class JobLauncher(JobReader, Protocol):
    def create(self, request: dict[str, Any], retry_of: str, retry_of_tag_key: str) -> LaunchResult: ...


class JobFinder(JobReader, Protocol):
    """The InProgress jobs, and one job's tags: what the prober reads to find an opted-in job nobody watches."""

    def training_now(self) -> list[ListedJob]: ...

    def tags_of(self, arn: str) -> dict[str, str]: ...


class JobStopper(JobReader, Protocol):
    def stop(self, name: str) -> bool: ...


class ProberJobs(JobFinder, JobStopper, Protocol):
    """The prober's: finding opted-in jobs nobody watches, and stopping one for a finding its owner gave leave for
    (workflows/findings.py)."""


class Checkpoints(Protocol):
    def read(self, s3_uri: str) -> CheckpointState: ...


class StepLedger(Protocol):
    """Leases on steps (trainguard.workflows.once): taken, recorded, or given back for a redelivery to act again."""

    def begin_step(self, job_name: str, step: str, now: datetime) -> StepStart: ...

    def finish_step(self, job_name: str, step: str, outcome: Outcome, now: datetime) -> None: ...

    def abandon_step(self, job_name: str, step: str) -> None: ...


class LedgerPort(StepLedger, Protocol):
    """Besides the steps: a finished step's record, the budget of launches (trainguard.workflows.launch_budget),
    and the lineage."""

    def step_record(self, job_name: str, step: str) -> dict[str, Any] | None: ...

    def take_launch_budget(self, launch: str, now: datetime, limit: int) -> bool: ...

    def give_back_launch_budget(self, launch: str, now: datetime) -> None: ...

    def record_lineage(self, root_job: str, attempt: int, job_name: str, retry_of: str, now: datetime) -> None: ...


class NotifierPort(Protocol):
    def publish(self, notification: Notification) -> str: ...


class QuotaWallQuotas(Protocol):
    def find(self, quota_name: str) -> QuotaInfo | None: ...

    def current_value(self, quota_code: str) -> float: ...

    def open_request(self, quota_code: str) -> QuotaRequestState | None: ...

    def request_increase(
        self, quota_code: str, desired_value: float, support_case_allowed: bool
    ) -> QuotaRequestState: ...


class QuotasPort(QuotaWallQuotas, Protocol):
    def request_state(self, request_id: str) -> QuotaRequestState: ...


class QuotaLedgerPort(Protocol):
    def save_request(self, state: QuotaRequestState, now: datetime) -> None: ...

    def requests(self) -> list[QuotaRequestState]: ...

    def save_waiting(self, waiting: WaitingLaunch) -> None: ...

    def waiting(self) -> list[WaitingLaunch]: ...

    def remove_waiting(self, job_name: str) -> None: ...


class LogActivityLedger(Protocol):
    """A watched job's newest log line and its log rhythm."""

    def watched_job(self, job_name: str) -> list[WatchedJob]: ...

    def record_log_lines(self, job_name: str, lines: LoggedLines, previous: datetime | None) -> bool: ...

    def record_log_activity(self, job_name: str, newest: datetime, last_line: str) -> bool: ...


class StallRecords(Protocol):
    """The evidence of a stop, read when the stopped job is relaunched."""

    def stall_record(self, job_name: str) -> dict[str, Any] | None: ...


class WatchList(Protocol):
    """The watched jobs, and the end of a muted stall alarm's wait."""

    def watched(self) -> list[WatchedJob]: ...

    def unmute(self, job_name: str) -> bool: ...


class WatchedJobs(Protocol):
    """One watched job's entry, and forgetting it."""

    def watched_job(self, job_name: str) -> list[WatchedJob]: ...

    def unwatch(self, job_name: str) -> None: ...


class WatchStarter(WatchedJobs, Protocol):
    """Start (or update) watching a job, besides reading and forgetting it."""

    def watch(self, job: WatchedJob) -> None: ...


class JobWatch(WatchStarter, StallRecords, Protocol):
    """The job-events function's: a job's watch, and the evidence of its stop."""


class ProberWatchList(WatchList, WatchStarter, Protocol):
    """The prober's: the watch list, starting the watch of an opted-in job it finds unwatched, and the record of a
    stop for a finding (read at the job's end, as a stall's is)."""

    def record_stall(self, job_name: str, evidence: dict[str, Any], now: datetime) -> None: ...


class StallEvidence(WatchedJobs, StallRecords, Protocol):
    def record_stall(self, job_name: str, evidence: dict[str, Any], now: datetime) -> None: ...

    def mute(self, job_name: str, alarm_name: str, until: datetime) -> bool: ...

    def defer(self, job_name: str, newest_line: datetime) -> bool: ...


class AlarmRemover(Protocol):
    def delete(self, names: list[str]) -> None: ...


class AlarmWatch(AlarmRemover, Protocol):
    """Put and delete a watched job's alarms."""

    def create(self, plan: Any) -> None: ...


class AlarmRearmer(AlarmRemover, Protocol):
    """Set a stall alarm back to OK after a false alarm; delete the alarms of a job no longer watched."""

    def rearm(self, alarm_name: str, reason: str) -> None: ...


class AlarmSweeper(AlarmRemover, Protocol):
    """List and delete orphaned alarms; publish the log-silence metric the alarms watch; re-arm a muted
    stall alarm when its mute window has ended; put again a log-silence alarm an earlier version made."""

    def rearm(self, alarm_name: str, reason: str) -> None: ...

    def list_owned(self) -> dict[str, str]: ...

    def publish_log_silence(self, values: Mapping[str, float], at: datetime) -> None: ...

    def outdated_log_silence_alarms(self) -> list[str]: ...

    def put_metric_alarm(self, request: Mapping[str, Any]) -> None: ...


class ProberAlarms(AlarmSweeper, AlarmWatch, Protocol):
    """The sweeper's calls, and putting the alarms of a job whose watch the prober starts."""


class JobLogsPort(Protocol):
    def newest_event(self, job_name: str, since: datetime) -> tuple[datetime | None, str]: ...


class GpuMetricsPort(Protocol):
    def busiest_by_host(self, job_name: str, host_count: int, since: datetime, now: datetime) -> dict[str, float]: ...


class GpuAveragesPort(Protocol):
    """Each host's mean GPUUtilization over a span: which host a slow job's slowness may be (domain/slow_hosts.py)."""

    def average_by_host(self, job_name: str, host_count: int, since: datetime, now: datetime) -> dict[str, float]: ...


class SchedulerPort(Protocol):
    def schedule_relaunch(self, failed_job: str, at: datetime, reason: str) -> str: ...
