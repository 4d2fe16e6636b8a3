"""trainguard attached to the sandbox: the production handlers, run on what the stand-in delivers.

On AWS, EventBridge rules and schedules invoke the Lambda functions. moto cannot invoke a Lambda target
(docs/local-aws.md), so the stand-in's rules target SQS queues, and every virtual minute
``GuardLoop.minute()`` plays the rest, as the stack wires it (infra/):
- the job-state rule's queue -> job_events; the CloudTrail rule's queue (refused launches) ->
  failed_launches; the stall-alarm rule's queue -> stall_alarms;
- the per-minute schedule -> stall_prober, then CloudWatch's evaluation of the alarms
  (``LocalAlarmEvaluator``: moto never evaluates them);
- EventBridge Scheduler's one-time schedules that are due -> retry_launcher (deleted after, as
  ActionAfterCompletion=DELETE says; retried up to the schedule's 10 attempts);
- the quota_check_minutes schedule -> quota_watch;
- the topic's SQS subscriber: each SNS notification is printed as it is published.
A message whose handler raises stays in its queue and comes back after the visibility timeout, as a
failed Lambda invocation is retried.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from infra.settings import Settings
from trainguard.handlers import failed_launches, job_events, quota_watch, retry_launcher, stall_alarms, stall_prober
from trainguard.handlers.observability import metrics
from trainguard.handlers.wiring import PortSet
from trainguard_local.stand_in.alarm_evaluator import LocalAlarmEvaluator
from trainguard_local.stand_in.local_aws import LocalAWS

QUOTA_CHECK_MINUTES = Settings.quota_check_minutes  # the stack's default schedule for quota_watch
SCHEDULE_ATTEMPTS = 10  # the RetryPolicy trainguard's schedules carry (adapters/scheduler.py)
T = TypeVar("T")
QUIET_OUTCOMES = ("already-handled",)  # a duplicate delivery: logged by the function, not worth a line


class GuardLoop:
    def __init__(self, aws: LocalAWS, ports: PortSet, say: Callable[[str], None]) -> None:
        self._aws, self._ports, self._say = aws, ports, say
        self._sqs, self._scheduler = aws.client("sqs"), aws.client("scheduler")
        self._evaluator = LocalAlarmEvaluator(aws.client("cloudwatch"), aws.client("events"), aws.clock)
        self._schedule_failures: dict[str, int] = {}
        self._minutes = 0

    def minute(self) -> None:
        """What EventBridge, Scheduler, CloudWatch and Lambda do in one minute of the sandbox's clock."""
        self._minutes += 1
        self._deliver(self._aws.rule_queue_url, "job-events", job_events.handle)
        self._deliver(self._aws.launch_failures_queue_url, "failed-launches", failed_launches.handle)
        self._on_schedule("stall-prober", stall_prober.handle, {})
        self._evaluator.evaluate_all()
        self._deliver(self._aws.stall_alarms_queue_url, "stall-alarms", stall_alarms.handle)
        self._fire_due_schedules()
        if self._minutes % QUOTA_CHECK_MINUTES == 0:
            for outcome in self._on_schedule("quota-watch", quota_watch.handle, {"source": "aws.events"}) or []:
                self._tell("quota-watch", outcome)
        self._print_notifications()

    def _on_schedule(self, function: str, handle: Callable[[Any, Any], Any], event: dict[str, Any]) -> Any:
        """A function on an EventBridge schedule: when it raises, it is told and runs again at its next time."""
        try:
            return invoke(handle, event, self._ports)
        except Exception as err:
            self._say(f"trainguard {function} raised {type(err).__name__}: {err} (it runs again next time)")
            return None

    def _deliver(self, queue_url: str, function: str, handle: Callable[[Any, Any], Any]) -> None:
        while True:
            batch = self._sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
            if not batch:
                return
            for message in batch:
                try:
                    outcome = invoke(handle, json.loads(message["Body"]), self._ports)
                except Exception as err:  # the Lambda invocation fails: the message comes back later
                    self._say(f"trainguard {function} raised {type(err).__name__}: {err} (delivered again later)")
                    continue
                self._tell(function, outcome.as_dict())
                self._sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])

    def _fire_due_schedules(self) -> None:
        group = self._ports.config.schedule_group_name
        now = self._aws.clock()
        for summary in self._scheduler.list_schedules(GroupName=group).get("Schedules", []):
            schedule = self._scheduler.get_schedule(Name=summary["Name"], GroupName=group)
            if _one_time_at(schedule["ScheduleExpression"]) > now:
                continue
            try:
                outcome = invoke(retry_launcher.handle, json.loads(schedule["Target"]["Input"]), self._ports)
            except Exception as err:
                failures = self._schedule_failures[summary["Name"]] = (
                    self._schedule_failures.get(summary["Name"], 0) + 1
                )
                self._say(f"trainguard retry-launcher raised {type(err).__name__}: {err} (attempt {failures})")
                if failures < SCHEDULE_ATTEMPTS:
                    continue
            else:
                self._tell("retry-launcher", outcome.as_dict())
            self._scheduler.delete_schedule(Name=summary["Name"], GroupName=group)

    def _tell(self, function: str, outcome: dict[str, Any]) -> None:
        if outcome["kind"] in QUIET_OUTCOMES:
            return
        new = f" -> {outcome['new_job_name']}" if outcome.get("new_job_name") else ""
        reason = textwrap.shorten(outcome["reason"], 160, placeholder=" ...")
        self._say(f"trainguard {function}: {outcome['job_name']} {outcome['kind']}{new}: {reason}")

    def _print_notifications(self) -> None:
        for message in self._aws.notifications():
            attributes = {k: v["Value"] for k, v in message.get("MessageAttributes", {}).items()}
            shown = ", ".join(f"{k}={v}" for k, v in sorted(attributes.items()))
            self._say(
                f"SNS notification: {message.get('Subject', '')}\n    attributes: {shown}\n"
                + textwrap.indent(message["Message"].rstrip(), "    | ", lambda line: True)
            )


def invoke(handle: Callable[[Any, Any], T], event: Any, ports: PortSet) -> T:
    """One invocation of a function's ``handle``. Lambda's ``@metrics.log_metrics`` flushes the Powertools
    metrics after each invocation; here they are dropped (the sandbox has no EMF log to write them to)."""
    try:
        return handle(event, ports)
    finally:
        metrics.clear_metrics()


def _one_time_at(expression: str) -> datetime:
    """The time of a one-time schedule, 'at(yyyy-mm-ddThh:mm:ss)', in UTC (trainguard sets the zone UTC)."""
    if not expression.startswith("at(") or not expression.endswith(")"):
        raise ValueError(f"not a one-time schedule expression: {expression}")
    return datetime.fromisoformat(expression[3:-1]).replace(tzinfo=UTC)
