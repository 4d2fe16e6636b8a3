"""A sample of every message trainguard sends (trainguard.domain.message_kinds), each made by the real workflow on
in-memory ports, with the user text long and hostile: a FailureReason with nested parentheses, HTML, a link and bare
numbers; a log line of the same kind; tag values that cannot be read; a job name at SageMaker's 63-character limit.

`SAMPLES` maps each kind to a function that plays its scenario and returns what was published, and the user texts
the scenario fed in (`Sample.user_texts`): the rules test treats exactly those as data (tests/unit/
test_message_rules.py).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from tests.cloudtrail_events import envelope_from_record
from tests.conftest import load_fixture
from tests.fakes import NOW, ROLE, FakePorts, described_job, fake_ports
from trainguard.domain.message_kinds import MessageKind
from trainguard.domain.messages import Notification
from trainguard.domain.stalls import StallSignal, alarm_name
from trainguard.events.alarm_state_change import AlarmStateChange
from trainguard.handlers import failed_launches
from trainguard.workflows.job_ended import handle_job_end
from trainguard.workflows.ports import LaunchRefused
from trainguard.workflows.quota_watch import check_quota_walls
from trainguard.workflows.stall_alarm import handle_stall_alarm
from trainguard.workflows.stall_prober import probe
from trainguard.workflows.stall_watch import follow_training_state

JOB = "llm-pretrain-2026-11-v3-" + "x" * 39  # 63 characters: TrainingJobName's longest
OPTED_IN = {"trainguard:enabled": "true"}
# Nested parentheses, an unclosed one, HTML, a link, bare numbers: all of it the script's own words.
HOSTILE = (
    "ValueError: shapes ((3, 4), (5, 6 (batch 128))) differ (see <a href='https://evil.example/x'>the docs</a>) "
    "<script>alert(1)</script> 42 0.5 (((unclosed"
)
USER_CODE = f'AlgorithmError: ExecuteUserScriptError:\nExitCode 1\nErrorMessage "{HOSTILE}"\n' + "at frame 7 " * 120
INTERNAL = f"InternalServerError: We encountered an internal error. Please try again. {HOSTILE}"
CAPACITY = (
    "CapacityError: Unable to provision requested ML compute capacity. Please retry using a different ML instance type."
)
LOG_LINE = f"step 9000 loss 1.71 {HOSTILE}"
P4D = "ml.p4d.24xlarge for training job usage"
WALL = (
    f"The account-level service limit '{P4D}' is 4 Instances, with current utilization of 4 Instances and a "
    "request delta of 4 Instances. Please use AWS Service Quotas to request an increase for this quota."
)
BAD_TAGS = {"trainguard:max-retries": "lots (((of) them))", "trainguard:fallback-types": "ml.banana(2)"}
# A progress pattern with a hostile placeholder and parentheses, a factor past its bound, minutes with nested text.
UNREADABLE_WATCH_TAGS = {
    "trainguard:progress-pattern": "iteration @stepp (((of))) 42 <b>@loss",
    "trainguard:progress-interval-factor": "50 (((times)))",
    "trainguard:stall-minutes": "45 https://evil.example/x",
    "trainguard:progress-start-minutes": "1",
}
ALTERNATIVES = {"trainguard:fallback-types": "ml.p5.48xlarge:2+ml.p4de.24xlarge"}
PIPELINE = {"sagemaker:pipeline-execution-arn": "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/x7k2"}
# The deployer's bound (setting launchable_instance_types); the product's default, none, buys no fallback.
LAUNCHABLE = ("ml.p4d.24xlarge", "ml.p4de.24xlarge", "ml.p5.48xlarge", "ml.g6e.48xlarge")
USER_LAUNCH = "medzen-b5-b5-universal-arm1-2026-005"  # the CloudTrail fixture's job name


@dataclass(frozen=True)
class Sample:
    notifications: list[Notification]
    user_texts: tuple[str, ...]


def _sent(ports: FakePorts, *texts: str) -> Sample:
    return Sample(list(ports.notifier.sent), (JOB, USER_LAUNCH, HOSTILE, USER_CODE, INTERNAL, LOG_LINE, *texts))


def _at(ports: FakePorts, delta: timedelta) -> FakePorts:
    return replace(ports, clock=lambda: NOW + delta)


def _ended(reason: str = INTERNAL, tags: dict[str, str] | None = None, **job: Any) -> FakePorts:
    ports = fake_ports(launchable_instance_types=LAUNCHABLE)
    ports.checkpoints.newest, ports.checkpoints.count = NOW - timedelta(hours=3), 1200
    ports.checkpoints.every = timedelta(minutes=20)
    ports.jobs.add(
        described_job(JOB, reason=reason, checkpoint=f"s3://ckpt/{JOB}/", **job), {**OPTED_IN, **(tags or {})}
    )
    handle_job_end(ports, JOB)
    return ports


def relaunched() -> Sample:
    return _sent(_ended(tags=BAD_TAGS), *BAD_TAGS.values())


def with_preferences() -> Sample:
    return _sent(_ended(CAPACITY, ALTERNATIVES))


def on_next_type() -> Sample:
    return _sent(_ended(CAPACITY, ALTERNATIVES, spot=True))


def on_demand() -> Sample:
    ports = fake_ports(launchable_instance_types=LAUNCHABLE)
    description = described_job(
        JOB, status="Stopped", secondary="MaxWaitTimeExceeded", spot=True, checkpoint=f"s3://ckpt/{JOB}/"
    )
    description.update(BillableTimeInSeconds=3000, TrainingTimeInSeconds=10000)
    description["StoppingCondition"] = {"MaxRuntimeInSeconds": 86400, "MaxWaitTimeInSeconds": 172800}
    ports.jobs.add(description, {**OPTED_IN, "trainguard:on-demand-after": "1"})
    handle_job_end(ports, JOB)
    return _sent(ports)


def on_quota_room() -> Sample:
    ports = fake_ports(launchable_instance_types=LAUNCHABLE)
    ports.quotas.values = {P4D: 4, "ml.g6e.48xlarge for training job usage": 8}
    ports.jobs.refused_types["ml.p4d.24xlarge"] = LaunchRefused("ResourceLimitExceeded", WALL)
    tags = {**OPTED_IN, "trainguard:fallback-types": "ml.g6e.48xlarge:4"}
    ports.jobs.add(described_job(JOB, reason=INTERNAL, checkpoint=f"s3://ckpt/{JOB}/"), tags)
    handle_job_end(ports, JOB)
    return _sent(ports, WALL)


def scheduled() -> Sample:
    return _sent(_ended(CAPACITY))


def not_relaunched() -> Sample:
    return _sent(_ended(tags={"trainguard:max-retries": "0"}))


def _quota_wall() -> FakePorts:
    ports = fake_ports()
    ports.quotas.values = {P4D: 4}
    ports.jobs.refuse_with = LaunchRefused("ResourceLimitExceeded", WALL)
    ports.jobs.add(described_job(JOB, reason=INTERNAL, checkpoint=f"s3://ckpt/{JOB}/"), OPTED_IN)
    handle_job_end(ports, JOB)
    ports.jobs.refuse_with = None
    return ports


def quota_wall() -> Sample:
    return _sent(_quota_wall(), WALL)


def not_retried() -> Sample:
    return _sent(_ended(USER_CODE, BAD_TAGS), *BAD_TAGS.values())


def left_to_owner() -> Sample:
    return _sent(_ended(tags=PIPELINE), *PIPELINE.values())


def _training(ports: FakePorts, tags: dict[str, str] | None = None, **extra: Any) -> None:
    description = described_job(JOB, status="InProgress", secondary="Training", checkpoint=f"s3://ckpt/{JOB}/")
    description["TrainingStartTime"] = NOW - timedelta(hours=6)
    description.update(extra)
    ports.jobs.add(description, {**OPTED_IN, **(tags or {})})
    follow_training_state(ports, JOB)


def _stalled(
    tags: dict[str, str] | None = None, change: AlarmStateChange | None = None, *, stop_parents: bool = True
) -> Sample:
    ports = fake_ports(stop_stalled_parent_jobs=stop_parents)
    _training(ports, tags)
    ports.job_logs.newest, ports.job_logs.line = NOW - timedelta(minutes=33), LOG_LINE
    ports.gpu_metrics.value = 12.5
    signal = StallSignal.IDLE_GPU
    handle_stall_alarm(ports, change or AlarmStateChange("evt-1", alarm_name(signal, JOB), "ALARM", "OK", "x", NOW))
    return _sent(ports, *(tags or {}).values())


def _muted_change() -> AlarmStateChange:
    """The idle-GPU alarm's state change, muted by an alarm mute rule for 30 more minutes."""
    from tests.unit.test_rhythm_workflows import muted
    from tests.unit.test_stall_workflows import alarm

    return muted(alarm(StallSignal.IDLE_GPU, JOB), NOW + timedelta(minutes=30))


def checkpoint_stale() -> Sample:
    from trainguard.domain.checkpoint_health import checked_now

    ports = fake_ports()
    _training(ports)
    ports.checkpoints.newest, ports.checkpoints.count = NOW - timedelta(hours=2), 15
    ports.checkpoints.every = timedelta(minutes=20)
    slot = next(m for m in range(60) if checked_now(JOB, m))
    probe(_at(ports, NOW.replace(minute=slot) - NOW))
    return _sent(ports)


def _found(gaps: list[float], losses: list[float] | None = None, tags: dict[str, str] | None = None) -> Sample:
    """The sample job's step lines through the log subscription, then the prober's notice of what they show (and
    what it did, with `tags`)."""
    from tests.unit.test_finding_workflows import lines
    from tests.unit.test_progress_workflows import deliver

    ports = fake_ports()
    _training(ports, tags)
    ports.checkpoints.newest, ports.checkpoints.count = NOW, 12
    ports.checkpoints.every = timedelta(minutes=20)
    deliver(ports, lines(NOW - timedelta(seconds=sum(gaps)), gaps, losses=losses), 30, JOB)
    probe(ports)
    return _sent(ports)


def stuck_stopping() -> Sample:
    ports = fake_ports()
    _training(ports)
    _training(ports, secondary="Stopping", TrainingJobStatus="Stopping")
    probe(_at(ports, timedelta(minutes=31)))
    return _sent(ports)


def gpus_not_watched() -> Sample:
    """A job of 1,200 hosts opted in while it trains: the prober finds it and watches it on log silence only."""
    ports = fake_ports()
    description = described_job(JOB, status="InProgress", secondary="Training", checkpoint=f"s3://ckpt/{JOB}/")
    description["ResourceConfig"]["InstanceCount"] = 1200
    description["TrainingStartTime"] = NOW - timedelta(hours=6)
    ports.jobs.add(description, OPTED_IN)
    probe(ports)
    return _sent(ports)


def watch_tags_not_read() -> Sample:
    """A job opted in while it trains, its stall and progress tags hostile: the prober starts its watch with
    defaults in their place and tells which, once."""
    ports = fake_ports()
    description = described_job(JOB, status="InProgress", secondary="Training", checkpoint=f"s3://ckpt/{JOB}/")
    description["TrainingStartTime"] = NOW - timedelta(hours=6)
    ports.jobs.add(description, {**OPTED_IN, **UNREADABLE_WATCH_TAGS})
    probe(ports)
    return _sent(ports, *UNREADABLE_WATCH_TAGS.values())


def _request_decided(status: str) -> Sample:
    ports = _quota_wall()
    [filed] = ports.quotas.requests
    ports.quotas.decide(filed.request_id, status)
    check_quota_walls(_at(ports, timedelta(hours=5)))
    return _sent(ports, WALL)


def _failed_launch(tags: list[dict[str, str]]) -> Sample:
    record = copy.deepcopy(load_fixture("events/cloudtrail_record.create_training_job.medzen_sanitized_real.json"))
    record["requestParameters"]["roleArn"] = ROLE
    record["requestParameters"]["tags"] = [{"key": "trainguard:enabled", "value": "true"}, *tags]
    record["requestParameters"]["resourceConfig"].update(instanceType="ml.p4d.24xlarge", instanceCount=4)
    ports = fake_ports()
    ports.quotas.values = {P4D: 4}
    failed_launches.handle(envelope_from_record(record, "ResourceLimitExceeded", WALL), ports)
    return _sent(ports, WALL, *(tag["value"] for tag in tags))


def _refused_launch() -> Sample:
    record = copy.deepcopy(load_fixture("events/cloudtrail_record.create_training_job.medzen_sanitized_real.json"))
    record["requestParameters"]["roleArn"] = ROLE
    record["requestParameters"]["tags"] = [{"key": "trainguard:enabled", "value": "true"}]
    refusal = "The requested resource training-job/ml.p2.xlarge is not available in this region"
    ports = fake_ports()
    failed_launches.handle(envelope_from_record(record, "ResourceLimitExceeded", refusal), ports)
    return _sent(ports, refusal)


SAMPLES: dict[MessageKind, Callable[[], Sample]] = {
    MessageKind.JOB_RELAUNCHED: relaunched,
    MessageKind.JOB_RELAUNCHED_WITH_PREFERENCES: with_preferences,
    MessageKind.JOB_RELAUNCHED_ON_NEXT_TYPE: on_next_type,
    MessageKind.JOB_RELAUNCHED_ON_DEMAND: on_demand,
    MessageKind.JOB_RELAUNCHED_ON_QUOTA_ROOM: on_quota_room,
    MessageKind.JOB_RELAUNCH_SCHEDULED: scheduled,
    MessageKind.JOB_NOT_RELAUNCHED: not_relaunched,
    MessageKind.JOB_QUOTA_WALL: quota_wall,
    MessageKind.JOB_NOT_RETRIED: not_retried,
    MessageKind.JOB_LEFT_TO_OWNER: left_to_owner,
    MessageKind.STALL_STOPPED: _stalled,
    MessageKind.STALL_MUTED: lambda: _stalled(change=_muted_change()),
    MessageKind.STALL_STOPPED_FOR_OWNER: lambda: _stalled(PIPELINE),
    MessageKind.STALL_LEFT_TO_OWNER: lambda: _stalled(PIPELINE, stop_parents=False),
    MessageKind.STALL_DRY_RUN: lambda: _stalled({"trainguard:actions": "notify"}),
    MessageKind.CHECKPOINT_STALE: checkpoint_stale,
    MessageKind.STUCK_STOPPING: stuck_stopping,
    MessageKind.SLOWDOWN_FOUND: lambda: _found([10.0] * 120 + [16.0] * 60),
    MessageKind.DIVERGENCE_FOUND: lambda: _found([10.0] * 60, [2.0] * 55 + [float("inf")] * 6),
    MessageKind.SLOWDOWN_STOPPED: lambda: _found(
        [10.0] * 120 + [16.0] * 60, tags={"trainguard:relaunch-if-slow": "true"}
    ),
    MessageKind.DIVERGENCE_STOPPED: lambda: _found(
        [10.0] * 60, [2.0] * 55 + [float("nan")] * 6, tags={"trainguard:stop-if-diverged": "true"}
    ),
    MessageKind.GPUS_NOT_WATCHED: gpus_not_watched,
    MessageKind.WATCH_TAGS_NOT_READ: watch_tags_not_read,
    MessageKind.QUOTA_REQUEST_APPROVED: lambda: _request_decided("APPROVED"),
    MessageKind.QUOTA_REQUEST_NOT_APPROVED: lambda: _request_decided("DENIED"),
    MessageKind.WAITING_LAUNCH_LAUNCHED: lambda: _request_decided("APPROVED"),
    MessageKind.WAITING_LAUNCH_GIVEN_UP: lambda: _request_decided("DENIED"),
    MessageKind.LAUNCH_BLOCKED_BY_QUOTA: lambda: _failed_launch([]),
    MessageKind.LAUNCH_REFUSED: _refused_launch,
    MessageKind.LAUNCH_LEFT_TO_OWNER: lambda: _failed_launch(
        [{"key": "sagemaker:pipeline-execution-arn", "value": PIPELINE["sagemaker:pipeline-execution-arn"]}]
    ),
}
