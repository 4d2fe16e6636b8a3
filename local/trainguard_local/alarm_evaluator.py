"""CloudWatch alarm evaluation for local runs: moto stores alarms but never evaluates them.

moto 5.2.x starts every alarm in OK and never changes it, returns nothing for metric math in
GetMetricData, and has no PutCompositeAlarm (NotImplementedError); see /work/shared/LOCAL_AWS.md.
`LocalAlarmEvaluator.evaluate_all()` does what CloudWatch does each minute: it reads the alarms
(DescribeAlarms), the datapoints (GetMetricStatistics), computes each metric alarm's state with
`trainguard.domain.alarm_evaluation` (CloudWatch's documented semantics, cited there), then each
composite alarm, children first. The states live here, starting in INSUFFICIENT_DATA as in AWS ("When
this operation creates an alarm, the alarm state is immediately set to INSUFFICIENT_DATA",
API_PutMetricAlarm). A change is written back with SetAlarmState, so DescribeAlarms shows it, and sent
to EventBridge as a "CloudWatch Alarm State Change" event shaped like AWS's samples
(tests/fixtures/events/cloudwatch_alarm_state_change.*.awsdocs.json, from
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-and-eventbridge.html).

- Source: AWS refuses PutEvents entries with an `aws.` source from callers (ErrorCode
  NotAuthorizedForSourceException, "Not authorized for the source", reported in
  aws-samples/serverless-patterns#3089); moto 5.2.5 accepts `aws.cloudwatch` and routes it like any
  other source (checked), so a rule written for the real event matches unchanged. Local use only.
- Datapoints: moto's GetMetricStatistics starts its buckets at the first datapoint it finds, not at
  the period boundary CloudWatch uses, so each period is asked for on its own (StartTime..StartTime +
  Period): one call per metric per period of the evaluation range.
- Metric math: MetricStat queries are fetched as above and the expression is computed here: a bare
  metric id, or MAX/MIN/SUM/AVG(METRICS()). In a period where no metric has a value the expression
  has none ("the data point is considered missing if the math expression doesn't return a value",
  alarm-data-queries.html); otherwise it is taken over the values present (assumed).
- SetAlarmState by someone else "Temporarily sets the state of an alarm" (botocore model): it is
  adopted as the current state and the next evaluation moves the alarm back, with an event.
- Composite alarms in a cycle are not evaluated ("the evaluation of composite alarms stops if
  CloudWatch detects a cycle", PutCompositeAlarm). `put_composite_alarm_in_moto` stands in for the
  missing API.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from statistics import fmean
from typing import Any

from trainguard.domain.alarm_evaluation import (
    ALARM,
    INSUFFICIENT_DATA,
    AlarmEvaluation,
    AlarmRule,
    evaluate_alarm,
    evaluate_composite,
    parse_alarm_rule,
    period_starts,
)

EVENT_SOURCE = "aws.cloudwatch"
EVENT_DETAIL_TYPE = "CloudWatch Alarm State Change"
INITIAL_REASON = "Unchecked: Initial alarm creation"  # the previousState reason in AWS's sample
STATISTICS = ("SampleCount", "Average", "Sum", "Minimum", "Maximum")
MATH_FUNCTIONS: dict[str, Callable[[list[float]], float]] = {"MAX": max, "MIN": min, "SUM": sum, "AVG": fmean}
Series = dict[datetime, float]


@dataclass(frozen=True)
class _State:
    value: str
    reason: str
    reason_data: str | None
    timestamp: datetime


class LocalAlarmEvaluator:
    """Evaluates every alarm in a moto CloudWatch, once per call, at `clock()`."""

    def __init__(
        self, cloudwatch_client: Any, events_client: Any, clock: Callable[[], datetime], event_bus_name: str = "default"
    ) -> None:
        self._cloudwatch, self._events, self._clock, self._bus = cloudwatch_client, events_client, clock, event_bus_name
        self._states: dict[str, _State] = {}
        self._written: dict[str, str] = {}  # the state last written to moto, to notice SetAlarmState by others

    def state_of(self, alarm_name: str) -> str | None:
        known = self._states.get(alarm_name)
        return known.value if known else None

    def evaluate_all(self) -> list[dict[str, Any]]:
        """Evaluate every alarm now; return the state-change events sent to EventBridge."""
        now = self._clock()
        metric_alarms, composites = self._describe_alarms()
        alarms = metric_alarms + composites
        for name in set(self._states) - {a["AlarmName"] for a in alarms}:  # deleted
            self._states.pop(name)
            self._written.pop(name, None)
        previous = {a["AlarmName"]: self._current(a, now) for a in alarms}
        arns = {a["AlarmName"]: a["AlarmArn"] for a in alarms}
        events = []
        for alarm in metric_alarms:
            rule = alarm_rule_of(alarm)
            result = evaluate_alarm(rule, self._series(alarm, rule, now), now, previous[alarm["AlarmName"]].value)
            if result.state != previous[alarm["AlarmName"]].value:
                new = _State(result.state, result.reason, _metric_reason_data(alarm, rule, result, now), now)
                events.append(self._change(alarm, new, _metric_configuration(alarm)))
        for alarm in children_first(composites):
            states = {name: known.value for name, known in self._states.items()}
            value = evaluate_composite(alarm["AlarmRule"], states)
            if value != previous[alarm["AlarmName"]].value:
                new = self._composite_state(alarm, value, previous, arns, now)
                events.append(self._change(alarm, new, _composite_configuration(alarm)))
        return self._put_events(events, now)

    def _describe_alarms(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        metric: list[dict[str, Any]] = []
        composite: list[dict[str, Any]] = []
        # Without AlarmTypes, DescribeAlarms returns metric alarms only.
        pages = self._cloudwatch.get_paginator("describe_alarms").paginate(AlarmTypes=["MetricAlarm", "CompositeAlarm"])
        for page in pages:
            metric += page.get("MetricAlarms", [])
            composite += page.get("CompositeAlarms", [])
        return metric, composite

    def _current(self, alarm: Mapping[str, Any], now: datetime) -> _State:
        name, described = alarm["AlarmName"], alarm["StateValue"]
        known = self._states.get(name)
        if known is None:  # first sight: AWS's initial state, not moto's OK
            known = _State(INSUFFICIENT_DATA, INITIAL_REASON, None, now)
            self._write(name, known)
        elif described != self._written.get(name):  # SetAlarmState from elsewhere
            known = _State(described, alarm.get("StateReason", ""), alarm.get("StateReasonData"), now)
            self._written[name] = described
        self._states[name] = known
        return known

    def _write(self, name: str, state: _State) -> None:
        self._cloudwatch.set_alarm_state(
            AlarmName=name,
            StateValue=state.value,
            StateReason=state.reason[:1023],
            StateReasonData=state.reason_data or "{}",
        )
        self._written[name] = state.value

    def _change(self, alarm: Mapping[str, Any], new: _State, configuration: dict[str, Any]) -> dict[str, Any]:
        name, arn = alarm["AlarmName"], alarm["AlarmArn"]
        detail = {
            "alarmName": name,
            "state": _state_detail(new),
            "previousState": _state_detail(self._states[name]),
            "configuration": configuration,
        }
        self._states[name] = new
        self._write(name, new)
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

    def _put_events(self, events: list[dict[str, Any]], now: datetime) -> list[dict[str, Any]]:
        for first in range(0, len(events), 10):  # PutEvents takes at most 10 entries
            batch = events[first : first + 10]
            entries = [
                {"Source": e["source"], "DetailType": e["detail-type"], "Detail": json.dumps(e["detail"])}
                | {"Resources": e["resources"], "Time": now, "EventBusName": self._bus}
                for e in batch
            ]
            response = self._events.put_events(Entries=entries)
            if response.get("FailedEntryCount"):
                raise RuntimeError(f"PutEvents refused alarm state changes: {response['Entries']}")
            for event, entry in zip(batch, response["Entries"], strict=True):
                event["id"] = entry["EventId"]
        return events

    def _series(self, alarm: Mapping[str, Any], rule: AlarmRule, now: datetime) -> Series:
        """The alarm's value per period of the evaluation range: its one metric, or its expression."""
        queries, returned = queries_of(alarm)
        if "Expression" in returned:
            check_expression(returned["Expression"], [q["Id"] for q in queries if "MetricStat" in q])
        starts = period_starts(rule, now)
        series = self._fetch([q for q in queries if "MetricStat" in q], starts)
        return (
            series[returned["Id"]] if "MetricStat" in returned else compute_expression(returned["Expression"], series)
        )

    def _fetch(self, queries: list[Mapping[str, Any]], starts: list[datetime]) -> dict[str, Series]:
        """One GetMetricData call for all of the alarm's metrics over the whole range. moto buckets
        GetMetricData from StartTime, which is a period boundary here (GetMetricStatistics would bucket
        from its first datapoint instead)."""
        for query in queries:
            if query["MetricStat"]["Stat"] not in STATISTICS:
                raise NotImplementedError(
                    f"statistic {query['MetricStat']['Stat']!r} is not supported locally: one of {STATISTICS}"
                )
        values: dict[str, Series] = {q["Id"]: {} for q in queries}
        if not queries or not starts:
            return values
        period = int(queries[0]["MetricStat"]["Period"])
        request = [
            {
                "Id": q["Id"],
                "MetricStat": {k: v for k, v in q["MetricStat"].items() if v is not None},
                "ReturnData": True,
            }
            for q in queries
        ]
        response = self._cloudwatch.get_metric_data(
            MetricDataQueries=request, StartTime=min(starts), EndTime=max(starts) + timedelta(seconds=period)
        )
        wanted = set(starts)
        for result in response.get("MetricDataResults", []):
            for stamp, value in zip(result.get("Timestamps", []), result.get("Values", []), strict=False):
                start = stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
                if start in wanted:
                    values[result["Id"]][start] = float(value)
        return values

    def _composite_state(
        self,
        alarm: Mapping[str, Any],
        value: str,
        previous: Mapping[str, _State],
        arns: Mapping[str, str],
        now: datetime,
    ) -> _State:
        """Reason and reasonData as in AWS's composite sample: the child that moved, and the children
        ({"triggeringAlarms": [{"arn", "state": {"value", "timestamp"}}]}): those in ALARM when ALARM."""
        children = [_name_of(ref) for ref in parse_alarm_rule(alarm["AlarmRule"])[1]]
        moved = [c for c in children if self._states[c].value != previous[c].value]
        if moved:
            when = self._states[moved[0]].timestamp.astimezone(UTC).strftime("%A %d %B, %Y %H:%M:%S UTC")
            reason = f"{arns[moved[0]]} transitioned to {self._states[moved[0]].value} at {when}"
        else:
            reason = f"{alarm['AlarmArn']} alarm rule evaluates to {value}"
        triggering = [c for c in children if value != ALARM or self._states[c].value == ALARM] or children
        data = {
            "triggeringAlarms": [
                {
                    "arn": arns[c],
                    "state": {"value": self._states[c].value, "timestamp": _aws_time(self._states[c].timestamp)},
                }
                for c in triggering
            ]
        }
        return _State(value, reason, json.dumps(data, separators=(",", ":")), now)


def alarm_rule_of(alarm: Mapping[str, Any]) -> AlarmRule:
    """The evaluation settings of a DescribeAlarms MetricAlarm. "Each metric must be using the same
    period" in a math alarm (alarm-data-queries.html)."""
    periods = {q["MetricStat"]["Period"] for q in alarm.get("Metrics") or [] if "MetricStat" in q} or {
        alarm.get("Period")
    }
    period = periods.pop() if len(periods) == 1 else None
    if not period:
        raise NotImplementedError(
            f"alarm {alarm['AlarmName']}: needs one Period for all its MetricStat queries, has {periods or 'none'} "
            "(an alarm on a Metrics Insights query alone is not supported locally)"
        )
    return AlarmRule(
        threshold=float(alarm["Threshold"]),
        comparison=alarm["ComparisonOperator"],
        period_seconds=int(period),
        evaluation_periods=int(alarm["EvaluationPeriods"]),
        datapoints_to_alarm=int(alarm.get("DatapointsToAlarm") or alarm["EvaluationPeriods"]),
        treat_missing_data=alarm.get("TreatMissingData") or "missing",
    )


_FUNCTION_OF_METRICS = re.compile(r"(MAX|MIN|SUM|AVG)\(METRICS\(\)\)")


def check_expression(expression: str, metric_ids: list[str]) -> None:
    compact = "".join(expression.split())
    if compact not in metric_ids and not _FUNCTION_OF_METRICS.fullmatch(compact):
        raise NotImplementedError(
            f"metric math expression {expression!r} is not supported locally: use a metric id or "
            "MAX(METRICS()), MIN(METRICS()), SUM(METRICS()), AVG(METRICS())"
        )


def compute_expression(expression: str, series: Mapping[str, Series]) -> Series:
    """The expression's value per period, over the MetricStat series by id."""
    check_expression(expression, list(series))
    compact = "".join(expression.split())
    if compact in series:
        return dict(series[compact])
    function = MATH_FUNCTIONS[compact.split("(", 1)[0]]
    starts = sorted({start for values in series.values() for start in values})
    return {start: float(function([v[start] for v in series.values() if start in v])) for start in starts}


def children_first(composites: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Composite alarms ordered so that a composite comes after the composites it names; those in a
    cycle, or depending on one, are left out."""
    by_name = {a["AlarmName"]: a for a in composites}
    ordered: list[dict[str, Any]] = []
    done: set[str] = set()
    visiting: set[str] = set()

    def visit(name: str) -> bool:
        if name in done or name in visiting:
            return name in done
        visiting.add(name)
        children = [_name_of(ref) for ref in parse_alarm_rule(by_name[name]["AlarmRule"])[1]]
        ready = all([visit(child) for child in children if child in by_name])
        visiting.discard(name)
        if ready:
            done.add(name)
            ordered.append(by_name[name])
        return ready

    for name in by_name:
        visit(name)
    return ordered


def put_composite_alarm_in_moto(
    name: str, alarm_rule: str, description: str = "", account_id: str = "123456789012", region: str = "us-east-1"
) -> None:
    """PutCompositeAlarm for moto 5.2.x, which has none: store the alarm in moto's backend (in-process,
    or a ThreadedMotoServer in this process). DescribeAlarms then lists it under CompositeAlarms."""
    from moto.backends import get_backend

    parse_alarm_rule(alarm_rule)  # AWS refuses a malformed rule
    get_backend("cloudwatch")[account_id][region].put_metric_alarm(
        name=name, namespace="", metric_name="", comparison_operator="", evaluation_periods=0, period=0,
        threshold=0.0, statistic="", description=description, dimensions=[], alarm_actions=[], rule=alarm_rule,
    )  # fmt: skip


def queries_of(alarm: Mapping[str, Any]) -> tuple[list[Mapping[str, Any]], Mapping[str, Any]]:
    """The alarm's MetricDataQuery list and the one whose ReturnData is true. A single-metric alarm is
    read as one MetricStat query, with a generated id as in AWS's single-metric sample."""
    queries = alarm.get("Metrics") or []
    if not queries:
        if not alarm.get("Statistic"):
            raise NotImplementedError(f"alarm {alarm['AlarmName']}: ExtendedStatistic is not supported locally")
        metric = {k: alarm.get(k) for k in ("Namespace", "MetricName", "Dimensions")}
        stat = {"Metric": metric, "Period": alarm["Period"], "Stat": alarm["Statistic"], "Unit": alarm.get("Unit")}
        queries = [
            {"Id": str(uuid.uuid5(uuid.NAMESPACE_URL, alarm["AlarmArn"])), "MetricStat": stat, "ReturnData": True}
        ]
    returned = [q for q in queries if q.get("ReturnData", len(queries) == 1)]
    if len(returned) != 1:
        raise ValueError(f"alarm {alarm['AlarmName']}: exactly one query must have ReturnData true")
    return queries, returned[0]


def _name_of(reference: str) -> str:
    return reference.split(":alarm:", 1)[-1]


def _aws_time(moment: datetime) -> str:
    """CloudWatch's event timestamps: "2019-10-02T17:04:40.989+0000" (milliseconds, no colon)."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}+0000"


def _state_detail(state: _State) -> dict[str, Any]:
    detail = {"value": state.value, "reason": state.reason, "timestamp": _aws_time(state.timestamp)}
    if state.reason_data is not None:  # the sample's initial previousState has no reasonData
        detail["reasonData"] = state.reason_data
    return detail


def _metric_reason_data(alarm: Mapping[str, Any], rule: AlarmRule, result: AlarmEvaluation, now: datetime) -> str:
    """As in AWS's samples: version, queryDate, startDate, statistic (single metric only), period,
    recentDatapoints (oldest first here; the order is not documented), threshold."""
    data: dict[str, Any] = {"version": "1.0", "queryDate": _aws_time(now)}
    if result.datapoints:
        data["startDate"] = _aws_time(min(start for start, _ in result.datapoints))
    if not alarm.get("Metrics"):
        data["statistic"] = alarm["Statistic"]
    data.update(period=rule.period_seconds, recentDatapoints=[v for _, v in reversed(result.datapoints)])
    data["threshold"] = rule.threshold
    return json.dumps(data, separators=(",", ":"))


def _metric_configuration(alarm: Mapping[str, Any]) -> dict[str, Any]:
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


def _composite_configuration(alarm: Mapping[str, Any]) -> dict[str, Any]:
    """`configuration` of a composite alarm's event: alarmRule and, when set, the suppressor fields."""
    configuration: dict[str, Any] = {"description": alarm["AlarmDescription"]} if alarm.get("AlarmDescription") else {}
    configuration["alarmRule"] = alarm["AlarmRule"]
    for field in ("ActionsSuppressor", "ActionsSuppressorWaitPeriod", "ActionsSuppressorExtensionPeriod"):
        if alarm.get(field) is not None:
            configuration[field[0].lower() + field[1:]] = alarm[field]
    return configuration
