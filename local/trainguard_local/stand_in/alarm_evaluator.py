"""CloudWatch alarm evaluation for local runs: moto stores alarms but never evaluates them.

moto 5.2.x starts every alarm in OK and never changes it, returns nothing for metric math in
GetMetricData, and has no PutCompositeAlarm (NotImplementedError); see docs/local-aws.md, "moto 5.2.x".
`LocalAlarmEvaluator.evaluate_all()` does what CloudWatch does each minute: it reads the alarms
(DescribeAlarms), the datapoints (GetMetricStatistics), computes each metric alarm's state with
`trainguard_local.stand_in.alarm_evaluation` (CloudWatch's documented semantics, cited there), then each
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

How an alarm is read (its rule, its queries, its metric math) is in alarm_definitions.py; the shapes of
the states and events, in alarm_state_events.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from trainguard_local.stand_in.alarm_definitions import (
    Series,
    alarm_name_of,
    alarm_rule_of,
    check_expression,
    children_first,
    compute_expression,
    queries_of,
)
from trainguard_local.stand_in.alarm_evaluation import (
    ALARM,
    INSUFFICIENT_DATA,
    AlarmRule,
    evaluate_alarm,
    period_starts,
)
from trainguard_local.stand_in.alarm_state_events import (
    INITIAL_REASON,
    AlarmState,
    aws_time,
    composite_configuration,
    metric_configuration,
    metric_reason_data,
    state_change_event,
)
from trainguard_local.stand_in.composite_alarm_rule import evaluate_composite, parse_alarm_rule

STATISTICS = ("SampleCount", "Average", "Sum", "Minimum", "Maximum")


class LocalAlarmEvaluator:
    """Evaluates every alarm in a moto CloudWatch, once per call, at `clock()`."""

    def __init__(
        self, cloudwatch_client: Any, events_client: Any, clock: Callable[[], datetime], event_bus_name: str = "default"
    ) -> None:
        self._cloudwatch, self._events, self._clock, self._bus = cloudwatch_client, events_client, clock, event_bus_name
        self._states: dict[str, AlarmState] = {}
        self._written: dict[str, str] = {}  # the state last written to moto, to notice SetAlarmState by others

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
                new = AlarmState(result.state, result.reason, metric_reason_data(alarm, rule, result, now), now)
                events.append(self._change(alarm, new, metric_configuration(alarm)))
        for alarm in children_first(composites):
            states = {name: known.value for name, known in self._states.items()}
            value = evaluate_composite(alarm["AlarmRule"], states)
            if value != previous[alarm["AlarmName"]].value:
                new = self._composite_state(alarm, value, previous, arns, now)
                events.append(self._change(alarm, new, composite_configuration(alarm)))
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

    def _current(self, alarm: Mapping[str, Any], now: datetime) -> AlarmState:
        name, described = alarm["AlarmName"], alarm["StateValue"]
        known = self._states.get(name)
        if known is None:  # first sight: AWS's initial state, not moto's OK
            known = AlarmState(INSUFFICIENT_DATA, INITIAL_REASON, None, now)
            self._write(name, known)
        elif described != self._written.get(name):  # SetAlarmState from elsewhere
            known = AlarmState(described, alarm.get("StateReason", ""), alarm.get("StateReasonData"), now)
            self._written[name] = described
        self._states[name] = known
        return known

    def _write(self, name: str, state: AlarmState) -> None:
        self._cloudwatch.set_alarm_state(
            AlarmName=name,
            StateValue=state.value,
            StateReason=state.reason[:1023],
            StateReasonData=state.reason_data or "{}",
        )
        self._written[name] = state.value

    def _change(self, alarm: Mapping[str, Any], new: AlarmState, configuration: dict[str, Any]) -> dict[str, Any]:
        name = alarm["AlarmName"]
        event = state_change_event(alarm, new, self._states[name], configuration)
        self._states[name] = new
        self._write(name, new)
        return event

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
        previous: Mapping[str, AlarmState],
        arns: Mapping[str, str],
        now: datetime,
    ) -> AlarmState:
        """Reason and reasonData as in AWS's composite sample: the child that moved, and the children
        ({"triggeringAlarms": [{"arn", "state": {"value", "timestamp"}}]}): those in ALARM when ALARM."""
        children = [alarm_name_of(ref) for ref in parse_alarm_rule(alarm["AlarmRule"])[1]]
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
                    "state": {"value": self._states[c].value, "timestamp": aws_time(self._states[c].timestamp)},
                }
                for c in triggering
            ]
        }
        return AlarmState(value, reason, json.dumps(data, separators=(",", ":")), now)


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
