"""The stand-in the trainguard strategy runs on: one per fleet run, in process, on one virtual clock.

- moto's in-process `mock_aws()` for DynamoDB, SNS, S3, CloudWatch, CloudWatch Logs, EventBridge and
  EventBridge Scheduler: no HTTP, no server thread.
- The simulated SageMaker and Service Quotas (`trainguard_local`), reached by ordinary boto3 clients
  without HTTP (in_process_clients.py).
- Two sets of clients. trainguard's own (`guard`), built into each function's ports (`PortSet`) the way
  the Lambda wiring builds them, with every call counted (usage.py: by operation and handler, in the units
  AWS bills); and the world's (`world`): users and persons launching jobs, SageMaker writing logs and GPU metrics, S3
  receiving checkpoints, CloudWatch evaluating alarms, the scheduler deleting a schedule that fired
  (trace_side.py, on stand_in/fleet_side.py). Only the first set is trainguard's cost.
- The plane's state-change events wait in an outbox for `job_events.handle` (`pump`), as the stack's rule delivers
  them: its own pattern, some twice (the copy after the events that follow), at once or late (event_delivery.py);
  so do CloudTrail's records of a failed CreateTrainingJob, for `failed_launches.handle`, when the stack's optional
  rule is deployed (`watch_failed_launches`).

What differs from AWS is listed where it is done: moto lacks PutCompositeAlarm (in_process_clients.py);
moto's FilterLogEvents ignores logStreamNamePrefix (the stand-in's patch); S3 stamps and moto's metric
store (stand_in/fleet_side.py, trace_side.py). The resources are the stand-in's one description of
the stack (stand_in/stack_resources.py), as local_aws creates them.
"""

from __future__ import annotations

import random
import traceback
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, cast

import boto3
from moto import mock_aws
from moto.events.models import EventPattern

from trainguard.config import GuardConfig
from trainguard.domain.outcome import Outcome
from trainguard.handlers.wiring import PortSet
from trainguard_local.fleet.trainguard_run.event_delivery import AtOnce, Delivery, HandlerCall
from trainguard_local.fleet.trainguard_run.guard_actions import GuardCall
from trainguard_local.fleet.trainguard_run.in_process_clients import (
    CompositeAlarmsInMoto,
    OnAnswer,
    answer_locally,
    fleet_client,
)
from trainguard_local.fleet.trainguard_run.simulated_services import FleetSageMaker, JobAlarmEvaluator
from trainguard_local.fleet.trainguard_run.trace_side import CHECKPOINT_BUCKET, TraceSide
from trainguard_local.fleet.trainguard_run.usage import GuardUsage, Notification
from trainguard_local.simulation.catalogue import INSTANCE_OFFERS
from trainguard_local.simulation.clock import SimClock
from trainguard_local.stand_in.cloudtrail import cloudtrail_records
from trainguard_local.stand_in.fleet_side import log_delivery
from trainguard_local.stand_in.local_aws import _teach_moto_stream_prefixes
from trainguard_local.stand_in.sagemaker_api_model import SAGEMAKER_API
from trainguard_local.stand_in.service_quotas import SimulatedServiceQuotas
from trainguard_local.stand_in.service_quotas_catalogue import DEFAULT_INSTANCE_TYPES, SERVICE_QUOTAS_API
from trainguard_local.stand_in.stack_resources import (
    ACCOUNT,
    FAILED_LAUNCHES_RULE,
    REGION,
    RETRY_LAUNCHER_ARN,
    SCHEDULE_GROUP,
    SCHEDULER_ROLE_ARN,
    STALL_ALARMS_RULE,
    TOPIC,
    TRAINING_ROLE,
    create_stack_resources,
    every_training_instance_type,
    rule_pattern,
)
from trainguard_local.stand_in.stack_resources import JOB_EVENTS_RULE as _JOB_EVENTS_RULE
from trainguard_local.stand_in.stack_resources import LEDGER_TABLE as TABLE

_GUARD_SERVICES = ("sagemaker", "s3", "dynamodb", "sns", "scheduler", "service-quotas", "cloudwatch", "logs")
_WORLD_SERVICES = ("sagemaker", "s3", "dynamodb", "sns", "scheduler", "service-quotas", "cloudwatch", "logs", "events")
# The stack's rules, matched in process (local_aws puts the same rules on moto's EventBridge).
_JOB_EVENTS = EventPattern.load(rule_pattern(_JOB_EVENTS_RULE))
_STALL_ALARMS = EventPattern.load(rule_pattern(STALL_ALARMS_RULE))
_FAILED_LAUNCHES = EventPattern.load(rule_pattern(FAILED_LAUNCHES_RULE))


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
        self.clock = SimClock(base)
        self.usage = GuardUsage(self.clock)  # what trainguard used: its calls, invocations, alarms, messages
        self.guard_log: list[GuardCall] = []
        self.problems: list[str] = []  # exceptions raised by a handler, with their job
        self.outcomes: list[tuple[float, str, Outcome]] = []  # (hours, handler, outcome) of every handler call
        self.outbox: list[dict[str, Any]] = []
        self.roots: dict[str, str] = {}  # SageMaker job name -> the trace job of its lineage
        self.acting = ""  # the trace job whose event a handler is handling now
        self.on_guard_call: Callable[[GuardCall], None] | None = None
        self._duplicates, self.duplicate_share = random.Random(f"{seed}/deliveries"), duplicate_share
        types = tuple(dict.fromkeys((*DEFAULT_INSTANCE_TYPES, *(o.instance_type for o in INSTANCE_OFFERS))))
        self.quotas = SimulatedServiceQuotas(
            clock=self.clock, instance_types=types, values=quota_values, account_id=ACCOUNT, region=REGION
        )
        cloudtrail = cloudtrail_records(self._by_the_optional_rule, account=ACCOUNT, region=REGION, clock=self.clock)
        self.plane = FleetSageMaker(
            self.quotas,
            clock=self.clock,
            on_event=self.outbox.append,
            on_failed_call=cloudtrail,
            account_id=ACCOUNT,
            region=REGION,
        )
        self.watch_failed_launches = False  # the stack's optional CloudTrail rule (the chaos run deploys it)
        session = boto3.session.Session(region_name=REGION)
        self.world = {s: fleet_client(session, s) for s in _WORLD_SERVICES}
        self.guard = {s: fleet_client(session, s) for s in _GUARD_SERVICES}
        self._wire_clients()
        self.delivery: Delivery = AtOnce(self.run_once)  # how events reach trainguard (event_delivery.py)
        self.awaiting: dict[str, Callable[[], None]] = {}  # SageMaker job -> wakes the life awaiting word of it
        self.evidence: dict[str, Callable[[], None]] = {}  # SageMaker job -> shows what it logged and ran, up to now
        self.usage.on_notification = self._wake_who_awaits
        self.config = guard_config(config_overrides)
        self.cold_start()
        self.fleet = TraceSide(self.world, self.clock, self.plane, self.quotas)
        create_stack_resources(self.world.__getitem__, checkpoint_bucket=CHECKPOINT_BUCKET)

    # ---- wiring ---------------------------------------------------------------------------------

    def _wire_clients(self) -> None:
        """Both sets reach the simulated services in process; trainguard's calls are counted (usage.py)."""
        for clients, logged in ((self.world, False), (self.guard, True)):
            answered = self._answered(logged)
            answer_locally(clients["sagemaker"], self.plane, SAGEMAKER_API, answered)
            answer_locally(clients["service-quotas"], self.quotas, SERVICE_QUOTAS_API, answered)
        for service, client in self.guard.items():
            self.usage.attach(service, client)
        CompositeAlarmsInMoto(self.guard["cloudwatch"], ACCOUNT, REGION)

    def _by_the_optional_rule(self, cloudtrail_event: dict[str, Any]) -> None:  # to failed-launches, if deployed
        if self.watch_failed_launches:
            self.outbox.append(cloudtrail_event)

    def _wake_who_awaits(self, notice: Notification) -> None:
        wake = self.awaiting.pop(notice.attributes.get("job_name", ""), None)
        if wake is not None:
            wake()

    def _answered(self, logged: bool) -> OnAnswer:
        """What the world notes of the simulated services' answers: the lineage of every job created or refused, and
        trainguard's own calls that act (`logged`)."""

        def note(operation: str, params: dict[str, Any], code: str, message: str) -> None:
            if operation == "CreateTrainingJob" and (not code or params["TrainingJobName"] not in self.roots):
                tags = {t["Key"]: t["Value"] for t in params.get("Tags", [])}
                self.roots[params["TrainingJobName"]] = tags.get("fleet:root", "")
            if logged:
                self._log(operation, params, code, message)

        return note

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

    @property
    def calls(self) -> Counter[str]:
        """trainguard's calls, "service:Operation"."""
        return self.usage.calls

    @property
    def hours(self) -> float:
        return self.clock.hours_of(self.clock.now)

    def act_for(self, trace_job: str) -> None:
        """The kernel resumes the process of `trace_job` (its handlers' calls are counted for it)."""
        self.acting = trace_job

    # ---- deliveries to the production handlers -------------------------------------------------------

    def on_its_way(self, job: str) -> bool:
        """Whether an event about SageMaker job `job` is still on its way to trainguard."""
        return self.delivery.in_flight[job] > 0

    def call(self, handler: str, job: str, handle: Callable[[Any, Any], Any], payload: Any) -> None:
        """An event for one of trainguard's functions, handed to its delivery (at once, late, or chaos's)."""
        self.delivery(HandlerCall(handler, job, handle, payload))

    def cold_start(self) -> None:
        """The functions' ports as handlers/wiring.py builds them, on the in-process clients; anew after a death."""
        self.ports = PortSet(self.guard.__getitem__, self.config, REGION, self.clock)

    def run_once(self, call: HandlerCall) -> None:
        """One invocation; what it raises is recorded as a problem of the run."""
        try:
            self.attempt(call)
        except Exception:
            self.problems.append(f"{self.hours:.3f} h {call.handler} ({call.job}): {traceback.format_exc(limit=6)}")

    def attempt(self, call: HandlerCall) -> Any:
        """One handler invocation, as Lambda makes it; it raises what the handler raised. What it returns is recorded
        for the report (and given to the Lambda runtime's log), never read by a job's life."""
        from trainguard.handlers.observability import metrics

        self.acting = self.roots.get(call.job, self.acting)
        self.usage.invoked(call.handler)
        try:
            result = call.handle(call.payload, self.ports)
        finally:
            self.usage.returned(list(metrics.metric_set))
            metrics.clear_metrics()  # handle() adds metrics that only the Lambda decorator would flush
        if isinstance(result, Outcome):
            self.outcomes.append((self.hours, call.handler, result))
        return result

    def log_lines(self, job_name: str, lines: list[tuple[datetime, str]], log_activity: Any) -> None:
        """Lines in the job's first host's stream, and the subscription's one delivery of them."""
        stream, events = self.fleet.write_log_lines(job_name, self.clock.base, lines)
        delivered = [{"id": str(uuid.uuid4().int)[:20], **event} for event in events]
        self.call("log_activity", job_name, log_activity.handle, log_delivery(stream, delivered))

    def pump(self) -> None:
        """Deliver what the plane emitted to job-events (CloudTrail's records of refused creates to failed-launches),
        in order, through the stack's rules; some events twice (at least once delivery), the copy after the events
        that follow it. What a handler returns is not read: the job's life learns what trainguard did from the world."""
        from trainguard.handlers import failed_launches, job_events

        copies: list[dict[str, Any]] = []
        while self.outbox or copies:
            event = self.outbox.pop(0) if self.outbox else copies.pop(0)
            if _FAILED_LAUNCHES.matches_event(cast(Any, event)):
                job = event["detail"]["requestParameters"].get("trainingJobName", "")
                self.call("failed_launches", job, failed_launches.handle, event)
                continue
            if not _JOB_EVENTS.matches_event(cast(Any, event)):
                continue
            self.call("job_events", event["detail"]["TrainingJobName"], job_events.handle, event)
            if event.get("_copy") is None and self._duplicates.random() < self.duplicate_share:
                copies.append({**event, "_copy": True})

    def deliver_alarm(self, event: dict[str, Any]) -> None:
        """An alarm's state change, through the stack's rule, to the stall-alarms handler."""
        from trainguard.handlers import stall_alarms

        if _STALL_ALARMS.matches_event(cast(Any, event)):
            self.call("stall_alarms", event["detail"]["alarmName"], stall_alarms.handle, event)

    def evaluator(self, alarm_names: list[str]) -> JobAlarmEvaluator:
        return JobAlarmEvaluator(alarm_names, self.world["cloudwatch"], self.world["events"], self.clock)


def guard_config(overrides: dict[str, Any]) -> GuardConfig:
    """The functions' settings on the stand-in's resources, with the run's `overrides`."""
    return GuardConfig(
        ledger_table_name=TABLE,
        topic_arn=f"arn:aws:sns:{REGION}:{ACCOUNT}:{TOPIC}",
        passable_role_arns=(TRAINING_ROLE,),
        launchable_instance_types=every_training_instance_type(),  # the stand-in's deployer's bound
        retry_launcher_arn=RETRY_LAUNCHER_ARN,
        scheduler_role_arn=SCHEDULER_ROLE_ARN,
        schedule_group_name=SCHEDULE_GROUP,
        **overrides,
    )


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
