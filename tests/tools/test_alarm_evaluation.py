"""CloudWatch alarm evaluation as documented: comparisons, M out of N, missing data, the documented
example tables, period alignment and composite rules. [EVAL] and [API] are the sources cited in
lambdas/trainguard/domain/alarm_evaluation.py."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from trainguard_local.stand_in.alarm_evaluation import (
    ALARM,
    INSUFFICIENT_DATA,
    OK,
    STATES,
    AlarmRule,
    evaluate_alarm,
    period_starts,
)
from trainguard_local.stand_in.composite_alarm_rule import evaluate_composite, parse_alarm_rule

NOW = datetime(2026, 3, 2, 10, 0, 30, tzinfo=UTC)  # the newest complete 60 s period starts at 09:59
PERIOD = 60


def rule(m: int = 1, n: int = 1, treat: str = "missing", comparison: str = "GreaterThanThreshold") -> AlarmRule:
    return AlarmRule(
        threshold=5.0,
        comparison=comparison,
        period_seconds=PERIOD,
        evaluation_periods=n,
        datapoints_to_alarm=m,
        treat_missing_data=treat,
    )


def series(pattern: str, now: datetime = NOW) -> dict[datetime, float]:
    """The docs' notation, oldest first, "the most recent data point on the right": 0 is a non-breaching
    point, X a breaching one, - a missing one. Breaching is above the threshold 5 (GreaterThanThreshold)."""
    cells = pattern.split()
    newest = datetime(now.year, now.month, now.day, now.hour, now.minute, tzinfo=UTC) - timedelta(seconds=PERIOD)
    values = {"0": 1.0, "X": 9.0}
    return {
        newest - timedelta(seconds=PERIOD * age): values[cell]
        for age, cell in enumerate(reversed(cells))
        if cell != "-"
    }


# ---- Comparison operators -----------------------------------------------------------------------


# Per operator, the state a value just below, at and just above the threshold 5 gives.
AROUND_THE_THRESHOLD = (4.9, 5.0, 5.1)
STATES_AROUND_THE_THRESHOLD = {
    "GreaterThanThreshold": (OK, OK, ALARM),
    "GreaterThanOrEqualToThreshold": (OK, ALARM, ALARM),
    "LessThanThreshold": (ALARM, OK, OK),
    "LessThanOrEqualToThreshold": (ALARM, ALARM, OK),
}


@pytest.mark.parametrize(
    ("comparison", "value", "state"),
    [
        (comparison, value, state)
        for comparison, states in STATES_AROUND_THE_THRESHOLD.items()
        for value, state in zip(AROUND_THE_THRESHOLD, states, strict=True)
    ],
)
def test_each_comparison_operator_against_the_threshold(comparison: str, value: float, state: str) -> None:
    newest = period_starts(rule(), NOW)[0]
    result = evaluate_alarm(rule(comparison=comparison), {newest: value}, NOW, INSUFFICIENT_DATA)
    assert result.state == state
    assert (result.breaching, result.evaluated) == (int(state == ALARM), 1)


# ---- M out of N ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("m", "n", "pattern", "state", "breaching"),
    [
        (2, 3, "X 0 X", ALARM, 2),  # "don't have to be consecutive"
        (2, 3, "X X 0", ALARM, 2),
        (2, 3, "0 0 X", OK, 1),
        (2, 3, "X X 0 0 X", OK, 1),  # only the last N count: the two old X are out
        (3, 3, "X X X", ALARM, 3),
        (3, 3, "X X 0", OK, 2),
        (3, 3, "0 X X X", ALARM, 3),
        (1, 1, "X 0", OK, 0),
        (4, 5, "X X 0 X X", ALARM, 4),
    ],
)
def test_m_out_of_n(m: int, n: int, pattern: str, state: str, breaching: int) -> None:
    result = evaluate_alarm(rule(m, n), series(pattern), NOW, OK)
    assert (result.state, result.breaching, result.evaluated) == (state, breaching, n)


# ---- Missing data -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("treat", "pattern", "current", "state"),
    [
        # total: nothing at all in the range
        ("missing", "- - - - -", OK, INSUFFICIENT_DATA),
        ("missing", "- - - - -", ALARM, INSUFFICIENT_DATA),
        ("ignore", "- - - - -", OK, OK),
        ("ignore", "- - - - -", ALARM, ALARM),
        ("ignore", "- - - - -", INSUFFICIENT_DATA, INSUFFICIENT_DATA),
        ("breaching", "- - - - -", OK, ALARM),
        ("notBreaching", "- - - - -", ALARM, OK),
        # partial, with fewer than N real points: the treatment fills the gaps
        ("breaching", "- - - X -", OK, ALARM),
        ("breaching", "- - - 0 -", OK, OK),  # 0 + B + B: 2 of 3 breaching, 3 needed
        ("notBreaching", "- - X X -", ALARM, OK),
        ("notBreaching", "- - X X X", OK, ALARM),
        ("missing", "- - - 0 -", ALARM, OK),
        ("ignore", "- - - 0 -", ALARM, OK),  # a real non-breaching point decides even with `ignore`
        ("ignore", "- - - X -", OK, OK),
        ("ignore", "- - - X -", ALARM, ALARM),
        # partial, with at least N real points in the range: the treatment "is not needed and is ignored"
        ("breaching", "0 0 - 0 -", ALARM, OK),
        ("notBreaching", "X X - X -", OK, ALARM),
        ("ignore", "X - X X -", OK, ALARM),
    ],
)
def test_each_treatment_of_missing_data(treat: str, pattern: str, current: str, state: str) -> None:
    assert evaluate_alarm(rule(3, 3, treat), series(pattern), NOW, current).state == state


def test_filled_points_are_counted_and_said() -> None:
    result = evaluate_alarm(rule(3, 3, "breaching"), series("- - - - X"), NOW, OK)
    assert (result.state, result.breaching, result.evaluated, result.filled) == (ALARM, 3, 3, 2)
    assert result.reason.endswith("2 missing datapoints treated as breaching.")
    assert [v for _, v in result.datapoints] == [9.0]


def test_no_data_with_missing_is_insufficient_data_in_aws_words() -> None:
    result = evaluate_alarm(rule(1, 1), {}, NOW, OK)
    assert (result.state, result.reason) == (INSUFFICIENT_DATA, "Insufficient Data: 1 datapoint was unknown.")


def test_a_metric_that_stops_is_alarmed_on_only_once_its_points_leave_the_range() -> None:
    """The docs warn that "CloudWatch alarms might repeatedly re-evaluate the last set of data points for a
    period of time after the metric has stopped flowing" [EVAL]: with `breaching`, 3 good points stay in a
    range of 5, so the alarm fires N + 2 periods after the last point."""
    stopped = series("0 0 0")  # the last point is in the 09:59 period
    states = [evaluate_alarm(rule(3, 3, "breaching"), stopped, NOW + timedelta(minutes=k), OK).state for k in range(6)]
    assert states == [OK, OK, OK, OK, OK, ALARM]


# ---- The documented example tables ----------------------------------------------------------------
# "How alarm state is evaluated when data is missing", CloudWatch User Guide (awsdocs 2023 archive,
# commit cc40332, doc_source/AlarmThatSendsEmail.md; now alarms-and-missing-data.html): "In the first
# table, Datapoints to Alarm and Evaluation Periods are both 3 ... 5 is the evaluation range for the
# alarm ... shown with the most recent data point on the right. 0 is a non-breaching data point, X is a
# breaching data point, and - is a missing data point." The columns are MISSING | IGNORE | BREACHING |
# NOT BREACHING; RETAIN is "Retain current state".
RETAIN = "retain"
FIRST_TABLE = [  # | Data points | # of data points that must be filled | MISSING | IGNORE | BREACHING | NOT BREACHING |
    ("0 - X - X", (OK, OK, OK, OK)),  # | 0 | OK | OK | OK | OK |
    ("0 - - - -", (OK, OK, OK, OK)),  # | 2 | OK | OK | OK | OK |
    # | 3 | INSUFFICIENT_DATA | Retain current state | ALARM | OK |
    ("- - - - -", (INSUFFICIENT_DATA, RETAIN, ALARM, OK)),
    ("0 X X - X", (ALARM, ALARM, ALARM, ALARM)),  # | 0 | ALARM | ALARM | ALARM | ALARM |
    ("- - X - -", (ALARM, RETAIN, ALARM, OK)),  # | 2 | ALARM | Retain current state | ALARM | OK |
]
# "In the next table, the Period is again set to 5 minutes, and Datapoints to Alarm is only 2 while
# Evaluation Periods is 3. This is a 2 out of 3, M out of N alarm. The evaluation range is 5."
SECOND_TABLE = [  # | Data points | # of missing data points | MISSING | IGNORE | BREACHING | NOT BREACHING |
    ("0 - X - X", (ALARM, ALARM, ALARM, ALARM)),  # | 0 | ALARM | ALARM | ALARM | ALARM |
    ("0 0 X 0 X", (ALARM, ALARM, ALARM, ALARM)),  # | 0 | ALARM | ALARM | ALARM | ALARM |
    ("0 - X - -", (OK, OK, ALARM, OK)),  # | 1 | OK | OK | ALARM | OK |
    ("- - - - 0", (OK, OK, ALARM, OK)),  # | 2 | OK | OK | ALARM | OK |
    ("- - - X -", (ALARM, RETAIN, ALARM, OK)),  # | 2 | ALARM | Retain current state | ALARM | OK |
]
# An older version of the same page (awsdocs/amazon-cloudwatch-user-guide commit 05fd32f6) had two
# more rows for M = N = 3, since replaced by the premature-alarm section:
#   | - - - - X | 4 | Insufficient data | Retain current state | ALARM | OK |
#   | X - - - - | 4 | ALARM | Retain current state | ALARM | OK |
# "the alarm goes to ALARM state even if missing data is treated as missing, because the oldest
# evaluated data point is breaching and there aren't any non-breaching data points". The current page
# agrees: it "does not go immediately into ALARM state when the data is either - - - - X or - - - X -
# and Datapoints to Alarm is 3".
OLDER_ROWS = [
    ("- - - - X", (INSUFFICIENT_DATA, RETAIN, ALARM, OK)),
    ("X - - - -", (ALARM, RETAIN, ALARM, OK)),
]
TREATMENTS = ("missing", "ignore", "breaching", "notBreaching")


def table_cases(m: int, rows: Sequence[tuple[str, Sequence[str]]], table: str) -> list[Any]:
    return [
        pytest.param(m, pattern, treat, expected, id=f"{table}[{pattern}]-{treat}")
        for pattern, states in rows
        for treat, expected in zip(TREATMENTS, states, strict=True)
    ]


@pytest.mark.parametrize(
    ("m", "pattern", "treat", "expected"),
    table_cases(3, FIRST_TABLE, "3of3")
    + table_cases(2, SECOND_TABLE, "2of3")
    + table_cases(3, OLDER_ROWS, "3of3-older-page"),
)
@pytest.mark.parametrize("current", STATES)
def test_the_documented_example_tables(m: int, pattern: str, treat: str, expected: str, current: str) -> None:
    result = evaluate_alarm(rule(m, 3, treat), series(pattern), NOW, current)
    assert result.state == (current if expected == RETAIN else expected)


def test_a_breaching_point_younger_than_m_is_not_yet_an_alarm() -> None:
    """The page says "the alarm does not go immediately into ALARM state when the data is either - - - - X
    or - - - X - and Datapoints to Alarm is 3" but not which state it takes; the older table's row for
    - - - - X says INSUFFICIENT_DATA, and - - - X - is taken to be the same."""
    for pattern in ("- - - - X", "- - - X -"):
        assert evaluate_alarm(rule(3, 3), series(pattern), NOW, OK).state == INSUFFICIENT_DATA
    assert evaluate_alarm(rule(3, 3), series("- - X - -"), NOW, OK).state == ALARM


def test_the_evaluation_range_is_wider_than_n() -> None:
    """CloudWatch "attempts to retrieve a higher number of data points than the number specified as
    Evaluation Periods", and "5 is the evaluation range" for 3: a sixth-oldest point is out."""
    assert len(period_starts(rule(3, 3), NOW)) == 5
    assert evaluate_alarm(rule(1, 3), series("X - - - - -"), NOW, OK).state == INSUFFICIENT_DATA
    assert evaluate_alarm(rule(1, 3), series("X - - - -"), NOW, OK).state == ALARM


# ---- Alignment ----------------------------------------------------------------------------------


def test_a_point_in_the_current_incomplete_period_is_not_used() -> None:
    current_period = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)  # NOW is 10:00:30: this period is half over
    result = evaluate_alarm(rule(1, 1), {current_period: 9.0}, NOW, OK)
    assert result.state == INSUFFICIENT_DATA
    done = evaluate_alarm(rule(1, 1), {current_period: 9.0}, current_period + timedelta(seconds=PERIOD), OK)
    assert done.state == ALARM  # at 10:01:00 exactly, the 10:00 period is complete


@pytest.mark.parametrize(
    ("period", "now", "newest"),
    [
        (60, datetime(2026, 3, 2, 10, 0, 30, tzinfo=UTC), datetime(2026, 3, 2, 9, 59, tzinfo=UTC)),
        (300, datetime(2026, 3, 2, 10, 7, 0, tzinfo=UTC), datetime(2026, 3, 2, 10, 0, tzinfo=UTC)),
        (300, datetime(2026, 3, 2, 10, 5, 0, tzinfo=UTC), datetime(2026, 3, 2, 10, 0, tzinfo=UTC)),
        (10, datetime(2026, 3, 2, 10, 0, 25, tzinfo=UTC), datetime(2026, 3, 2, 10, 0, 10, tzinfo=UTC)),
    ],
)
def test_periods_are_aligned_to_the_period_boundary(period: int, now: datetime, newest: datetime) -> None:
    starts = period_starts(AlarmRule(5, "GreaterThanThreshold", period, 1, 1), now)
    assert starts[0] == newest
    assert starts[1] == newest - timedelta(seconds=period)


@pytest.mark.parametrize(
    "bad",
    [
        lambda: evaluate_alarm(rule(), {datetime(2026, 3, 2, 9, 59, 13, tzinfo=UTC): 1.0}, NOW, OK),
        lambda: evaluate_alarm(rule(), {}, datetime(2026, 3, 2, 10, 0), OK),
        lambda: evaluate_alarm(rule(), {}, NOW, "PENDING"),
        lambda: AlarmRule(5, "Bigger", 60, 1, 1),
        lambda: AlarmRule(5, "GreaterThanThreshold", 45, 1, 1),
        lambda: AlarmRule(5, "GreaterThanThreshold", 60, 2, 3),
        lambda: AlarmRule(5, "GreaterThanThreshold", 60, 1, 1, "drop"),
    ],
    ids=["off-boundary point", "naive now", "unknown state", "operator", "period", "m > n", "treatment"],
)
def test_bad_input_is_refused(bad: Callable[[], object]) -> None:
    with pytest.raises(ValueError):
        bad()


# ---- Reasons in AWS's words ---------------------------------------------------------------------


def test_reasons_read_like_the_aws_samples(fixture: Callable[[str], Any]) -> None:
    sample = fixture("events/cloudwatch_alarm_state_change.single_metric.awsdocs.json")["detail"]
    cpu = AlarmRule(50.0, "GreaterThanThreshold", 60, 1, 1)
    high = evaluate_alarm(cpu, {datetime(2019, 10, 2, 16, 59, tzinfo=UTC): 99.50160229693434},
                          datetime(2019, 10, 2, 17, 0, 40, tzinfo=UTC), OK)  # fmt: skip
    low = evaluate_alarm(cpu, {datetime(2019, 10, 1, 13, 46, tzinfo=UTC): 0.0666851903306472},
                         datetime(2019, 10, 1, 13, 47, 40, tzinfo=UTC), ALARM)  # fmt: skip
    assert high.reason == sample["state"]["reason"]
    assert low.reason == sample["previousState"]["reason"]


def test_a_reason_lists_the_datapoints_newest_first() -> None:
    result = evaluate_alarm(rule(3, 3, comparison="GreaterThanOrEqualToThreshold"), series("X X X"), NOW, OK)
    assert result.reason.startswith("Threshold Crossed: 3 out of the last 3 datapoints [9.0 (02/03/26 09:59:00), ")
    assert "were greater than or equal to the threshold (5.0) (minimum 3 datapoints for OK -> ALARM" in result.reason


# ---- Composite alarms ---------------------------------------------------------------------------
STATES_NOW = {"a": ALARM, "b": OK, "c": INSUFFICIENT_DATA, "d": ALARM, "cpu high": ALARM}


@pytest.mark.parametrize(
    ("alarm_rule", "state"),
    [
        ("ALARM(a)", ALARM),
        ("ALARM(b)", OK),
        ("OK(b)", ALARM),
        ("INSUFFICIENT_DATA(c)", ALARM),
        ("TRUE", ALARM),
        ("FALSE", OK),
        ("ALARM(a) AND ALARM(d)", ALARM),
        ("ALARM(a) AND ALARM(b)", OK),
        ("ALARM(b) OR ALARM(a)", ALARM),
        ("ALARM(b) OR OK(a)", OK),
        ("NOT ALARM(b)", ALARM),
        ("NOT NOT ALARM(b)", OK),
        ("ALARM(a) AND NOT ALARM(b)", ALARM),  # the docs' "AND NOT ALARM(DeploymentInProgress)" example
        ("NOT ALARM(a) AND ALARM(b)", OK),  # NOT binds tighter than AND
        ("ALARM(a) OR ALARM(b) AND ALARM(c)", ALARM),  # AND binds tighter than OR
        ("(ALARM(a) OR ALARM(b)) AND ALARM(c)", OK),
        ("NOT (ALARM(a) AND ALARM(d))", OK),
        ('(ALARM("a") OR\n ALARM("b")) AND\n OK("b")', ALARM),  # the console's multi-line example form
        ('ALARM("cpu high")', ALARM),
        ("ALARM( cpu high )", ALARM),
        ('ALARM("a") AND ALARM(d)', ALARM),
        ("ALARM(arn:aws:cloudwatch:us-east-1:123456789012:alarm:b)", OK),
        ("ALARM(arn:aws:cloudwatch:us-east-1:123456789012:alarm:a)", ALARM),
        ("((((TRUE))))", ALARM),
    ],
)
def test_composite_rules(alarm_rule: str, state: str) -> None:
    assert evaluate_composite(alarm_rule, STATES_NOW) == state


def test_the_aws_sample_rule(fixture: Callable[[str], Any]) -> None:
    sample = fixture("events/cloudwatch_alarm_state_change.composite.awsdocs.json")["detail"]
    rule_text = sample["configuration"]["alarmRule"]  # ALARM(ServerCpuTooHigh) OR ALARM(TotalNetworkTrafficTooHigh)
    assert parse_alarm_rule(rule_text)[1] == ("ServerCpuTooHigh", "TotalNetworkTrafficTooHigh")
    assert evaluate_composite(rule_text, {"ServerCpuTooHigh": ALARM, "TotalNetworkTrafficTooHigh": OK}) == ALARM
    assert evaluate_composite(rule_text, {"ServerCpuTooHigh": OK, "TotalNetworkTrafficTooHigh": OK}) == OK


def test_children_are_listed_once_in_order() -> None:
    assert parse_alarm_rule('ALARM(x) OR (OK("y") AND NOT ALARM(x))')[1] == ("x", "y")


def test_an_unknown_alarm_is_an_error_naming_it() -> None:
    with pytest.raises(ValueError, match=r"alarms \[ghost\] in the alarm rule do not exist"):
        evaluate_composite("ALARM(a) OR ALARM(ghost)", STATES_NOW)


@pytest.mark.parametrize(
    ("alarm_rule", "problem"),
    [
        ("", "unexpected end of the rule at char 0"),
        ("()", "Unsupported token ')' at char 1"),  # AWS: "Error in AlarmRule [Unsupported token ')' at char 1]"
        ("ALARM(a", "unexpected end of the rule at char 7"),
        ("ALARM(a) XOR ALARM(b)", "Unsupported token 'XOR' at char 9"),
        ("alarm(a)", "Unsupported token 'alarm' at char 0"),  # the functions and operators are upper case
        ("ALARM(a) and ALARM(b)", "Unsupported token 'and' at char 9"),
        ('ALARM("a)', "unterminated quoted alarm name at char 6"),
        ("ALARM()", "empty alarm name at char 6"),
        ('ALARM("")', "empty alarm name at char 6"),
        ("ALARM(a) AND", "unexpected end of the rule at char 12"),
        ("TRUE FALSE", "Unsupported token 'FALSE' at char 5"),
        ("ALARM a", "Unsupported token 'a' at char 6"),
        ('ALARM("a" b)', "Unsupported token 'b' at char 10"),
        ("ALARM(a(b))", "Unsupported token '(' at char 7"),
        ('ALARM(a"b)', "Unsupported token '\"' at char 7"),
        ("ALARMS(a)", "Unsupported token 'ALARMS' at char 0"),
        ("NOT", "unexpected end of the rule at char 3"),
        ("(ALARM(a)", "unexpected end of the rule at char 9"),
        ("ALARM(a))", "Unsupported token ')' at char 8"),
    ],
)
def test_bad_syntax_is_refused_naming_the_problem(alarm_rule: str, problem: str) -> None:
    with pytest.raises(ValueError, match=f"^Error in AlarmRule \\[{re.escape(problem)}\\]$"):
        evaluate_composite(alarm_rule, STATES_NOW)
