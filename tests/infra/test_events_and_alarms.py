"""Job events: the rule, its target, the dead-letter queue, the functions' async settings and the alarms.
(The quota walls' schedule, rule, queue and alarms: test_quota_walls.py; stall detection's:
test_stall_detection.py.)"""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Match

from infra.event_patterns import training_job_state_pattern
from tests.infra.template_queries import (
    ALL_HANDLERS,
    DENY_INSECURE_TRANSPORT,
    JOB_EVENTS_HANDLER,
    RETRY_LAUNCHER_HANDLER,
    dead_letter_queue_of,
    function_logical_id,
    only_logical_id,
    rule_targeting,
)

pytestmark = pytest.mark.slow


def _keys_anywhere(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys_anywhere(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys_anywhere(v)}
    return set()


def _dlq(template: dict[str, Any]) -> str:
    return dead_letter_queue_of(template, function_logical_id(template, JOB_EVENTS_HANDLER))


def _rule(template: dict[str, Any]) -> dict[str, Any]:
    rule_id = rule_targeting(template, function_logical_id(template, JOB_EVENTS_HANDLER))
    return dict(template["Resources"][rule_id])


def _topic(template: dict[str, Any]) -> str:
    return only_logical_id(template, "AWS::SNS::Topic", DisplayName="trainguard")


def test_rule_matches_exactly_the_shared_pattern_and_never_tags(synthesized: Any, template: Any) -> None:
    template.has_resource_properties(
        "AWS::Events::Rule", {"EventPattern": Match.exact(training_job_state_pattern()), "State": "ENABLED"}
    )
    rule = _rule(synthesized.template)
    assert rule["Properties"]["EventPattern"] == training_job_state_pattern()
    assert rule["Properties"]["EventPattern"]["detail"]["TrainingJobStatus"] == [
        "InProgress",
        "Stopping",
        "Completed",
        "Failed",
        "Stopped",
    ]
    assert "Tags" not in _keys_anywhere(rule["Properties"]["EventPattern"])


def test_rule_target_is_job_events_function_with_retries_and_the_dlq(synthesized: Any, template: Any) -> None:
    job_events = function_logical_id(synthesized.template, JOB_EVENTS_HANDLER)
    template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "Targets": [
                {
                    "Arn": {"Fn::GetAtt": [job_events, "Arn"]},
                    "Id": Match.any_value(),
                    "RetryPolicy": {"MaximumEventAgeInSeconds": 7200, "MaximumRetryAttempts": 8},
                    "DeadLetterConfig": {"Arn": {"Fn::GetAtt": [_dlq(synthesized.template), "Arn"]}},
                }
            ]
        },
    )
    # EventBridge may invoke the function only from this rule.
    rule = rule_targeting(synthesized.template, job_events)
    template.has_resource_properties(
        "AWS::Lambda::Permission",
        {
            "Action": "lambda:InvokeFunction",
            "FunctionName": {"Fn::GetAtt": [job_events, "Arn"]},
            "Principal": "events.amazonaws.com",
            "SourceArn": {"Fn::GetAtt": [rule, "Arn"]},
        },
    )


def test_dead_letter_queue_is_encrypted_ssl_only_and_keeps_messages_14_days(synthesized: Any, template: Any) -> None:
    dlq = _dlq(synthesized.template)
    properties = synthesized.template["Resources"][dlq]["Properties"]
    assert (properties["SqsManagedSseEnabled"], properties["MessageRetentionPeriod"]) == (True, 14 * 24 * 3600)
    template.has_resource_properties(
        "AWS::SQS::QueuePolicy",
        {
            "Queues": [{"Ref": dlq}],
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        DENY_INSECURE_TRANSPORT,
                        Match.object_like(
                            {
                                "Effect": "Allow",
                                "Action": "sqs:SendMessage",
                                "Principal": {"Service": "events.amazonaws.com"},
                                "Condition": {"ArnEquals": {"aws:SourceArn": Match.any_value()}},
                            }
                        ),
                    ]
                )
            },
        },
    )


@pytest.mark.parametrize("handler", [JOB_EVENTS_HANDLER, RETRY_LAUNCHER_HANDLER])
def test_handler_exceptions_reach_the_dlq_after_two_async_retries(
    synthesized: Any, template: Any, handler: str
) -> None:
    template.has_resource_properties(
        "AWS::Lambda::EventInvokeConfig",
        {
            "FunctionName": {"Ref": function_logical_id(synthesized.template, handler)},
            "MaximumRetryAttempts": 2,
            "DestinationConfig": {"OnFailure": {"Destination": {"Fn::GetAtt": [_dlq(synthesized.template), "Arn"]}}},
        },
    )


def test_alarm_when_anything_waits_in_the_dlq(synthesized: Any, template: Any) -> None:
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "AWS/SQS",
            "MetricName": "ApproximateNumberOfMessagesVisible",
            "Dimensions": [{"Name": "QueueName", "Value": {"Fn::GetAtt": [_dlq(synthesized.template), "QueueName"]}}],
            "Statistic": "Maximum",
            "ComparisonOperator": "GreaterThanThreshold",
            "Threshold": 0,
            "TreatMissingData": "notBreaching",
            "AlarmActions": [{"Ref": _topic(synthesized.template)}],
        },
    )


@pytest.mark.parametrize("handler", [JOB_EVENTS_HANDLER, RETRY_LAUNCHER_HANDLER])
def test_alarm_on_each_functions_errors(synthesized: Any, template: Any, handler: str) -> None:
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "AWS/Lambda",
            "MetricName": "Errors",
            "Dimensions": [
                {"Name": "FunctionName", "Value": {"Ref": function_logical_id(synthesized.template, handler)}}
            ],
            "Statistic": "Sum",
            "ComparisonOperator": "GreaterThanThreshold",
            "Threshold": 0,
            "AlarmActions": [{"Ref": _topic(synthesized.template)}],
        },
    )


@pytest.mark.parametrize("handler", ALL_HANDLERS)
def test_functions_run_python_3_14_on_arm64_with_their_own_log_group(
    synthesized: Any, template: Any, handler: str
) -> None:
    function = synthesized.template["Resources"][function_logical_id(synthesized.template, handler)]
    props = function["Properties"]
    assert (props["Runtime"], props["Architectures"]) == ("python3.14", ["arm64"])
    assert (props["MemorySize"], props["Timeout"]) == (256, 60)
    log_group = synthesized.template["Resources"][props["LoggingConfig"]["LogGroup"]["Ref"]]
    assert log_group["Type"] == "AWS::Logs::LogGroup"
    assert log_group["Properties"]["RetentionInDays"] > 0
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": handler,
            "Environment": {
                "Variables": Match.object_like(
                    {"POWERTOOLS_SERVICE_NAME": "trainguard", "POWERTOOLS_METRICS_NAMESPACE": "TrainGuard"}
                )
            },
        },
    )


def test_retry_schedules_have_their_own_group(template: Any) -> None:
    template.has_resource("AWS::Scheduler::ScheduleGroup", {"Properties": {"Name": "trainguard"}})
