"""In-memory fakes of the workflow ports, for handler and workflow tests with the network off.

Each fake is held to its adapter's contract: tests/contracts runs the same tests on both. Tests arrange a
fake with its constructor or its documented arrange methods (`add`, `refused_types`, `decide`, `add_alarm`)
and observe it through the port's own methods, or through the documented observation records (what a
fake was asked to do, which no port method reads back): FakeJobs.created/attempts/stops,
FakeNotifier.sent, FakeScheduler.scheduled_at, FakeQuotas.requests, FakeLedger.lineage,
FakeAlarms.published/rearmed.
"""

from __future__ import annotations

import copy
import json
import math
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from trainguard.adapters.ledger import LEASE, budget_hours
from trainguard.adapters.scheduler import schedule_name
from trainguard.adapters.service_model import create_training_job_shape
from trainguard.config import GuardConfig
from trainguard.domain.checkpoints import CheckpointState
from trainguard.domain.log_rhythm import LogRhythm
from trainguard.domain.messages import Notification
from trainguard.domain.model import TrainingJob
from trainguard.domain.origin import Location
from trainguard.domain.outcome import Outcome
from trainguard.domain.progress_settings import ProgressSettings
from trainguard.domain.progress_watch import ProgressState
from trainguard.domain.quotas import WaitingLaunch, normalize_quota_name
from trainguard.domain.stall_alarms import LOG_SILENCE_METRIC, owned_alarm_job, possible_gpu_part_names
from trainguard.domain.stalls import StallSignal, StallThresholds, alarm_name, parse_alarm_name
from trainguard.domain.watch_discovery import ListedJob
from trainguard.domain.watched_job import LoggedLines, WatchedJob
from trainguard.events.training_job import job_from_description
from trainguard.handlers.wiring import PortSet, Site
from trainguard.workflows.function_ports import Settled
from trainguard.workflows.ports import (
    JobNotFound,
    LaunchRefused,
    LaunchResult,
    NameTaken,
    QuotaInfo,
    QuotaRequestState,
    StepInProgress,
    StepStart,
    StepState,
)

Ports = TypeVar("Ports")
ROLE = "arn:aws:iam::123456789012:role/TrainingRole"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def training_spec(instance_type: str, count: int) -> dict[str, Any]:
    """What a test job runs on, as CreateTrainingJob takes it and DescribeTrainingJob gives it back."""
    return {
        "RoleArn": ROLE,
        "AlgorithmSpecification": {
            "TrainingImage": "123456789012.dkr.ecr.us-east-1.amazonaws.com/train:1",
            "TrainingInputMode": "File",
        },
        "OutputDataConfig": {"S3OutputPath": "s3://out-bucket/out"},
        "ResourceConfig": {"InstanceType": instance_type, "InstanceCount": count, "VolumeSizeInGB": 100},
        "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
    }


def described_job(
    name: str = "llama-pretrain",
    *,
    status: str = "Failed",
    secondary: str = "Failed",
    reason: str = "InternalServerError: We encountered an internal error. Please try again.",
    checkpoint: str | None = "s3://ckpt-bucket/llama-pretrain/",
    spot: bool = False,
) -> dict[str, Any]:
    description: dict[str, Any] = {
        "TrainingJobName": name,
        "TrainingJobArn": f"arn:aws:sagemaker:us-east-1:123456789012:training-job/{name}",
        "TrainingJobStatus": status,
        "SecondaryStatus": secondary,
        **training_spec("ml.p4d.24xlarge", 4),
        "HyperParameters": {"lr": "0.0003"},
        "EnableManagedSpotTraining": spot,
        "CreationTime": NOW,
        "ModelArtifacts": {"S3ModelArtifacts": f"s3://out-bucket/out/{name}/output/model.tar.gz"},
    }
    if status == "Failed":
        description["FailureReason"] = reason
    if checkpoint:
        description["CheckpointConfig"] = {"S3Uri": checkpoint, "LocalPath": "/opt/ml/checkpoints"}
    return description


class FakeJobs:
    def __init__(self) -> None:
        self.jobs: dict[str, TrainingJob] = {}
        self.created: list[dict[str, Any]] = []
        self.refuse_with: LaunchRefused | None = None
        self.refused_types: dict[str, LaunchRefused] = {}  # by the request's instance type
        self.attempts: list[dict[str, Any]] = []  # every create, refused or not
        self.stops: list[str] = []
        self.listings = 0  # training_now calls
        self.tags_read: list[str] = []  # tags_of calls, by ARN

    def add(self, description: dict[str, Any], tags: dict[str, str]) -> TrainingJob:
        job = job_from_description(description, tags)
        self.jobs[job.name] = job
        return job

    def describe(self, name: str) -> TrainingJob | JobNotFound:
        return self.jobs.get(name) or JobNotFound(name)

    def training_now(self) -> list[ListedJob]:
        self.listings += 1
        return [ListedJob(j.name, j.arn, j.secondary_status) for j in self.jobs.values() if j.status == "InProgress"]

    def tags_of(self, arn: str) -> dict[str, str]:
        self.tags_read.append(arn)
        return next(dict(j.tags) for j in self.jobs.values() if j.arn == arn)

    def stop(self, name: str) -> bool:
        job = self.jobs[name]
        self.stops.append(name)
        if job.status != "InProgress":
            return False
        self.jobs[name] = replace(job, status="Stopping", secondary_status="Stopping")
        return True

    def create(self, request: dict[str, Any], retry_of: str, retry_of_tag_key: str) -> LaunchResult:
        self.attempts.append(copy.deepcopy(request))
        if self.refuse_with:
            raise self.refuse_with
        refused = self.refused_types.get(request.get("ResourceConfig", {}).get("InstanceType", ""))
        if refused:
            raise refused
        name = request["TrainingJobName"]
        if name in self.jobs:
            if self.jobs[name].tags.get(retry_of_tag_key) == retry_of:
                return LaunchResult.ALREADY_EXISTS
            raise NameTaken(name)
        self.created.append(copy.deepcopy(request))
        tags = {t["Key"]: t["Value"] for t in request.get("Tags", [])}
        desc = {
            **request,
            "TrainingJobStatus": "InProgress",
            "SecondaryStatus": "Starting",
            "TrainingJobArn": f"arn:aws:sagemaker:us-east-1:123456789012:training-job/{name}",
        }
        desc.pop("Tags", None)
        self.add(desc, tags)
        return LaunchResult.CREATED


@dataclass
class FakeCheckpoints:
    """Every s3:// prefix holds `count` objects, the newest at `newest` and the others `every` apart (all at
    `newest` when `every` is None); `error` is a listing that failed."""

    newest: datetime | None = NOW
    count: int = 3
    error: str = ""
    every: timedelta | None = None

    def read(self, s3_uri: str) -> CheckpointState:
        if not s3_uri:
            return CheckpointState("")
        if not s3_uri.startswith("s3://") or len(s3_uri) == len("s3://"):
            return CheckpointState(s3_uri, listing_error="not an s3:// URI")
        if self.error:
            return CheckpointState(s3_uri, listing_error=self.error)
        if not self.count or self.newest is None:
            return CheckpointState(s3_uri, None, self.count)
        step = self.every or timedelta(0)
        times = tuple(sorted(self.newest - step * i for i in range(min(self.count, 500))))
        return CheckpointState(s3_uri, self.newest, self.count, object_times=times)


@dataclass
class FakeLedger:
    """The ledger as adapters/ledger.py keeps it: a lease of LEASE on a step (whole seconds, as the table
    stores it) that a later delivery takes over once it has expired, outcomes as JSON, and the budget of
    launches: per clock hour the names of the launches holding a unit, a unit taken only while this hour's and
    the previous one's together stay below the limit. Observation: `lineage`, the records written, (root,
    attempt, job, retry_of), first one kept; `budget`, the launches holding a unit, by hour."""

    steps: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    budget: dict[str, set[str]] = field(default_factory=dict)  # by hour, as the adapter's budget item
    lineage: list[tuple[str, int, str, str]] = field(default_factory=list)

    def begin_step(self, job_name: str, step: str, now: datetime) -> StepStart:
        record = self.steps.get((job_name, step))
        expired = record is not None and record["status"] == "in_progress" and record["lease_until"] < _seconds(now)
        if record is None or expired:
            self.steps[(job_name, step)] = {"status": "in_progress", "lease_until": _seconds(now + LEASE)}
            return StepStart(StepState.FIRST, {})
        if record["status"] == "done":
            return StepStart(StepState.DONE, copy.deepcopy(record["outcome"]))
        raise StepInProgress(f"{job_name}/{step} is being handled by another invocation")

    def finish_step(self, job_name: str, step: str, outcome: Outcome, now: datetime) -> None:
        recorded = json.loads(json.dumps(outcome.as_dict(), default=str))
        self.steps[(job_name, step)] = {"status": "done", "outcome": recorded}

    def abandon_step(self, job_name: str, step: str) -> None:
        """Only a step still in progress is given back. (The adapter's conditional delete raises
        ConditionalCheckFailedException on a finished or missing step; the workflows abandon only a step
        they hold.)"""
        if self.steps.get((job_name, step), {}).get("status") == "in_progress":
            del self.steps[(job_name, step)]

    def step_record(self, job_name: str, step: str) -> dict[str, Any] | None:
        record = self.steps.get((job_name, step), {})
        return copy.deepcopy(record["outcome"]) if record.get("status") == "done" else None

    def take_launch_budget(self, launch: str, now: datetime, limit: int) -> bool:
        hour, previous = (self.budget.setdefault(h, set()) for h in budget_hours(now))
        if launch in hour or launch in previous:
            return True
        if len(hour) + len(previous) >= limit:
            return False
        hour.add(launch)
        return True

    def give_back_launch_budget(self, launch: str, now: datetime) -> None:
        for hour in budget_hours(now):
            if launch in self.budget.get(hour, set()):
                self.budget[hour].discard(launch)
                return

    def record_lineage(self, root_job: str, attempt: int, job_name: str, retry_of: str, now: datetime) -> None:
        if not any(entry[:3] == (root_job, attempt, job_name) for entry in self.lineage):  # the first item stays
            self.lineage.append((root_job, attempt, job_name, retry_of))


@dataclass
class FakeNotifier:
    sent: list[Notification] = field(default_factory=list)

    def publish(self, notification: Notification) -> str:
        # Every message trainguard sends is of a kind, so tests/unit/test_message_rules.py has a sample of it.
        assert notification.kind is not None, f"a message of no MessageKind: {notification.subject}"
        self.sent.append(notification)
        return f"msg-{len(self.sent)}"


@dataclass
class FakeScheduler:
    """One schedule per failed job, named as the adapter names it; the first one stays."""

    schedules: dict[str, tuple[datetime, str]] = field(default_factory=dict)

    def schedule_relaunch(self, failed_job: str, at: datetime, reason: str) -> str:
        self.schedules.setdefault(failed_job, (at, reason))
        return schedule_name(failed_job)

    def scheduled_at(self, failed_job: str) -> datetime | None:
        """Observation: when the relaunch of `failed_job` is scheduled to fire (None: not scheduled)."""
        scheduled = self.schedules.get(failed_job)
        return None if scheduled is None else scheduled[0]


class FakeQuotas:
    """Service Quotas in memory: quotas by name, requests by id, at most one open request per quota.
    `decide` is AWS deciding a request; `requests` (observation) every request filed, in order."""

    def __init__(self, values: dict[str, float] | None = None) -> None:
        self.values = dict(values or {"ml.p4d.24xlarge for training job usage": 0})
        self.requests: list[QuotaRequestState] = []

    def code(self, name: str) -> str:
        return "L-" + format(abs(hash(name)) % 16**8, "08X")

    def find(self, quota_name: str) -> QuotaInfo | None:
        """By name, compared as the adapter compares it (normalize_quota_name: case and spacing ignored)."""
        wanted = normalize_quota_name(quota_name)
        name = next((name for name in self.values if normalize_quota_name(name) == wanted), None)
        return None if name is None else QuotaInfo(self.code(name), name, self.values[name])

    def _name(self, code: str) -> str:
        return next(name for name in self.values if self.code(name) == code)

    def current_value(self, quota_code: str) -> float:
        return self.values[self._name(quota_code)]

    def open_request(self, quota_code: str) -> QuotaRequestState | None:
        return next((r for r in self.requests if r.quota_code == quota_code and r.is_open), None)

    def request_increase(self, quota_code: str, desired_value: float, support_case_allowed: bool) -> QuotaRequestState:
        existing = self.open_request(quota_code)
        if existing:
            return existing
        state = QuotaRequestState(
            f"req-{len(self.requests) + 1}", quota_code, self._name(quota_code), desired_value, "PENDING"
        )
        self.requests.append(state)
        return state

    def request_state(self, request_id: str) -> QuotaRequestState:
        return next(r for r in self.requests if r.request_id == request_id)

    def decide(self, request_id: str, status: str) -> None:
        state = self.request_state(request_id)
        self.requests[self.requests.index(state)] = replace(state, status=status, case_id="case-1")
        if status == "APPROVED":
            self.values[state.quota_name] = state.desired_value


@dataclass
class FakeQuotaLedger:
    saved_requests: dict[str, QuotaRequestState] = field(default_factory=dict)
    waits: dict[str, WaitingLaunch] = field(default_factory=dict)

    def save_request(self, state: QuotaRequestState, now: datetime) -> None:
        self.saved_requests[state.quota_name] = state

    def requests(self) -> list[QuotaRequestState]:
        return [self.saved_requests[name] for name in sorted(self.saved_requests)]  # the table's sort key order

    def save_waiting(self, waiting: WaitingLaunch) -> None:
        self.waits[waiting.job_name] = waiting

    def waiting(self) -> list[WaitingLaunch]:
        return [self.waits[name] for name in sorted(self.waits)]  # the table's sort key order

    def remove_waiting(self, job_name: str) -> None:
        self.waits.pop(job_name, None)


LEARNED_FIELDS = (
    "last_log_time",
    "last_log_line",
    "rhythm",
    "muted_until",
    "muted_alarm",
    "deferred_line",
    "progress",
)  # `watch` keeps them


@dataclass
class FakeStallLedger:
    """As adapters/stall_ledger.py stores it: `watch` keeps the log activity, rhythm and mute already recorded
    (and records none of its own), thresholds without their tag problems, log times to the millisecond,
    rhythms and evidence as JSON."""

    jobs: dict[str, WatchedJob] = field(default_factory=dict)
    stalls: dict[str, dict[str, Any]] = field(default_factory=dict)

    def watch(self, job: WatchedJob) -> None:
        thresholds = replace(job.thresholds, problems=StallThresholds().problems)
        kept = self.jobs.get(job.job_name) or WatchedJob(job.job_name, "", 1, thresholds, None)  # what it learned
        self.jobs[job.job_name] = replace(
            job,
            thresholds=thresholds,
            progress_settings=ProgressSettings.from_json(job.progress_settings.to_json()),
            **{name: getattr(kept, name) for name in LEARNED_FIELDS},
        )

    def unwatch(self, job_name: str) -> None:
        self.jobs.pop(job_name, None)

    def watched(self) -> list[WatchedJob]:
        return [self.jobs[name] for name in sorted(self.jobs)]  # the table's sort key order

    def watched_job(self, job_name: str) -> list[WatchedJob]:
        return [self.jobs[job_name]] if job_name in self.jobs else []

    def record_log_activity(self, job_name: str, newest: datetime, last_line: str) -> bool:
        job = self.jobs.get(job_name)
        newest = newest - timedelta(microseconds=newest.microsecond % 1000)  # the table keeps milliseconds
        if job is None or (job.last_log_time is not None and job.last_log_time >= newest):
            return False
        self.jobs[job_name] = replace(job, last_log_time=newest, last_log_line=last_line)
        return True

    def record_log_lines(self, job_name: str, lines: LoggedLines, previous: datetime | None) -> bool:
        job = self.jobs.get(job_name)
        if job is None or job.last_log_time != previous:
            return False
        stored = LogRhythm.from_json(json.loads(json.dumps(lines.rhythm.to_json())))
        newest = lines.newest - timedelta(microseconds=lines.newest.microsecond % 1000)
        job = replace(job, last_log_time=newest, last_log_line=lines.last_line, rhythm=stored)
        if lines.progress is not None:
            job = replace(job, progress=ProgressState.from_json(json.loads(json.dumps(lines.progress.to_json()))))
        self.jobs[job_name] = job
        return True

    def mute(self, job_name: str, alarm_name: str, until: datetime) -> bool:
        job = self.jobs.get(job_name)
        if job is None:
            return False
        self.jobs[job_name] = replace(job, muted_until=until, muted_alarm=alarm_name)
        return True

    def defer(self, job_name: str, newest_line: datetime) -> bool:
        job = self.jobs.get(job_name)
        if job is None:
            return False
        at = newest_line - timedelta(microseconds=newest_line.microsecond % 1000)
        self.jobs[job_name] = replace(job, deferred_line=at)
        return True

    def unmute(self, job_name: str) -> bool:
        job = self.jobs.get(job_name)
        if job is None:
            return False
        self.jobs[job_name] = replace(job, muted_until=None, muted_alarm="")
        return True

    def record_stall(self, job_name: str, evidence: dict[str, Any], now: datetime) -> None:
        self.stalls[job_name] = json.loads(json.dumps(evidence, default=str))

    def stall_record(self, job_name: str) -> dict[str, Any] | None:
        return self.stalls.get(job_name)


@dataclass
class FakeAlarms:
    """The account's alarms, name -> state. `add_alarm` arranges one that exists already (anyone's);
    `list_owned` lists trainguard's only, as the adapter does. Observation: `published`, every call's log
    silence; `rearmed`, every alarm rearmed."""

    alarms: dict[str, str] = field(default_factory=dict)  # name -> state
    published: list[dict[str, float]] = field(default_factory=list)
    rearmed: list[str] = field(default_factory=list)
    metrics: dict[str, str] = field(default_factory=dict)  # a metric alarm's MetricName, where it has one

    def add_alarm(self, name: str, state: str = "OK", metric: str = "") -> None:
        self.alarms[name] = state
        if metric:
            self.metrics[name] = metric

    def create(self, plan: Any) -> None:
        for _, request in plan.creation_order():
            self.alarms.setdefault(request["AlarmName"], "INSUFFICIENT_DATA")
            if "MetricName" in request:
                self.metrics[request["AlarmName"]] = request["MetricName"]

    def put_metric_alarm(self, request: Mapping[str, Any]) -> None:
        self.alarms.setdefault(request["AlarmName"], "INSUFFICIENT_DATA")
        self.metrics[request["AlarmName"]] = request["MetricName"]

    def outdated_log_silence_alarms(self) -> list[str]:
        prefix = alarm_name(StallSignal.LOG_SILENCE, "")
        return [n for n in self.alarms if n.startswith(prefix) and self.metrics.get(n) != LOG_SILENCE_METRIC]

    def delete(self, names: list[str]) -> None:
        for name in names:
            self.alarms.pop(name, None)

    def list_owned(self) -> dict[str, str]:
        return {name: state for name, state in self.alarms.items() if owned_alarm_job(name) is not None}

    def publish_log_silence(self, values: Mapping[str, float], at: datetime) -> None:
        for job_name, minutes in values.items():
            if not math.isfinite(minutes):
                raise ValueError(f"log silence of {job_name} is {minutes}: CloudWatch rejects NaN and infinity")
        self.published.append(dict(values))

    def rearm(self, alarm_name: str, reason: str) -> None:
        """Back to OK, and for the idle-GPU signal its parts in ALARM first; an alarm that is gone stays gone."""
        self.rearmed.append(alarm_name)
        parsed = parse_alarm_name(alarm_name)
        parts = possible_gpu_part_names(parsed[1]) if parsed and parsed[0] is StallSignal.IDLE_GPU else []
        for name in [*parts, alarm_name]:
            if name in self.alarms and (name == alarm_name or self.alarms[name] == "ALARM"):
                self.alarms[name] = "OK"


@dataclass
class FakeJobLogs:
    """Any job's newest log line is `line`, at `newest`; read as the adapter reads it (300 characters)."""

    newest: datetime | None = None
    line: str = ""

    def newest_event(self, job_name: str, since: datetime) -> tuple[datetime | None, str]:
        if self.newest is None or self.newest < since:
            return None, ""
        return self.newest, self.line[:300].rstrip("\n")


@dataclass
class FakeGpuMetrics:
    value: float | None = None
    hosts: int = 4
    averages: dict[int, float] = field(default_factory=dict)  # by host number: each host's mean (average_by_host)

    def busiest_by_host(self, job_name: str, host_count: int, since: datetime, now: datetime) -> dict[str, float]:
        if self.value is None:
            return {}
        return {f"{job_name}/algo-{n}": self.value for n in range(1, host_count + 1)}

    def average_by_host(self, job_name: str, host_count: int, since: datetime, now: datetime) -> dict[str, float]:
        return {f"{job_name}/algo-{n}": v for n, v in self.averages.items() if n <= host_count}


@dataclass(frozen=True, kw_only=True)
class FakePorts(Settled):
    """Every port, each a fake: it serves as any function's ports (each takes the subset it names)."""

    jobs: FakeJobs
    checkpoints: FakeCheckpoints
    ledger: FakeLedger
    notifier: FakeNotifier
    scheduler: FakeScheduler
    quotas: FakeQuotas
    quota_ledger: FakeQuotaLedger
    stall_ledger: FakeStallLedger
    alarms: FakeAlarms
    job_logs: FakeJobLogs
    gpu_metrics: FakeGpuMetrics
    create_request_shape: dict[str, Any]


def _seconds(moment: datetime) -> int:
    return int(moment.timestamp())


def fake_ports(**config_overrides: Any) -> FakePorts:
    config = GuardConfig(
        ledger_table_name="ledger",
        topic_arn="arn:aws:sns:us-east-1:123456789012:tg",
        passable_role_arns=(ROLE,),
        **config_overrides,
    )
    return FakePorts(
        jobs=FakeJobs(),
        checkpoints=FakeCheckpoints(),
        ledger=FakeLedger(),
        notifier=FakeNotifier(),
        scheduler=FakeScheduler(),
        quotas=FakeQuotas(),
        quota_ledger=FakeQuotaLedger(),
        stall_ledger=FakeStallLedger(),
        alarms=FakeAlarms(),
        job_logs=FakeJobLogs(),
        gpu_metrics=FakeGpuMetrics(),
        config=config,
        region="us-east-1",
        clock=lambda: NOW,
        create_request_shape=create_training_job_shape(),
    )


def narrowed(kind: type[Ports], ports: FakePorts) -> Ports:
    """`ports` as one function's ports: the fakes it names, the same objects."""
    return kind(**{f.name: getattr(ports, f.name) for f in fields(kind)})  # type: ignore[arg-type]


def with_config(ports: FakePorts, **changes: Any) -> FakePorts:
    return replace(ports, config=replace(ports.config, **changes))


def after_the_lease(ports: FakePorts) -> FakePorts:
    """The same ports once a lease taken now has expired (LEASE): what Lambda's retry of a delivery whose
    process died sees."""
    later = ports.clock() + LEASE + timedelta(seconds=1)
    return replace(ports, clock=lambda: later)


class FakePlaces(PortSet):
    """An organization's hub on fakes: one FakePorts per place it serves (None: its own account and region),
    made on first use, each with its place's region, so that a test sees where each action was taken."""

    def __init__(self, **config_overrides: Any) -> None:
        home = fake_ports(**config_overrides)
        super().__init__(lambda service: None, home.config, home.region, home.clock)
        self._overrides = config_overrides
        self.by_place: dict[Location | None, FakePorts] = {None: home}

    def at(self, build: Callable[[Site], Ports], spoke: Location | None) -> Ports:
        """The fakes of `spoke`, as the ports a handler module's `build` returns."""
        kind: type[Ports] = typing.get_type_hints(build)["return"]
        return narrowed(kind, self.fakes_at(spoke))

    def fakes_at(self, spoke: Location | None) -> FakePorts:
        if spoke not in self.by_place:
            assert spoke is not None
            ports = fake_ports(**self._overrides)
            object.__setattr__(ports, "region", spoke.region)  # frozen: the spoke's region, as Site.settled gives it
            self.by_place[spoke] = ports
        return self.by_place[spoke]
