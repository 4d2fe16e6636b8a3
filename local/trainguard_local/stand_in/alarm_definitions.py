"""A described alarm read the way CloudWatch evaluates it, for the local alarm evaluator
(alarm_evaluator.py): its evaluation settings, its metric queries, its metric math, and the order in
which composite alarms are evaluated. Pure: DescribeAlarms' dicts in, values out."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime
from statistics import fmean
from typing import Any

from trainguard_local.stand_in.alarm_evaluation import AlarmRule
from trainguard_local.stand_in.composite_alarm_rule import parse_alarm_rule

MATH_FUNCTIONS: dict[str, Callable[[list[float]], float]] = {"MAX": max, "MIN": min, "SUM": sum, "AVG": fmean}
Series = dict[datetime, float]


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
        children = [alarm_name_of(ref) for ref in parse_alarm_rule(by_name[name]["AlarmRule"])[1]]
        ready = all([visit(child) for child in children if child in by_name])
        visiting.discard(name)
        if ready:
            done.add(name)
            ordered.append(by_name[name])
        return ready

    for name in by_name:
        visit(name)
    return ordered


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


def alarm_name_of(reference: str) -> str:
    return reference.split(":alarm:", 1)[-1]
