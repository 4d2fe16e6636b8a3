"""Stall detection: the alarm rule, the probe schedule, the prober's health alarm, the log subscription.
(Their targets, queue and alarms, wired alike in every part: test_rule_targets_and_dead_letter_queues.py;
their IAM: test_iam_policies.py; the patterns in moto: test_event_pattern_in_moto.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from infra.event_patterns import stall_alarm_pattern
from tests.infra.template_queries import (
    LOG_ACTIVITY_HANDLER,
    STALL_ALARMS_HANDLER,
    STALL_PROBER_HANDLER,
    function_logical_id,
    render,
    resources_of_type,
    rule_targeting,
    topic_logical_id,
)

pytestmark = pytest.mark.slow

TRAINING_LOG_GROUP = "/aws/sagemaker/TrainingJobs"
TRAINING_LOG_GROUP_ARN = (
    "arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:/aws/sagemaker/TrainingJobs:*"
)


def _function(template: dict[str, Any], handler: str) -> str:
    return function_logical_id(template, handler)


def _rule(template: dict[str, Any], handler: str) -> dict[str, Any]:
    return dict(template["Resources"][rule_targeting(template, _function(template, handler))]["Properties"])


def _subscription_filters(template: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in resources_of_type(template, "AWS::Logs::SubscriptionFilter").values()]


def _logs_permissions(template: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        r["Properties"]
        for r in resources_of_type(template, "AWS::Lambda::Permission").values()
        if r["Properties"]["Principal"] == "logs.amazonaws.com"
    ]


@pytest.mark.parametrize("stack", ["template", "defaults_template"])
def test_stall_alarm_rule_matches_exactly_the_shared_pattern(synthesized: Any, stack: str) -> None:
    rule = _rule(getattr(synthesized, stack), STALL_ALARMS_HANDLER)
    assert rule["EventPattern"] == stall_alarm_pattern()
    assert rule["EventPattern"]["detail"] == {
        "alarmName": [{"prefix": "trainguard-stall-"}],
        "state": {"value": ["ALARM"]},
    }
    assert rule["State"] == "ENABLED"


@pytest.mark.parametrize("stack", ["template", "defaults_template"])
def test_the_prober_runs_every_minute(synthesized: Any, stack: str) -> None:
    rule = _rule(getattr(synthesized, stack), STALL_PROBER_HANDLER)
    assert rule["ScheduleExpression"] == "rate(1 minute)"
    assert rule["State"] == "ENABLED"
    assert "EventPattern" not in rule


def _prober_health_alarm(template: dict[str, Any]) -> dict[str, Any]:
    (alarm,) = [
        r["Properties"]
        for r in resources_of_type(template, "AWS::CloudWatch::Alarm").values()
        if r["Properties"].get("MetricName") == "ProberCycles"
    ]
    return dict(alarm)


@pytest.mark.parametrize("stack", ["template", "defaults_template"])
def test_prober_health_alarm_fires_when_the_heartbeat_stops_and_tells_the_topic(synthesized: Any, stack: str) -> None:
    template = getattr(synthesized, stack)
    alarm = _prober_health_alarm(template)
    assert {k: alarm[k] for k in alarm if k != "AlarmDescription"} == {
        "Namespace": "TrainGuard",
        "MetricName": "ProberCycles",
        "Dimensions": [{"Name": "service", "Value": "trainguard"}],
        "Statistic": "Sum",
        "Period": 60,
        "ComparisonOperator": "LessThanThreshold",
        "Threshold": 1,
        "EvaluationPeriods": 5,
        "DatapointsToAlarm": 5,
        # A prober that stopped publishes nothing: missing data is what must alarm.
        "TreatMissingData": "breaching",
        "AlarmActions": [{"Ref": topic_logical_id(template)}],
    }


def test_the_health_alarm_watches_the_metric_the_prober_emits(
    synthesized: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run the prober's handler with the functions' Powertools environment and read its EMF: the alarm's
    namespace, metric and dimensions must be exactly those, or it would watch a metric nobody publishes
    (and, missing data being breaching, alarm for ever)."""
    from aws_lambda_powertools import Metrics

    from infra.guard_function import POWERTOOLS_ENVIRONMENT
    from tests.fakes import fake_ports
    from trainguard.handlers import stall_prober

    for name, value in POWERTOOLS_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    metrics = Metrics()  # built from the environment, as the handler's is in Lambda
    monkeypatch.setattr(stall_prober, "metrics", metrics)
    metrics.clear_metrics()  # Powertools shares one metric set between instances: start from none
    try:
        stall_prober.handle({}, ports=fake_ports())
        emf = metrics.serialize_metric_set()
    finally:
        metrics.clear_metrics()
    (directive,) = emf["_aws"]["CloudWatchMetrics"]
    alarm = _prober_health_alarm(synthesized.template)
    assert alarm["MetricName"] in {m["Name"] for m in directive["Metrics"]}
    assert directive["Namespace"] == alarm["Namespace"]
    assert directive["Dimensions"] == [[d["Name"] for d in alarm["Dimensions"]]]
    assert {d["Name"]: emf[d["Name"]] for d in alarm["Dimensions"]} == {
        d["Name"]: d["Value"] for d in alarm["Dimensions"]
    }


def test_log_subscription_exists_only_when_the_setting_is_on(synthesized: Any) -> None:
    # The configured stack turns it off (a forwarder holds the slots); the defaults turn it on.
    assert _subscription_filters(synthesized.template) == []
    assert _logs_permissions(synthesized.template) == []
    defaults = synthesized.defaults_template
    (subscription,) = _subscription_filters(defaults)
    assert subscription["Properties"] == {
        "LogGroupName": TRAINING_LOG_GROUP,
        "FilterPattern": "",  # every event: the function keeps each watched job's newest line
        "DestinationArn": {"Fn::GetAtt": [_function(defaults, LOG_ACTIVITY_HANDLER), "Arn"]},
    }
    # The function exists either way: with the setting off, something else may feed it (an account-level
    # subscription filter policy, for example).
    _function(synthesized.template, LOG_ACTIVITY_HANDLER)


def test_logs_may_invoke_the_log_activity_function_only_from_the_training_log_group(synthesized: Any) -> None:
    defaults = synthesized.defaults_template
    (permission,) = _logs_permissions(defaults)
    assert permission["Action"] == "lambda:InvokeFunction"
    assert permission["FunctionName"] == {"Fn::GetAtt": [_function(defaults, LOG_ACTIVITY_HANDLER), "Arn"]}
    assert render(permission["SourceArn"]) == TRAINING_LOG_GROUP_ARN
    # CloudWatch Logs checks that it may invoke the destination when the filter is put: permission first.
    (subscription_id,) = resources_of_type(defaults, "AWS::Logs::SubscriptionFilter")
    (permission_id,) = [
        lid
        for lid, r in resources_of_type(defaults, "AWS::Lambda::Permission").items()
        if r["Properties"]["Principal"] == "logs.amazonaws.com"
    ]
    assert permission_id in defaults["Resources"][subscription_id].get("DependsOn", [])


@pytest.mark.parametrize("stack", ["template", "defaults_template"])
def test_the_training_log_group_is_sagemakers_and_never_created_here(synthesized: Any, stack: str) -> None:
    groups = resources_of_type(getattr(synthesized, stack), "AWS::Logs::LogGroup").values()
    assert TRAINING_LOG_GROUP not in {g["Properties"].get("LogGroupName") for g in groups}


# Issue 24: a flood of log lines (forged ones among them) must not take the concurrency the acting functions need.
# Lambda: an account's concurrency is 1,000 by default, and reserving must leave 100 of it unreserved ("Configuring
# reserved concurrency for a function", Lambda Developer Guide).
DEFAULT_ACCOUNT_CONCURRENCY, MINIMUM_UNRESERVED = 1000, 100


@pytest.mark.parametrize("stack", ["template", "defaults_template"])
def test_the_log_path_is_capped_so_the_acting_functions_keep_the_accounts_concurrency(
    synthesized: Any, stack: str
) -> None:
    from infra.settings import Settings

    template = getattr(synthesized, stack)
    functions = resources_of_type(template, "AWS::Lambda::Function")
    reserved = {
        r["Properties"]["Handler"]: r["Properties"]["ReservedConcurrentExecutions"]
        for r in functions.values()
        if "ReservedConcurrentExecutions" in r["Properties"]
    }
    # Only the log path is capped: a cap on an acting function would throttle it in a burst of job events.
    assert reserved == {LOG_ACTIVITY_HANDLER: Settings().log_activity_concurrency}
    acting = len(functions) - 1
    left = DEFAULT_ACCOUNT_CONCURRENCY - sum(reserved.values())
    assert left >= MINIMUM_UNRESERVED and left - MINIMUM_UNRESERVED >= 100 * acting  # room to spare for each


def test_the_log_activity_cap_is_a_setting_that_zero_turns_off_and_that_leaves_the_unreserved_minimum() -> None:
    from aws_cdk import App
    from aws_cdk.assertions import Match, Template

    from infra.settings import Settings, SettingsError
    from infra.stack import TrainGuardStack

    template = Template.from_stack(TrainGuardStack(App(), "Uncapped", settings=Settings(log_activity_concurrency=0)))
    template.resource_properties_count_is(
        "AWS::Lambda::Function", {"ReservedConcurrentExecutions": Match.any_value()}, 0
    )
    for refused in (-1, DEFAULT_ACCOUNT_CONCURRENCY - MINIMUM_UNRESERVED + 1):
        with pytest.raises(SettingsError, match="log_activity_concurrency"):
            Settings(log_activity_concurrency=refused)
