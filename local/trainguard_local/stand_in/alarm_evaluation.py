"""CloudWatch alarm evaluation as AWS documents it, for local runs: moto never evaluates an alarm.

Sources:
- [EVAL] "How alarm state is evaluated when data is missing", CloudWatch User Guide, 2023 archive:
  https://github.com/awsdocs/amazon-cloudwatch-user-guide/blob/cc40332fd9cd65366e991a6fd68654b2875588cc/doc_source/AlarmThatSendsEmail.md
  (now https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarms-and-missing-data.html).
- [API] PutMetricAlarm and PutCompositeAlarm (AlarmRule), botocore's CloudWatch model (1.43+) and
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html.

What is documented and done here:
- M out of N: "Datapoints to Alarm is the number of data points within the Evaluation Periods that
  must be breaching to cause the alarm to go to the ALARM state" [EVAL].
- The evaluation range: CloudWatch "attempts to retrieve a higher number of data points than the
  number specified as Evaluation Periods". With at least N real points in it, "the most recent real
  data points" decide and the missing-data setting "is ignored"; with fewer, "CloudWatch fills in the
  missing data points with the result you specified ... all real data points in the evaluation range
  are included ... uses missing data points only as few times as possible" [EVAL].
- `missing`: "If all data points in the alarm evaluation range are missing, the alarm transitions to
  INSUFFICIENT_DATA"; `ignore`: "The current alarm state is maintained" [EVAL].
- Premature alarm state: "alarms are designed to always go into ALARM state when the oldest available
  breaching datapoint ... is at least as old as the value of Datapoints to Alarm, and all other more
  recent data points are breaching or missing" [EVAL].
Assumed (not published): the range is N + 2 periods; AWS gives only the example "5 is the evaluation
range" for N = 3. The premature rule applies to `missing` only, and only when no real point in the
range is non-breaching: the documented tables need both (a `0 - X - -` row is OK, not ALARM, and
IGNORE rows retain the current state). See tests/unit/test_alarm_evaluation.py for the tables.
Windows: periods are aligned to the period boundary (a WallClockWindow in UTC). AWS's default
SlidingWindow "advances each time the alarm is evaluated" (.../monitoring/alarm-evaluation-window.html),
every minute; for 60-second periods evaluated on the minute the two are the same.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

OK, ALARM, INSUFFICIENT_DATA = "OK", "ALARM", "INSUFFICIENT_DATA"
STATES = (OK, ALARM, INSUFFICIENT_DATA)
TREATMENTS = ("missing", "notBreaching", "breaching", "ignore")
COMPARISONS: dict[str, tuple[Callable[[float, float], bool], str]] = {
    "GreaterThanOrEqualToThreshold": (operator.ge, "greater than or equal to"),
    "GreaterThanThreshold": (operator.gt, "greater than"),
    "LessThanThreshold": (operator.lt, "less than"),
    "LessThanOrEqualToThreshold": (operator.le, "less than or equal to"),
}
# "5 is the evaluation range" for Evaluation Periods 3 [EVAL]; no formula is published (assumed N + 2).
EXTRA_PERIODS_IN_RANGE = 2


@dataclass(frozen=True)
class AlarmRule:
    """What PutMetricAlarm says about evaluation."""

    threshold: float
    comparison: str
    period_seconds: int
    evaluation_periods: int
    datapoints_to_alarm: int
    treat_missing_data: str = "missing"  # "The default behavior is missing" [EVAL]

    def __post_init__(self) -> None:
        if self.comparison not in COMPARISONS:
            raise ValueError(f"unsupported ComparisonOperator {self.comparison!r}: one of {sorted(COMPARISONS)}")
        if self.treat_missing_data not in TREATMENTS:
            raise ValueError(f"unsupported TreatMissingData {self.treat_missing_data!r}: one of {TREATMENTS}")
        # [API] Period: "Valid values are 10, 20, 30, and any multiple of 60."
        if self.period_seconds not in (10, 20, 30) and (self.period_seconds <= 0 or self.period_seconds % 60):
            raise ValueError(f"Period {self.period_seconds} is not 10, 20, 30 or a multiple of 60")
        if not 1 <= self.datapoints_to_alarm <= self.evaluation_periods:
            raise ValueError("DatapointsToAlarm must be between 1 and EvaluationPeriods")

    @property
    def evaluation_range(self) -> int:
        return self.evaluation_periods + EXTRA_PERIODS_IN_RANGE

    def breaches(self, value: float) -> bool:
        return COMPARISONS[self.comparison][0](value, self.threshold)


@dataclass(frozen=True)
class AlarmEvaluation:
    """The state with AWS's kind of reason. `breaching` counts filled-in points treated as breaching;
    `evaluated` counts real and filled points; `datapoints` are the real ones used, newest first."""

    state: str
    reason: str
    breaching: int
    evaluated: int
    filled: int = 0
    datapoints: tuple[tuple[datetime, float], ...] = ()


def period_starts(rule: AlarmRule, now: datetime) -> list[datetime]:
    """The evaluation range, newest first: the last complete period before `now`, then older ones."""
    newest = _epoch(now) // rule.period_seconds * rule.period_seconds - rule.period_seconds
    return [datetime.fromtimestamp(newest - i * rule.period_seconds, UTC) for i in range(rule.evaluation_range)]


def evaluate_alarm(
    rule: AlarmRule, datapoints: Mapping[datetime, float], now: datetime, current_state: str
) -> AlarmEvaluation:
    """The state CloudWatch would set now, from one value per period start (the statistic or the
    expression's result). A value for the current, incomplete period is not used."""
    if current_state not in STATES:
        raise ValueError(f"unknown alarm state {current_state!r}")
    values = {_aligned(rule, t): v for t, v in datapoints.items()}
    starts = period_starts(rule, now)
    real = [(t, float(values[t])) for t in starts if t in values]
    n, m = rule.evaluation_periods, rule.datapoints_to_alarm
    if len(real) >= n:  # enough real points: "the value you set for how to treat missing data ... is ignored"
        used = real[:n]
        return _decide(rule, used, sum(rule.breaches(v) for _, v in used), filled=0)
    treatment = rule.treat_missing_data
    fill = n - len(real)
    real_breaching = sum(rule.breaches(v) for _, v in real)
    if treatment == "breaching":
        return _decide(rule, real, real_breaching + fill, filled=fill)
    if treatment == "notBreaching":
        return _decide(rule, real, real_breaching, filled=fill)
    # missing / ignore: the missing points count for nothing; only real points can decide.
    if real and (real_breaching >= m or real_breaching < len(real)):
        return _decide(rule, real, real_breaching, filled=0)
    if treatment == "missing" and real and starts.index(real[-1][0]) + 1 >= m:
        # Premature alarm state: the oldest breaching point is at least M periods old, all newer are missing.
        return _decide(rule, real, real_breaching, filled=0, force_alarm=True)
    unknown = n - len(real)
    if treatment == "ignore":
        state, reason = current_state, f"Missing data ignored: {unknown} {_datapoints(unknown)} missing."
    else:
        state, reason = (
            INSUFFICIENT_DATA,
            f"Insufficient Data: {unknown} {_datapoints(unknown)} {_was(unknown)} unknown.",
        )
    return AlarmEvaluation(state, reason, real_breaching, len(real), 0, tuple(real))


def _decide(
    rule: AlarmRule, used: list[tuple[datetime, float]], breaching: int, filled: int, force_alarm: bool = False
) -> AlarmEvaluation:
    """ALARM when at least M points breach, else OK, with a reason in the words AWS uses, e.g.
    "Threshold Crossed: 1 out of the last 1 datapoints [99.5 (02/10/19 16:59:00)] was greater than the
    threshold (50.0) (minimum 1 datapoint for OK -> ALARM transition)." (the samples in
    tests/fixtures/events/cloudwatch_alarm_state_change.*.awsdocs.json)."""
    n, m = rule.evaluation_periods, rule.datapoints_to_alarm
    alarm = force_alarm or breaching >= m
    evaluated = len(used) + filled
    listed = ", ".join(f"{v!r} ({t.strftime('%d/%m/%y %H:%M:%S')})" for t, v in used)
    words, threshold = COMPARISONS[rule.comparison][1], float(rule.threshold)
    count = breaching if alarm else evaluated - breaching
    if alarm:
        tail = f"{words} the threshold ({threshold!r}) (minimum {m} {_datapoints(m)} for OK -> ALARM"
    else:
        need = n - m + 1
        tail = f"not {words} the threshold ({threshold!r}) (minimum {need} {_datapoints(need)} for ALARM -> OK"
    reason = f"Threshold Crossed: {count} out of the last {n} datapoints [{listed}] {_was(count)} {tail} transition)."
    if filled:
        reason += f" {filled} missing {_datapoints(filled)} treated as {rule.treat_missing_data}."
    return AlarmEvaluation(ALARM if alarm else OK, reason, breaching, evaluated, filled, tuple(used))


def _datapoints(count: int) -> str:
    return "datapoint" if count == 1 else "datapoints"


def _was(count: int) -> str:
    return "was" if count == 1 else "were"


def _epoch(moment: datetime) -> int:
    if moment.tzinfo is None:
        raise ValueError(f"{moment} has no time zone: alarm times must be aware (UTC)")
    return int(moment.timestamp())


def _aligned(rule: AlarmRule, start: datetime) -> datetime:
    seconds = _epoch(start)
    if seconds % rule.period_seconds or start.microsecond:
        raise ValueError(f"datapoint at {start.isoformat()} is not on a {rule.period_seconds}-second period boundary")
    return datetime.fromtimestamp(seconds, UTC)
