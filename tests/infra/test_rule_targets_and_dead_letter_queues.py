"""What the stack's three parts (job events, quota walls, stall detection) wire alike: the rules and
schedules that invoke their functions, each part's dead-letter queue, and the alarms on both. (What each
part does on its own: test_events_and_alarms.py, test_quota_walls.py, test_stall_detection.py.)"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from aws_cdk.assertions import Match

from tests.infra.template_queries import (
    ALL_HANDLERS,
    CONFIGURED_CONTEXT,
    DENY_INSECURE_TRANSPORT,
    FAILED_LAUNCHES_HANDLER,
    JOB_EVENTS_HANDLER,
    QUOTA_WATCH_HANDLER,
    RETRY_LAUNCHER_HANDLER,
    STALL_ALARMS_HANDLER,
    STALL_HANDLERS,
    STALL_PROBER_HANDLER,
    dead_letter_queue_of,
    function_logical_id,
    rule_targeting,
    topic_logical_id,
)

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Part:
    functions: tuple[str, ...]  # the part's functions: their failed asynchronous invocations go to its queue
    invoked_by_rules: tuple[str, ...]  # those a rule or schedule invokes: its failed deliveries go there too


PARTS = {
    "job-events": Part((JOB_EVENTS_HANDLER, RETRY_LAUNCHER_HANDLER), (JOB_EVENTS_HANDLER,)),
    "quota-walls": Part((QUOTA_WATCH_HANDLER, FAILED_LAUNCHES_HANDLER), (QUOTA_WATCH_HANDLER, FAILED_LAUNCHES_HANDLER)),
    "stall-detection": Part(STALL_HANDLERS, (STALL_ALARMS_HANDLER, STALL_PROBER_HANDLER)),
}
PART_OF = {handler: name for name, part in PARTS.items() for handler in part.functions}

# An event a rule matched is worth two hours of retries. A schedule's next tick comes anyway: a delivery
# older than one interval is not worth retrying (60 s is EventBridge's least).
RULE_RETRIES = {
    JOB_EVENTS_HANDLER: {"MaximumEventAgeInSeconds": 7200, "MaximumRetryAttempts": 8},
    FAILED_LAUNCHES_HANDLER: {"MaximumEventAgeInSeconds": 7200, "MaximumRetryAttempts": 8},
    STALL_ALARMS_HANDLER: {"MaximumEventAgeInSeconds": 7200, "MaximumRetryAttempts": 8},
    QUOTA_WATCH_HANDLER: {
        "MaximumRetryAttempts": 2,
        "MaximumEventAgeInSeconds": CONFIGURED_CONTEXT["quota_check_minutes"] * 60,
    },
    STALL_PROBER_HANDLER: {"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 60},
}


def _name(handler: str) -> str:
    return handler.split(".")[2]


def _dlq(template: dict[str, Any], part: str) -> str:
    """The part's queue: where its first function's failed invocations go."""
    return dead_letter_queue_of(template, function_logical_id(template, PARTS[part].functions[0]))


def test_the_functions_and_rules_here_are_all_there_are() -> None:
    assert sorted(PART_OF) == sorted(ALL_HANDLERS)
    assert sorted(RULE_RETRIES) == sorted(h for part in PARTS.values() for h in part.invoked_by_rules)


def test_each_part_has_its_own_dlq(synthesized: Any) -> None:
    assert len({_dlq(synthesized.template, part) for part in PARTS}) == len(PARTS)


@pytest.mark.parametrize("handler", RULE_RETRIES, ids=_name)
def test_rule_target_retries_then_uses_the_dlq_and_only_that_rule_may_invoke(
    synthesized: Any, template: Any, handler: str
) -> None:
    synthesized_template = synthesized.template
    function = function_logical_id(synthesized_template, handler)
    rule = rule_targeting(synthesized_template, function)
    (target,) = synthesized_template["Resources"][rule]["Properties"]["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [function, "Arn"]}
    assert target["RetryPolicy"] == RULE_RETRIES[handler]
    assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": [_dlq(synthesized_template, PART_OF[handler]), "Arn"]}}
    template.has_resource_properties(
        "AWS::Lambda::Permission",
        {
            "Action": "lambda:InvokeFunction",
            "FunctionName": {"Fn::GetAtt": [function, "Arn"]},
            "Principal": "events.amazonaws.com",
            "SourceArn": {"Fn::GetAtt": [rule, "Arn"]},
        },
    )


@pytest.mark.parametrize("handler", ALL_HANDLERS, ids=_name)
def test_functions_reach_their_parts_dlq_after_two_async_retries(synthesized: Any, template: Any, handler: str) -> None:
    dlq = _dlq(synthesized.template, PART_OF[handler])
    template.has_resource_properties(
        "AWS::Lambda::EventInvokeConfig",
        {
            "FunctionName": {"Ref": function_logical_id(synthesized.template, handler)},
            "MaximumRetryAttempts": 2,
            "DestinationConfig": {"OnFailure": {"Destination": {"Fn::GetAtt": [dlq, "Arn"]}}},
        },
    )


@pytest.mark.parametrize("part", PARTS)
def test_dlq_is_encrypted_ssl_only_keeps_messages_14_days_and_is_open_to_its_rules(
    synthesized: Any, template: Any, part: str
) -> None:
    synthesized_template = synthesized.template
    dlq = _dlq(synthesized_template, part)
    properties = synthesized_template["Resources"][dlq]["Properties"]
    assert (properties["SqsManagedSseEnabled"], properties["MessageRetentionPeriod"]) == (True, 14 * 24 * 3600)
    rules = [
        {"Fn::GetAtt": [rule_targeting(synthesized_template, function_logical_id(synthesized_template, h)), "Arn"]}
        for h in PARTS[part].invoked_by_rules
    ]
    senders = [
        Match.object_like(
            {
                "Effect": "Allow",
                "Action": "sqs:SendMessage",
                "Principal": {"Service": "events.amazonaws.com"},
                "Condition": {"ArnEquals": {"aws:SourceArn": rule}},
            }
        )
        for rule in rules
    ]
    template.has_resource_properties(
        "AWS::SQS::QueuePolicy",
        {
            "Queues": [{"Ref": dlq}],
            "PolicyDocument": {"Statement": Match.array_with([DENY_INSECURE_TRANSPORT, *senders])},
        },
    )


def _alarm_above_zero(namespace: str, metric: str, statistic: str, dimension: dict[str, Any], topic: str) -> Any:
    """An alarm when the metric rises above 0 (missing data is no alarm) that tells the topic."""
    return {
        "Namespace": namespace,
        "MetricName": metric,
        "Dimensions": [dimension],
        "Statistic": statistic,
        "ComparisonOperator": "GreaterThanThreshold",
        "Threshold": 0,
        "TreatMissingData": "notBreaching",
        "AlarmActions": [{"Ref": topic}],
    }


@pytest.mark.parametrize("part", PARTS)
def test_alarm_when_anything_waits_in_the_dlq(synthesized: Any, template: Any, part: str) -> None:
    queue = {"Name": "QueueName", "Value": {"Fn::GetAtt": [_dlq(synthesized.template, part), "QueueName"]}}
    alarm = _alarm_above_zero(
        "AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", queue, topic_logical_id(synthesized.template)
    )
    template.has_resource_properties("AWS::CloudWatch::Alarm", alarm)


@pytest.mark.parametrize("handler", ALL_HANDLERS, ids=_name)
def test_alarm_on_each_functions_errors(synthesized: Any, template: Any, handler: str) -> None:
    function = {"Name": "FunctionName", "Value": {"Ref": function_logical_id(synthesized.template, handler)}}
    alarm = _alarm_above_zero("AWS/Lambda", "Errors", "Sum", function, topic_logical_id(synthesized.template))
    template.has_resource_properties("AWS::CloudWatch::Alarm", alarm)
