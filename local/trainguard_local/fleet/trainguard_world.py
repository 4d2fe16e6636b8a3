"""The stand-in the trainguard strategy runs on: one per fleet run, in process, on one virtual clock.

- moto's in-process `mock_aws()` for DynamoDB, SNS, S3, CloudWatch, CloudWatch Logs, EventBridge and
  EventBridge Scheduler: no HTTP, no server thread.
- The simulated SageMaker and Service Quotas (`trainguard_local`), reached by ordinary boto3 clients
  without HTTP: a botocore `before-send` handler answers each request from `plane.handle(operation,
  params)` with the JSON body and status the JSON servers would send (errors as HTTP 400
  `{"__type": code, "message": ...}`), so botocore serialises, validates and parses as usual and the
  production adapters run unmodified.
- Two sets of clients. trainguard's own (`guard`), built into `GuardPorts` the way the Lambda wiring
  builds them, with every call counted by operation (botocore's `before-parameter-build`); and the
  world's (`world`): users and persons launching jobs, SageMaker writing logs and GPU metrics, S3
  receiving checkpoints, CloudWatch evaluating alarms, the scheduler deleting a schedule that fired.
  Only the first set is trainguard's cost.
- The state-change events the plane emits are kept in an outbox and handed to `job_events.handle`
  in order (`pump`), as the stack's rule would deliver them: filtered by the stack's own event
  pattern, some delivered twice, the second copy after the events that follow it.

What differs from AWS is listed where it is done: moto lacks PutCompositeAlarm (answered with
`put_composite_alarm_in_moto`); moto's FilterLogEvents ignores logStreamNamePrefix (the stand-in's
patch); moto stamps S3 objects with the real time (the checkpoint's LastModified is set to the virtual
time); moto keeps every metric datapoint in one list that GetMetricData scans whole (datapoints older
than the longest look-back are dropped, `prune_metrics`).
"""

from __future__ import annotations

import base64
import copy
import gzip
import json
import random
import traceback
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import boto3
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from moto import mock_aws
from moto.events.models import EventPattern

from infra.event_patterns import stall_alarm_pattern, training_job_state_pattern
from trainguard.adapters.alarms import StallAlarms
from trainguard.adapters.checkpoints import CheckpointReader
from trainguard.adapters.job_activity import LOG_GROUP, GpuMetrics, JobLogs
from trainguard.adapters.ledger import Ledger, QuotaLedger, create_table_request
from trainguard.adapters.notifier import Notifier
from trainguard.adapters.sagemaker import SageMakerJobs
from trainguard.adapters.scheduler import RelaunchScheduler
from trainguard.adapters.service_model import create_training_job_shape
from trainguard.adapters.service_quotas import ServiceQuotas
from trainguard.adapters.stall_ledger import StallLedger
from trainguard.config import GuardConfig
from trainguard.domain.outcome import Outcome
from trainguard.workflows.ports import GuardPorts
from trainguard_local.alarm_evaluator import LocalAlarmEvaluator, put_composite_alarm_in_moto
from trainguard_local.fleet.catalogue import INSTANCE_OFFERS, resource_limit_exceeded, training_quota_name
from trainguard_local.fleet.trace import JobSpec
from trainguard_local.json_api import ApiError, JsonApiModel
from trainguard_local.sagemaker_api_model import SAGEMAKER_API, SageMakerApiError
from trainguard_local.sagemaker_control_plane import SimulatedSageMaker
from trainguard_local.sagemaker_training_job import TrainingJobRecord
from trainguard_local.service_quotas import SimulatedServiceQuotas
from trainguard_local.service_quotas_catalogue import DEFAULT_INSTANCE_TYPES, SERVICE_QUOTAS_API
from trainguard_local.stand_in import ACCOUNT, REGION, TRAINING_ROLE, _teach_moto_stream_prefixes

TABLE = "trainguard-ledger"
TOPIC = "trainguard"
CHECKPOINT_BUCKET = "fleet-checkpoints"
SCHEDULE_GROUP = "trainguard"
RETRY_LAUNCHER_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:trainguard-retry-launcher"
SCHEDULER_ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/trainguard-scheduler"
TRAINING_IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.5"
GPU_NAMESPACE = "/aws/sagemaker/TrainingJobs"
_RETRIES = Config(retries={"mode": "standard", "max_attempts": 5})  # as the Lambda wiring builds its clients
_GUARD_SERVICES = ("sagemaker", "s3", "dynamodb", "sns", "scheduler", "service-quotas", "cloudwatch", "logs")
_WORLD_SERVICES = ("sagemaker", "s3", "dynamodb", "sns", "scheduler", "service-quotas", "cloudwatch", "logs", "events")
_SIMULATED = ("sagemaker", "service-quotas")
_JOB_EVENTS = EventPattern.load(json.dumps(training_job_state_pattern()))
_STALL_ALARMS = EventPattern.load(json.dumps(stall_alarm_pattern()))


class FleetClock:
    """The one virtual clock: a datetime, set by the simulation (never by the wall clock)."""

    def __init__(self, base: datetime) -> None:
        self.base = base
        self.now = base

    def __call__(self) -> datetime:
        return self.now

    def at_hours(self, hours: float) -> datetime:
        return self.base + timedelta(microseconds=round(hours * 3_600_000_000))

    def set_hours(self, hours: float) -> None:
        self.now = self.at_hours(hours)

    def hours_of(self, moment: datetime) -> float:
        return (moment - self.base).total_seconds() / 3600


@dataclass(frozen=True)
class GuardCall:
    """One of trainguard's calls that acts (creates, stops, requests), with what it was answered."""

    at: float  # hours on the trace clock
    root: str  # the trace job whose lineage it acts on ('' when unknown)
    operation: str
    params: dict[str, Any]
    error_code: str = ""
    error_message: str = ""

    @property
    def succeeded(self) -> bool:
        return not self.error_code


@dataclass(frozen=True)
class QuotaWall:
    """A lineage whose launches the account's quota refuses: its `instance_count` instances do not fit
    while others use all of the quota, until the quota is raised to `needed` (what it was + the count)."""

    quota_name: str
    instance_type: str
    instance_count: int
    needed: float


class FleetSageMaker(SimulatedSageMaker):
    """The simulated SageMaker, with the trace's quota walls instead of counting instances in use.

    A quota wall refuses the launches of one lineage (the job and every relaunch that names it as root)
    with ResourceLimitExceeded in AWS's wording, the quota's value as both its limit and its current
    utilisation (the others use all of it), until Service Quotas' value of that quota reaches what the
    launch needs. Other jobs are not counted: the trace's jobs do not compete for quota, as in the
    anchors' models; but two walls of one quota share its value and its increase requests."""

    def __init__(self, quotas: SimulatedServiceQuotas, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._quotas = quotas
        self.walls: dict[str, QuotaWall] = {}  # by root job name

    def _check_instance_limits(self, job: TrainingJobRecord) -> None:
        tags = {tag["Key"]: tag["Value"] for tag in job.tags}
        wall = self.walls.get(tags.get("trainguard:root-job") or tags.get("fleet:root") or job.name)
        if wall is None:
            return
        self._quotas.advance()  # apply the decisions due now
        value = self._quotas.quota_value(wall.quota_name)
        if value >= wall.needed:
            return
        text = resource_limit_exceeded(
            wall.instance_type, limit=int(value), in_use=int(value), delta=wall.instance_count
        )
        raise SageMakerApiError("ResourceLimitExceeded", text.split(" operation: ", 1)[-1])


class JobAlarmEvaluator(LocalAlarmEvaluator):
    """CloudWatch's evaluation of one job's stall alarms (LocalAlarmEvaluator, limited to these names)."""

    def __init__(self, names: list[str], cloudwatch: Any, events: Any, clock: Callable[[], datetime]) -> None:
        super().__init__(cloudwatch, events, clock)
        self._names = names

    def _describe_alarms(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        found = self._cloudwatch.describe_alarms(AlarmNames=self._names, AlarmTypes=["MetricAlarm", "CompositeAlarm"])
        return list(found.get("MetricAlarms", [])), list(found.get("CompositeAlarms", []))


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body

    def read(self, *_: Any) -> bytes:
        return self._body


def _wire(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.timestamp()
    raise TypeError(f"cannot encode {type(value).__name__} for the wire")


def _response(url: str, status: int, payload: dict[str, Any]) -> AWSResponse:
    body = json.dumps(payload, default=_wire).encode()
    headers = {"Content-Type": "application/x-amz-json-1.1", "x-amzn-RequestId": str(uuid.uuid4())}
    return AWSResponse(url, status, headers, _Raw(body))


class FleetWorld:
    """Everything one fleet run shares. Build it with `fleet_world()`."""

    def __init__(
        self,
        base: datetime,
        config_overrides: dict[str, Any],
        duplicate_share: float,
        seed: int,
        quota_values: dict[str, float],
    ) -> None:
        self.clock = FleetClock(base)
        self.calls: Counter[str] = Counter()  # trainguard's calls, "service:Operation"
        self.guard_log: list[GuardCall] = []
        self.problems: list[str] = []  # exceptions raised by a handler, with their job
        self.outcomes: list[tuple[float, str, Outcome]] = []  # (hours, handler, outcome) of every handler call
        self.outbox: list[dict[str, Any]] = []
        self.roots: dict[str, str] = {}  # SageMaker job name -> the trace job of its lineage
        self.acting = ""  # the trace job whose event a handler is handling now
        self.on_guard_call: Callable[[GuardCall], None] | None = None
        self._duplicates = random.Random(f"{seed}/deliveries")
        self._duplicate_share = duplicate_share
        self._checkpoints_written: set[str] = set()
        self._streams: set[str] = set()
        types = tuple(dict.fromkeys((*DEFAULT_INSTANCE_TYPES, *(o.instance_type for o in INSTANCE_OFFERS))))
        self.quotas = SimulatedServiceQuotas(
            clock=self.clock, instance_types=types, values=quota_values, account_id=ACCOUNT, region=REGION
        )
        self.plane = FleetSageMaker(
            self.quotas, clock=self.clock, on_event=self.outbox.append, account_id=ACCOUNT, region=REGION
        )
        session = boto3.session.Session(region_name=REGION)
        self.world = {s: _client(session, s) for s in _WORLD_SERVICES}
        self.guard = {s: _client(session, s) for s in _GUARD_SERVICES}
        for clients, logged in ((self.world, False), (self.guard, True)):
            self._route(clients["sagemaker"], self.plane, SAGEMAKER_API, logged)
            self._route(clients["service-quotas"], self.quotas, SERVICE_QUOTAS_API, logged)
        for service, client in self.guard.items():
            client.meta.events.register(
                f"before-parameter-build.{client.meta.service_model.service_id.hyphenize()}", self._counter(service)
            )
        self.guard["cloudwatch"].meta.events.register(
            "provide-client-params.cloudwatch.PutCompositeAlarm", self._keep_composite_request
        )
        self.guard["cloudwatch"].meta.events.register(
            "before-call.cloudwatch.PutCompositeAlarm", self._put_composite_alarm
        )
        self._composite_request: dict[str, Any] = {}
        self.config = GuardConfig(
            ledger_table_name=TABLE,
            topic_arn=f"arn:aws:sns:{REGION}:{ACCOUNT}:{TOPIC}",
            passable_role_arns=(TRAINING_ROLE,),
            retry_launcher_arn=RETRY_LAUNCHER_ARN,
            scheduler_role_arn=SCHEDULER_ROLE_ARN,
            schedule_group_name=SCHEDULE_GROUP,
            **config_overrides,
        )
        self.ports = self._ports()
        self._create_resources()

    # ---- wiring ---------------------------------------------------------------------------------

    def _counter(self, service: str) -> Callable[..., None]:
        def count(model: Any, **_: Any) -> None:
            self.calls[f"{service}:{model.name}"] += 1

        return count

    def _route(self, client: Any, plane: Any, api: JsonApiModel, logged: bool) -> None:
        """Answer the client's requests from `plane.handle`, as its JSON server would, without HTTP."""

        def send(request: Any, **_: Any) -> AWSResponse:
            target = request.headers.get("X-Amz-Target", "")
            operation = (target.decode() if isinstance(target, bytes) else target).partition(".")[2]
            body = request.body or b"{}"
            params = json.loads(body.decode() if isinstance(body, bytes) else body)
            try:
                answer = plane.handle(operation, api.decode_request(operation, params))
            except ApiError as error:
                if logged:
                    self._log(operation, params, error.code, error.message)
                return _response(request.url, 400, {"__type": error.code, "message": error.message})
            if operation == "CreateTrainingJob":
                tags = {t["Key"]: t["Value"] for t in params.get("Tags", [])}
                self.roots[params["TrainingJobName"]] = tags.get("fleet:root", "")
            if logged:
                self._log(operation, params)
            return _response(request.url, 200, answer)

        client.meta.events.register_first(f"before-send.{client.meta.service_model.service_id.hyphenize()}", send)

    def _log(self, operation: str, params: dict[str, Any], code: str = "", message: str = "") -> None:
        if operation == "CreateTrainingJob":
            root = {t["Key"]: t["Value"] for t in params.get("Tags", [])}.get("fleet:root", "")
        elif operation == "StopTrainingJob":
            root = self.roots.get(params.get("TrainingJobName", ""), "")
        elif operation == "RequestServiceQuotaIncrease":
            root = self.acting
        else:
            return
        call = GuardCall(self.hours, root, operation, params, code, message)
        self.guard_log.append(call)
        if self.on_guard_call is not None:
            self.on_guard_call(call)

    def _put_composite_alarm(self, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        """moto 5.2.x has no PutCompositeAlarm: store it in moto's backend with `put_composite_alarm_in_moto`
        (its tags are dropped) and answer success. At before-call the request is already serialised, so the
        parameters kept at provide-client-params are used."""
        request = self._composite_request
        put_composite_alarm_in_moto(
            request["AlarmName"], request["AlarmRule"], request.get("AlarmDescription", ""), ACCOUNT, REGION
        )
        return AWSResponse("", 200, {}, _Raw(b"")), {"ResponseMetadata": {"HTTPStatusCode": 200}}

    def _ports(self) -> GuardPorts:
        g = self.guard
        return GuardPorts(
            jobs=SageMakerJobs(g["sagemaker"]),
            checkpoints=CheckpointReader(g["s3"]),
            ledger=Ledger(g["dynamodb"], TABLE),
            notifier=Notifier(g["sns"], self.config.topic_arn),
            scheduler=RelaunchScheduler(
                g["scheduler"], group_name=SCHEDULE_GROUP, target_arn=RETRY_LAUNCHER_ARN, role_arn=SCHEDULER_ROLE_ARN
            ),
            quotas=ServiceQuotas(g["service-quotas"]),
            quota_ledger=QuotaLedger(g["dynamodb"], TABLE),
            stall_ledger=StallLedger(g["dynamodb"], TABLE),
            alarms=StallAlarms(g["cloudwatch"]),
            job_logs=JobLogs(g["logs"]),
            gpu_metrics=GpuMetrics(g["cloudwatch"]),
            config=self.config,
            region=REGION,
            clock=self.clock,
            create_request_shape=create_training_job_shape(g["sagemaker"].meta.service_model),
        )

    def _keep_composite_request(self, params: dict[str, Any], **_: Any) -> None:
        self._composite_request = copy.deepcopy(params)

    def _create_resources(self) -> None:
        w = self.world
        w["dynamodb"].create_table(**create_table_request(TABLE))
        w["sns"].create_topic(Name=TOPIC)
        w["scheduler"].create_schedule_group(Name=SCHEDULE_GROUP)
        w["s3"].create_bucket(Bucket=CHECKPOINT_BUCKET)
        w["logs"].create_log_group(logGroupName=LOG_GROUP)

    @property
    def hours(self) -> float:
        return self.clock.hours_of(self.clock.now)

    # ---- the world's side: launches, checkpoints, logs, metrics -------------------------------------

    def launch(self, spec: JobSpec, name: str, *, root: str) -> str:
        """A user's (or a person's) CreateTrainingJob for `spec`, named `name`; '' or the error text."""
        tags = {
            "trainguard:enabled": "true",
            # The training script resumes from the newest checkpoint when there is one, and starts
            # afresh otherwise: a relaunch before the first checkpoint is what a person would do too.
            "trainguard:restart-without-checkpoint": "true",
            "team": spec.name.split("-", 2)[-1],
            "fleet:root": root,
        }
        stopping: dict[str, int] = {"MaxRuntimeInSeconds": max(1, round(spec.max_runtime_hours * 3600))}
        request: dict[str, Any] = {
            "TrainingJobName": name,
            "RoleArn": TRAINING_ROLE,
            "AlgorithmSpecification": {"TrainingImage": TRAINING_IMAGE, "TrainingInputMode": "File"},
            "OutputDataConfig": {"S3OutputPath": f"s3://{CHECKPOINT_BUCKET}/output"},
            "ResourceConfig": {
                "InstanceType": spec.instance_type,
                "InstanceCount": spec.instance_count,
                "VolumeSizeInGB": 200,
            },
            "StoppingCondition": stopping,
            "CheckpointConfig": {"S3Uri": self.checkpoint_uri(spec), "LocalPath": "/opt/ml/checkpoints"},
            "HyperParameters": {"framework": spec.framework},
            "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
        }
        if spec.spot:
            request["EnableManagedSpotTraining"] = True
            stopping["MaxWaitTimeInSeconds"] = stopping["MaxRuntimeInSeconds"] + 4 * 3600
        if spec.in_vpc:
            request["VpcConfig"] = {
                "SecurityGroupIds": ["sg-0f1e2d3c4b5a69788"],
                "Subnets": ["subnet-0a1b2c3d4e5f60718"],
            }
        try:
            self.world["sagemaker"].create_training_job(**request)
        except self.world["sagemaker"].exceptions.ClientError as error:
            return f"{error.response['Error']['Code']}: {error.response['Error']['Message']}"
        return ""

    def checkpoint_uri(self, spec: JobSpec) -> str:
        return f"s3://{CHECKPOINT_BUCKET}/{spec.name}/"

    def write_checkpoint(self, spec: JobSpec, progress_hours: float, written_at: float) -> None:
        """The checkpoint of `progress_hours` of work, in the job's checkpoint prefix, stamped at the
        virtual time it was written (moto stamps the real time; the stamp is set afterwards)."""
        key = f"{spec.name}/checkpoint-{round(progress_hours * 60):06d}min.pt"
        if progress_hours <= 0 or key in self._checkpoints_written:
            return
        self._checkpoints_written.add(key)
        self.world["s3"].put_object(Bucket=CHECKPOINT_BUCKET, Key=key, Body=b"weights")
        try:
            from moto.s3.models import s3_backends

            stamp = self.clock.at_hours(written_at).astimezone(UTC).replace(tzinfo=None)
            s3_backends[ACCOUNT]["global"].buckets[CHECKPOINT_BUCKET].keys[key].last_modified = stamp
        except (ImportError, KeyError, AttributeError):  # a moto without these internals: the age is off
            pass

    def log_line(self, job_name: str, at: datetime, message: str, log_activity: Any) -> None:
        """A line in the job's first host's stream, and the subscription's delivery of it."""
        stream = f"{job_name}/algo-1-{int(self.clock.base.timestamp())}"
        logs = self.world["logs"]
        if stream not in self._streams:
            logs.create_log_stream(logGroupName=LOG_GROUP, logStreamName=stream)
            self._streams.add(stream)
        event = {"timestamp": int(at.timestamp() * 1000), "message": message}
        logs.put_log_events(logGroupName=LOG_GROUP, logStreamName=stream, logEvents=[event])
        payload = {
            "messageType": "DATA_MESSAGE",
            "owner": ACCOUNT,
            "logGroup": LOG_GROUP,
            "logStream": stream,
            "subscriptionFilters": ["trainguard"],
            "logEvents": [{"id": str(uuid.uuid4().int)[:20], **event}],
        }
        data = base64.b64encode(gzip.compress(json.dumps(payload).encode())).decode()
        self.call("log_activity", job_name, log_activity.handle, {"awslogs": {"data": data}})

    def gpu_datapoints(self, job_name: str, hosts: int, values: list[tuple[datetime, float]]) -> None:
        """SageMaker's GPUUtilization of every host (100 per GPU), one value per minute."""
        data = [
            {
                "MetricName": "GPUUtilization",
                "Dimensions": [{"Name": "Host", "Value": f"{job_name}/algo-{n}"}],
                "Timestamp": moment,
                "Value": value,
                "Unit": "Percent",
            }
            for n in range(1, hosts + 1)
            for moment, value in values
        ]
        for start in range(0, len(data), 1000):
            self.world["cloudwatch"].put_metric_data(Namespace=GPU_NAMESPACE, MetricData=data[start : start + 1000])

    def prune_metrics(self, before: datetime) -> None:
        """Drop datapoints older than `before` from moto's store, which GetMetricData scans whole on every
        call. Nothing reads that far back: the caller passes the longest look-back of any alarm or check."""
        try:
            from moto.cloudwatch.models import cloudwatch_backends

            backend = cloudwatch_backends[ACCOUNT][REGION]
        except (ImportError, KeyError):
            return
        cut = before.astimezone(UTC)
        backend.metric_data = [d for d in backend.metric_data if _aware(d.timestamp) >= cut]

    def quota_wall(self, spec: JobSpec, root: str, approval_hours: float) -> str:
        """Put up the trace's quota wall for this lineage, and script how AWS decides the increases of
        that quota from now on: approved, `approval_hours` after each request. A request already open for
        the quota keeps its own schedule (scripting it again would move its decision)."""
        quota = training_quota_name(spec.instance_type)
        self.quotas.advance()
        needed = self.quotas.quota_value(quota) + spec.instance_count
        self.plane.walls[root] = QuotaWall(quota, spec.instance_type, spec.instance_count, needed)
        if not any(
            r["QuotaName"] == quota and r["Status"] in ("PENDING", "CASE_OPENED") for r in self.quotas.requests()
        ):
            self.quotas.decide(quota, "APPROVED", after=timedelta(hours=approval_hours))
        return quota

    # ---- deliveries to the production handlers -------------------------------------------------------

    def call(self, handler: str, job: str, function: Callable[..., Any], *args: Any) -> Any:
        """One handler invocation, as Lambda makes it. An exception is recorded (and None returned):
        Lambda would retry the event, then park it in the dead-letter queue."""
        from trainguard.handlers.observability import metrics

        self.acting = self.roots.get(job, self.acting)
        try:
            result = function(*args, self.ports)
        except Exception:
            self.problems.append(f"{self.hours:.3f} h {handler} ({job}): {traceback.format_exc(limit=6)}")
            return None
        finally:
            metrics.clear_metrics()  # handle() adds metrics that only the Lambda decorator would flush
        if isinstance(result, Outcome):
            self.outcomes.append((self.hours, handler, result))
        return result

    def pump(self) -> list[tuple[dict[str, Any], Outcome | None]]:
        """Deliver what the plane emitted to the job-events handler, in order, through the stack's rule;
        some events twice (at least once delivery), the copy after the events that follow it."""
        from trainguard.handlers import job_events

        delivered: list[tuple[dict[str, Any], Outcome | None]] = []
        copies: list[dict[str, Any]] = []
        while self.outbox or copies:
            event = self.outbox.pop(0) if self.outbox else copies.pop(0)
            if not _JOB_EVENTS.matches_event(cast(Any, event)):
                continue
            name = event["detail"]["TrainingJobName"]
            delivered.append((event, self.call("job_events", name, job_events.handle, event)))
            if event.get("_copy") is None and self._duplicates.random() < self._duplicate_share:
                copies.append({**event, "_copy": True})
        return delivered

    def deliver_alarm(self, event: dict[str, Any]) -> Outcome | None:
        from trainguard.handlers import stall_alarms

        if not _STALL_ALARMS.matches_event(cast(Any, event)):
            return None
        result = self.call("stall_alarms", event["detail"]["alarmName"], stall_alarms.handle, event)
        return result if isinstance(result, Outcome) else None

    def evaluator(self, alarm_names: list[str]) -> JobAlarmEvaluator:
        return JobAlarmEvaluator(alarm_names, self.world["cloudwatch"], self.world["events"], self.clock)

    def schedule_of(self, failed_job: str) -> tuple[datetime, dict[str, Any]] | None:
        """The one-time schedule trainguard created for a delayed relaunch: when it fires, and its input."""
        from trainguard.adapters.scheduler import schedule_name

        try:
            found = self.world["scheduler"].get_schedule(Name=schedule_name(failed_job), GroupName=SCHEDULE_GROUP)
        except self.world["scheduler"].exceptions.ClientError:
            return None
        expression = str(found["ScheduleExpression"])  # at(2026-01-05T10:20:00)
        at = datetime.fromisoformat(expression[3:-1]).replace(tzinfo=UTC)
        return at, json.loads(found["Target"]["Input"])

    def schedule_fired(self, failed_job: str) -> None:
        """ActionAfterCompletion=DELETE: the scheduler deletes a one-time schedule after it fires."""
        from trainguard.adapters.scheduler import schedule_name

        self.world["scheduler"].delete_schedule(Name=schedule_name(failed_job), GroupName=SCHEDULE_GROUP)


def _client(session: boto3.session.Session, service: str) -> Any:
    """A client as the Lambda wiring builds it. The simulated services get an endpoint that none of moto's
    backends claims: moto's own before-send handler (it runs for every request) then leaves them alone,
    instead of answering SageMaker from moto's SageMaker."""
    endpoint = f"https://{service}.simulated.invalid" if service in _SIMULATED else None
    return session.client(service, config=_RETRIES, endpoint_url=endpoint)  # type: ignore[call-overload]


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@contextmanager
def fleet_world(
    base: datetime,
    config_overrides: dict[str, Any] | None = None,
    duplicate_share: float = 0.0,
    seed: int = 0,
    quota_values: dict[str, float] | None = None,
) -> Iterator[FleetWorld]:
    """The stand-in for one run, with the Lambda handlers' logging quietened for its length.
    `quota_values`: Service Quotas' values that differ from the simulated defaults."""
    from trainguard.handlers.observability import logger

    _teach_moto_stream_prefixes()
    level = logger.log_level
    logger.setLevel("WARNING")
    try:
        with mock_aws():
            yield FleetWorld(base, dict(config_overrides or {}), duplicate_share, seed, dict(quota_values or {}))
    finally:
        logger.setLevel(level)


def run_started_at(hours_needed: float) -> datetime:
    """The virtual clock's origin: far enough in the past that the whole run stays within the 14 days
    CloudWatch Logs accepts (and never in the future), on an hour boundary (the ledger's hourly retry
    budget and the prober's 15-minute sweep then fall on the same virtual minutes in every run)."""
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    back = min(max(hours_needed + 24.0, 48.0), 13 * 24.0)
    return now - timedelta(hours=back)
