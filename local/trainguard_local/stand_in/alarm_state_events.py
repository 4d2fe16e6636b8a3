"""The shapes of alarm states and of the "CloudWatch Alarm State Change" events the local alarm
evaluator sends (alarm_evaluator.py), as in AWS's samples
(tests/fixtures/events/cloudwatch_alarm_state_change.*.awsdocs.json, from
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-and-eventbridge.html)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from trainguard_local.stand_in.alarm_definitions import queries_of
from trainguard_local.stand_in.alarm_evaluation import AlarmEvaluation, AlarmRule

EVENT_SOURCE = "aws.cloudwatch"
EVENT_DETAIL_TYPE = "CloudWatch Alarm State Change"
INITIAL_REASON = "Unchecked: Initial alarm creation"  # the previousState reason in AWS's sample


@dataclass(frozen=True)
class AlarmState:
    value: str
    reason: str
    reason_data: str | None
    timestamp: datetime


def aws_time(moment: datetime) -> str:
    """CloudWatch's event timestamps: "2019-10-02T17:04:40.989+0000" (milliseconds, no colon)."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}+0000"


def state_detail(state: AlarmState) -> dict[str, Any]:
    detail = {"value": state.value, "reason": state.reason, "timestamp": aws_time(state.timestamp)}
    if state.reason_data is not None:  # the sample's initial previousState has no reasonData
        detail["reasonData"] = state.reason_data
    return detail


def state_change_event(
    alarm: Mapping[str, Any], new: AlarmState, previous: AlarmState, configuration: dict[str, Any]
) -> dict[str, Any]:
    """The event of `alarm` moving from `previous` to `new`, as in AWS's samples; its `id` is EventBridge's, set
    when the event is put."""
    name, arn = alarm["AlarmName"], alarm["AlarmArn"]
    detail = {
        "alarmName": name,
        "state": state_detail(new),
        "previousState": state_detail(previous),
        "configuration": configuration,
    }
    _, _, _, region, account, *_ = arn.split(":")
    return {
        "version": "0",
        "id": "",
        "detail-type": EVENT_DETAIL_TYPE,
        "source": EVENT_SOURCE,
        "account": account,
        "time": new.timestamp.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [arn],
        "detail": detail,
    }


def metric_reason_data(alarm: Mapping[str, Any], rule: AlarmRule, result: AlarmEvaluation, now: datetime) -> str:
    """As in AWS's samples: version, queryDate, startDate, statistic (single metric only), period,
    recentDatapoints (oldest first here; the order is not documented), threshold."""
    data: dict[str, Any] = {"version": "1.0", "queryDate": aws_time(now)}
    if result.datapoints:
        data["startDate"] = aws_time(min(start for start, _ in result.datapoints))
    if not alarm.get("Metrics"):
        data["statistic"] = alarm["Statistic"]
    data.update(period=rule.period_seconds, recentDatapoints=[v for _, v in reversed(result.datapoints)])
    data["threshold"] = rule.threshold
    return json.dumps(data, separators=(",", ":"))


def metric_configuration(alarm: Mapping[str, Any]) -> dict[str, Any]:
    """`configuration` of a metric alarm's event: description and metrics[], each with metricStat or
    expression (and label), as in AWS's single-metric and metric-math samples."""
    queries, _ = queries_of(alarm)
    metrics = []
    for query in queries:
        entry: dict[str, Any] = {"id": query["Id"]}
        if "MetricStat" in query:
            stat, metric = query["MetricStat"], query["MetricStat"]["Metric"]
            dimensions = {d["Name"]: d["Value"] for d in metric.get("Dimensions") or []}
            entry["metricStat"] = {
                "metric": {"namespace": metric["Namespace"], "name": metric["MetricName"], "dimensions": dimensions},
                "period": stat["Period"],
                "stat": stat["Stat"],
            }
        else:
            entry["expression"] = query["Expression"]
            if query.get("Label"):
                entry["label"] = query["Label"]
        entry["returnData"] = query.get("ReturnData", True)
        metrics.append(entry)
    configuration: dict[str, Any] = {"description": alarm["AlarmDescription"]} if alarm.get("AlarmDescription") else {}
    configuration["metrics"] = metrics
    return configuration


def composite_configuration(alarm: Mapping[str, Any]) -> dict[str, Any]:
    """`configuration` of a composite alarm's event: alarmRule and, when set, the suppressor fields."""
    configuration: dict[str, Any] = {"description": alarm["AlarmDescription"]} if alarm.get("AlarmDescription") else {}
    configuration["alarmRule"] = alarm["AlarmRule"]
    for field in ("ActionsSuppressor", "ActionsSuppressorWaitPeriod", "ActionsSuppressorExtensionPeriod"):
        if alarm.get(field) is not None:
            configuration[field[0].lower() + field[1:]] = alarm[field]
    return configuration
