"""trainguard's own AWS cost in a fleet run, at list prices (prices.py), per guarded instance-hour.

From what the run counted (trainguard_run/usage.py): API calls by operation, Lambda invocations, the
billed quantities of each call, each alarm's life, the custom metrics sent. Two parts of a deployment do
not run all the time in the simulator, and are estimated from what did run:
- the stall prober (every minute) and the quota check (every `quota_check_minutes`) run only while
  something can come of them (trainguard_strategy.py); the cycles a deployment adds over the run's span
  are priced at the average of the cycles that ran;
- the log-activity function runs here only for the lines of a stall window; deployed, it receives every
  watched job's log deliveries. They are priced at the average of the deliveries that ran, at
  `log_deliveries_per_watched_job_hour` (the simulator's jobs write one line a minute).
Lambda duration is not measurable in process: each invocation is billed `handler_ms` plus
`aws_call_ms` per AWS call it made (assumptions, stated in the report).

Pure: no AWS, no boto3.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from infra.settings import Settings
from trainguard_local.fleet import prices

GOAL_SHARE_PERCENT = 0.05  # issue 5: guard cost at most 0.05% of the guarded compute
_DECIMALS = 6


@dataclass
class HandlerUsage:
    """One handler's invocations in a run, its AWS calls and their billed quantities."""

    invocations: int = 0
    calls: Counter[str] = field(default_factory=Counter)  # "service:Operation"
    quantities: dict[str, float] = field(default_factory=dict)  # billed quantities, by ITEMS' names

    def add(self, item: str, quantity: float) -> None:
        self.quantities[item] = self.quantities.get(item, 0.0) + quantity

    @property
    def aws_calls(self) -> int:
        return sum(self.calls.values())


@dataclass(frozen=True)
class AlarmLife:
    name: str
    start: float  # hours on the run's clock
    end: float
    metrics: int  # the metrics it references (a composite: 0)
    composite: bool
    log_silence_of: str | None = None  # the job whose log-silence metric it watches


@dataclass(frozen=True)
class UsageSummary:
    span_hours: float
    handlers: Mapping[str, HandlerUsage]
    alarm_lives: Sequence[AlarmLife]
    log_silence_metric_hours: float  # each watched job's log-silence metric, in the hours it is sent
    powertools_metric_hours: float  # the handlers' EMF metrics, in the hours they are sent

    @property
    def watched_job_hours(self) -> float:
        return sum(life.end - life.start for life in self.alarm_lives if life.log_silence_of is not None)


@dataclass(frozen=True)
class Deployment:
    """How the stack runs what the simulator runs only part of the time, and the duration model."""

    prober_runs_per_hour: float = 60.0  # rate(1 minute)
    quota_checks_per_hour: float = 60 / Settings.quota_check_minutes  # the stack's default schedule
    log_deliveries_per_watched_job_hour: float = 60.0  # assumption: one line a minute, one delivery each
    lambda_memory_gb: float = 0.25  # 256 MB (infra/guard_function.py)
    handler_ms: float = 5.0  # assumption: the handler's own work per invocation (bench: 0.09 ms CPU per event)
    aws_call_ms: float = 25.0  # assumption: one AWS API round trip from Lambda, same region

    def deployed_invocations(self, summary: UsageSummary) -> dict[str, int]:
        return {
            "stall_prober": round(summary.span_hours * self.prober_runs_per_hour),
            "quota_watch": round(summary.span_hours * self.quota_checks_per_hour),
            "log_activity": round(summary.watched_job_hours * self.log_deliveries_per_watched_job_hour),
        }


# item -> (unit, price per unit)
ITEMS: dict[str, tuple[str, float]] = {
    "alarm_metric_hours": ("alarm metric-hour", prices.per_hour(prices.ALARM_METRIC_MONTH)),
    "composite_alarm_hours": ("composite alarm-hour", prices.per_hour(prices.COMPOSITE_ALARM_MONTH)),
    "custom_metric_hours": ("custom metric-hour", prices.per_hour(prices.CUSTOM_METRIC_MONTH)),
    "put_metric_data_requests": ("PutMetricData request", prices.PUT_METRIC_DATA_PER_1000 / 1000),
    "get_metric_data_metrics": ("GetMetricData metric", prices.GET_METRIC_DATA_PER_1000_METRICS / 1000),
    "lambda_requests": ("invocation", prices.LAMBDA_REQUEST),
    "lambda_gb_seconds": ("GB-second (arm64)", prices.LAMBDA_ARM_GB_SECOND),
    "dynamodb_read_units": ("read request unit", prices.DYNAMODB_READ_PER_MILLION / 1_000_000),
    "dynamodb_write_units": ("write request unit", prices.DYNAMODB_WRITE_PER_MILLION / 1_000_000),
    "sns_publish_requests": ("publish request (64 KB)", prices.SNS_PUBLISH_PER_MILLION / 1_000_000),
    "s3_list_requests": ("LIST request", prices.S3_LIST_PER_1000 / 1000),
    "scheduler_invocations": ("schedule invocation", prices.SCHEDULER_INVOCATION_PER_MILLION / 1_000_000),
}
NOT_COUNTED = [
    "the stack's fixed resources, whatever the fleet: the KMS key, the functions' error and dead-letter alarms, "
    "the prober-health alarm, the dashboard",
    "Lambda's cold starts and its own log lines (START, END, REPORT) and the handlers' log lines, ingested by "
    "CloudWatch Logs",
    "SNS deliveries to subscribers (email: per 100,000), data transfer",
    "free tiers (every figure is a list price past them)",
]


def guard_cost(
    summary: UsageSummary,
    *,
    guarded_instance_hours: float,
    guarded_compute_dollars: float,
    deployment: Deployment | None = None,
) -> dict[str, Any]:
    """The breakdown by item (quantity, unit price, dollars), the total, and the total per guarded
    instance-hour and as a share of the guarded compute's dollars. JSON-serialisable."""
    deployment = deployment or Deployment()
    run, estimated = _quantities(summary, deployment)
    breakdown: dict[str, dict[str, Any]] = {}
    for item, (unit, price) in ITEMS.items():
        quantity = run.get(item, 0.0) + estimated.get(item, 0.0)
        breakdown[item] = {
            "quantity": round(quantity, 3),
            "counted_in_run": round(run.get(item, 0.0), 3),
            "estimated_for_the_deployed_schedules": round(estimated.get(item, 0.0), 3),
            "unit": unit,
            "price_per_unit": price,
            "dollars": round(quantity * price, _DECIMALS),
        }
    total = round(sum(entry["dollars"] for entry in breakdown.values()), _DECIMALS)
    share = total / guarded_compute_dollars * 100 if guarded_compute_dollars else None
    return {
        "currency": "USD",
        "breakdown": breakdown,
        "total_dollars": total,
        "guarded_instance_hours": round(guarded_instance_hours, 3),
        "guarded_compute_dollars": round(guarded_compute_dollars, 2),
        "dollars_per_guarded_instance_hour": round(total / guarded_instance_hours, 8)
        if guarded_instance_hours
        else None,
        "share_of_guarded_compute_percent": None if share is None else round(share, 6),
        "goal_share_percent": GOAL_SHARE_PERCENT,
        "meets_goal": None if share is None else share <= GOAL_SHARE_PERCENT,
        "span_hours": round(summary.span_hours, 3),
        "watched_job_hours": round(summary.watched_job_hours, 3),
        "api_calls_in_run": dict(sorted(sum((h.calls for h in summary.handlers.values()), Counter()).items())),
        "invocations_in_run": {name: h.invocations for name, h in sorted(summary.handlers.items())},
        "deployment": _deployment(summary, deployment),
        "unpriced_calls": "API calls other than CloudWatch's PutMetricData and GetMetricData, S3's ListObjectsV2, "
        "SNS's Publish and DynamoDB's reads and writes (trainguard_run/usage.py) have no per-call price (SageMaker, "
        "Service Quotas, DescribeAlarms, PutMetricAlarm, DeleteAlarms, SetAlarmState, FilterLogEvents, CreateSchedule)",
        "not_counted": NOT_COUNTED,
        "sources": "local/trainguard_local/fleet/prices.py",
    }


def _deployment(summary: UsageSummary, deployment: Deployment) -> dict[str, Any]:
    """What the deployment's estimate assumed."""
    deployed = deployment.deployed_invocations(summary)
    return {
        "invocations_deployed": deployed,
        # a function that never ran here: nothing to price its deployed runs from
        "not_estimated": [name for name in deployed if not summary.handlers.get(name, HandlerUsage()).invocations],
        "lambda_memory_gb": deployment.lambda_memory_gb,
        "handler_ms": deployment.handler_ms,
        "aws_call_ms": deployment.aws_call_ms,
        "log_deliveries_per_watched_job_hour": deployment.log_deliveries_per_watched_job_hour,
    }


def _quantities(summary: UsageSummary, deployment: Deployment) -> tuple[dict[str, float], dict[str, float]]:
    """What the run counted, and what a deployment adds for the schedules and deliveries it ran in part."""
    run = HandlerUsage()
    for handler in summary.handlers.values():
        for item, quantity in handler.quantities.items():
            run.add(item, quantity)
        run.add("lambda_requests", handler.invocations)
        run.add("lambda_gb_seconds", _gb_seconds(handler.invocations, handler.aws_calls, deployment))
    counted = run.quantities
    counted["scheduler_invocations"] = float(summary.handlers.get("retry_launcher", HandlerUsage()).invocations)
    counted["alarm_metric_hours"] = sum(life.metrics * _billed_hours(life) for life in summary.alarm_lives)
    counted["composite_alarm_hours"] = sum(_billed_hours(life) for life in summary.alarm_lives if life.composite)
    counted["custom_metric_hours"] = summary.log_silence_metric_hours + summary.powertools_metric_hours
    estimated = HandlerUsage()
    for name, deployed in deployment.deployed_invocations(summary).items():
        ran = summary.handlers.get(name)
        if ran is None or ran.invocations == 0:
            continue
        extra = max(0.0, deployed - ran.invocations)
        scale = extra / ran.invocations  # the cycles that ran stand for those that did not
        for item, quantity in ran.quantities.items():
            estimated.add(item, quantity * scale)
        estimated.add("lambda_requests", extra)
        estimated.add("lambda_gb_seconds", _gb_seconds(ran.invocations, ran.aws_calls, deployment) * scale)
    return counted, estimated.quantities


def _gb_seconds(invocations: float, aws_calls: float, deployment: Deployment) -> float:
    billed_ms = invocations * deployment.handler_ms + aws_calls * deployment.aws_call_ms  # whole ms each
    return (
        math.ceil(billed_ms / prices.LAMBDA_BILLING_MS) * prices.LAMBDA_BILLING_MS / 1000 * deployment.lambda_memory_gb
    )


def _billed_hours(life: AlarmLife) -> float:
    """An alarm's life in whole hours, rounded up (conservative: a part hour is billed whole)."""
    return float(max(1, math.ceil(life.end - life.start - 1e-9)))
