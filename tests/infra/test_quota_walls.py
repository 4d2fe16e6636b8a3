"""Quota walls: the check schedule, the optional CloudTrail rule, their targets, queue and alarms."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Match

from infra.event_patterns import failed_training_job_launch_pattern
from tests.infra.template_queries import (
    CONFIGURED_CONTEXT,
    DENY_INSECURE_TRANSPORT,
    FAILED_LAUNCHES_HANDLER,
    JOB_EVENTS_HANDLER,
    QUOTA_WATCH_HANDLER,
    dead_letter_queue_of,
    function_logical_id,
    only_logical_id,
    resources_of_type,
    rule_targeting,
)

pytestmark = pytest.mark.slow

QUOTA_HANDLERS = [QUOTA_WATCH_HANDLER, FAILED_LAUNCHES_HANDLER]


def _function(template: dict[str, Any], handler: str) -> str:
    return function_logical_id(template, handler)


def _rule(template: dict[str, Any], handler: str) -> dict[str, Any]:
    return dict(template["Resources"][rule_targeting(template, _function(template, handler))]["Properties"])


def _quota_dlq(template: dict[str, Any]) -> str:
    return dead_letter_queue_of(template, _function(template, QUOTA_WATCH_HANDLER))


def _handlers(template: dict[str, Any]) -> set[str]:
    return {r["Properties"]["Handler"] for r in resources_of_type(template, "AWS::Lambda::Function").values()}


@pytest.mark.parametrize(
    ("stack", "minutes"), [("template", CONFIGURED_CONTEXT["quota_check_minutes"]), ("defaults_template", 15)]
)
def test_quota_watch_runs_on_the_configured_schedule(synthesized: Any, stack: str, minutes: int) -> None:
    template = getattr(synthesized, stack)
    rule = _rule(template, QUOTA_WATCH_HANDLER)
    assert rule["ScheduleExpression"] == f"rate({minutes} minutes)"
    assert rule["State"] == "ENABLED"
    assert "EventPattern" not in rule


def test_schedule_target_retries_briefly_then_uses_the_dlq(synthesized: Any) -> None:
    template = synthesized.template
    (target,) = _rule(template, QUOTA_WATCH_HANDLER)["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [_function(template, QUOTA_WATCH_HANDLER), "Arn"]}
    # The next check comes anyway: a delivery older than one interval is not worth retrying.
    assert target["RetryPolicy"] == {
        "MaximumRetryAttempts": 2,
        "MaximumEventAgeInSeconds": CONFIGURED_CONTEXT["quota_check_minutes"] * 60,
    }
    assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": [_quota_dlq(template), "Arn"]}}


def test_failed_launch_rule_exists_only_when_watch_failed_launches_is_on(synthesized: Any) -> None:
    assert CONFIGURED_CONTEXT["watch_failed_launches"] is True
    assert FAILED_LAUNCHES_HANDLER in _handlers(synthesized.template)
    # Defaults: no trail is assumed, so neither the rule nor its function exists.
    assert FAILED_LAUNCHES_HANDLER not in _handlers(synthesized.defaults_template)
    patterns = [
        r["Properties"].get("EventPattern")
        for r in resources_of_type(synthesized.defaults_template, "AWS::Events::Rule").values()
    ]
    assert failed_training_job_launch_pattern() not in patterns
    # The job-state rule, the quota-check schedule, the stall-alarm rule and the probe schedule.
    assert len(patterns) == 4


def test_failed_launch_rule_matches_exactly_the_shared_pattern(synthesized: Any) -> None:
    rule = _rule(synthesized.template, FAILED_LAUNCHES_HANDLER)
    assert rule["EventPattern"] == failed_training_job_launch_pattern()
    assert rule["State"] == "ENABLED"


def test_failed_launch_rule_target_has_retries_and_the_dlq(synthesized: Any, template: Any) -> None:
    synthesized_template = synthesized.template
    function = _function(synthesized_template, FAILED_LAUNCHES_HANDLER)
    (target,) = _rule(synthesized_template, FAILED_LAUNCHES_HANDLER)["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [function, "Arn"]}
    assert target["RetryPolicy"] == {"MaximumEventAgeInSeconds": 7200, "MaximumRetryAttempts": 8}
    assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": [_quota_dlq(synthesized_template), "Arn"]}}
    template.has_resource_properties(
        "AWS::Lambda::Permission",
        {
            "Action": "lambda:InvokeFunction",
            "FunctionName": {"Fn::GetAtt": [function, "Arn"]},
            "Principal": "events.amazonaws.com",
            "SourceArn": {"Fn::GetAtt": [rule_targeting(synthesized_template, function), "Arn"]},
        },
    )


@pytest.mark.parametrize("handler", QUOTA_HANDLERS)
def test_quota_functions_reach_their_own_dlq_after_two_async_retries(
    synthesized: Any, template: Any, handler: str
) -> None:
    synthesized_template = synthesized.template
    dlq = _quota_dlq(synthesized_template)
    assert dlq != dead_letter_queue_of(synthesized_template, _function(synthesized_template, JOB_EVENTS_HANDLER))
    template.has_resource_properties(
        "AWS::Lambda::EventInvokeConfig",
        {
            "FunctionName": {"Ref": _function(synthesized_template, handler)},
            "MaximumRetryAttempts": 2,
            "DestinationConfig": {"OnFailure": {"Destination": {"Fn::GetAtt": [dlq, "Arn"]}}},
        },
    )


def test_quota_dlq_is_encrypted_ssl_only_and_open_to_both_rules(synthesized: Any, template: Any) -> None:
    synthesized_template = synthesized.template
    dlq = _quota_dlq(synthesized_template)
    properties = synthesized_template["Resources"][dlq]["Properties"]
    assert (properties["SqsManagedSseEnabled"], properties["MessageRetentionPeriod"]) == (True, 14 * 24 * 3600)
    rules = [
        {"Fn::GetAtt": [rule_targeting(synthesized_template, _function(synthesized_template, h)), "Arn"]}
        for h in QUOTA_HANDLERS
    ]
    template.has_resource_properties(
        "AWS::SQS::QueuePolicy",
        {
            "Queues": [{"Ref": dlq}],
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        DENY_INSECURE_TRANSPORT,
                        *[
                            Match.object_like(
                                {
                                    "Effect": "Allow",
                                    "Action": "sqs:SendMessage",
                                    "Principal": {"Service": "events.amazonaws.com"},
                                    "Condition": {"ArnEquals": {"aws:SourceArn": rule}},
                                }
                            )
                            for rule in rules
                        ],
                    ]
                )
            },
        },
    )


def test_alarm_when_anything_waits_in_the_quota_dlq(synthesized: Any, template: Any) -> None:
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "AWS/SQS",
            "MetricName": "ApproximateNumberOfMessagesVisible",
            "Dimensions": [
                {"Name": "QueueName", "Value": {"Fn::GetAtt": [_quota_dlq(synthesized.template), "QueueName"]}}
            ],
            "Statistic": "Maximum",
            "ComparisonOperator": "GreaterThanThreshold",
            "Threshold": 0,
            "AlarmActions": [
                {"Ref": only_logical_id(synthesized.template, "AWS::SNS::Topic", DisplayName="trainguard")}
            ],
        },
    )


@pytest.mark.parametrize("handler", QUOTA_HANDLERS)
def test_alarm_on_each_quota_functions_errors(synthesized: Any, template: Any, handler: str) -> None:
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "AWS/Lambda",
            "MetricName": "Errors",
            "Dimensions": [{"Name": "FunctionName", "Value": {"Ref": _function(synthesized.template, handler)}}],
            "Statistic": "Sum",
            "ComparisonOperator": "GreaterThanThreshold",
            "Threshold": 0,
            "TreatMissingData": "notBreaching",
            "AlarmActions": [
                {"Ref": only_logical_id(synthesized.template, "AWS::SNS::Topic", DisplayName="trainguard")}
            ],
        },
    )
