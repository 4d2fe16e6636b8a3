"""What every trainguard function has, built the same way by each construct that owns functions.

A function runs the one asset (infra/lambda_asset.py) on Python 3.14/arm64 with its own role and
log group (no AWSLambdaBasicExecutionRole), retries an asynchronous invocation twice and then sends
it to the owner's dead-letter queue. The owner alarms on that queue and on each function's errors.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.nag import acknowledge_nag_finding

POWERTOOLS_ENVIRONMENT = {
    "POWERTOOLS_SERVICE_NAME": "trainguard",
    "POWERTOOLS_METRICS_NAMESPACE": "TrainGuard",
}
ALARM_PERIOD = Duration.minutes(5)


def event_pattern(pattern: dict[str, Any]) -> events.EventPattern:
    """A plain-data pattern of infra/event_patterns.py as CDK's struct ('detail-type' -> detail_type)."""
    return events.EventPattern(**{key.replace("-", "_"): value for key, value in pattern.items()})


def _rule_to_function(
    scope: Construct,
    construct_id: str,
    *,
    description: str,
    function: lambda_.IFunction,
    dead_letter_queue: sqs.IQueue,
    max_event_age: Duration,
    retry_attempts: int,
    event_pattern: events.EventPattern | None = None,
    schedule: events.Schedule | None = None,
    event_bus: events.IEventBus | None = None,
) -> events.Rule:
    """A rule on events or a schedule whose target retries as told, then parks the event in the DLQ."""
    target = targets.LambdaFunction(
        function, dead_letter_queue=dead_letter_queue, max_event_age=max_event_age, retry_attempts=retry_attempts
    )
    return events.Rule(
        scope,
        construct_id,
        description=description,
        event_pattern=event_pattern,
        schedule=schedule,
        event_bus=event_bus,
        targets=[target],
    )


def rule_to_function(
    scope: Construct,
    construct_id: str,
    *,
    description: str,
    pattern: dict[str, Any],
    function: lambda_.IFunction,
    dead_letter_queue: sqs.IQueue,
    event_bus: events.IEventBus | None = None,
) -> events.Rule:
    """An EventBridge rule (on the default bus unless `event_bus`) whose target retries for two hours (8 attempts),
    then parks the event in the DLQ."""
    return _rule_to_function(
        scope,
        construct_id,
        description=description,
        event_pattern=event_pattern(pattern),
        function=function,
        dead_letter_queue=dead_letter_queue,
        max_event_age=Duration.hours(2),
        retry_attempts=8,
        event_bus=event_bus,
    )


def schedule_to_function(
    scope: Construct,
    construct_id: str,
    *,
    description: str,
    expression: str,
    function: lambda_.IFunction,
    dead_letter_queue: sqs.IQueue,
    max_event_age: Duration,
    retry_attempts: int,
) -> events.Rule:
    """An EventBridge schedule (its expression spelled out: `rate(N minutes)`) whose target retries as told,
    then parks the event in the DLQ; a scheduled run is worth fewer tries than an event, the next one comes."""
    return _rule_to_function(
        scope,
        construct_id,
        description=description,
        schedule=events.Schedule.expression(expression),
        function=function,
        dead_letter_queue=dead_letter_queue,
        max_event_age=max_event_age,
        retry_attempts=retry_attempts,
    )


def dead_letter_queue(scope: Construct, construct_id: str, *, holds: str) -> sqs.Queue:
    """An encrypted, SSL-only queue that keeps what `holds` names for 14 days, for a person to read."""
    queue = sqs.Queue(
        scope,
        construct_id,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        retention_period=Duration.days(14),
    )
    acknowledge_nag_finding(
        queue,
        "AwsSolutions-SQS3",
        f"This queue is itself the dead-letter queue of {holds}; its depth raises an alarm instead of "
        "moving messages on.",
    )
    return queue


def guard_function(
    scope: Construct,
    construct_id: str,
    *,
    code: lambda_.Code,
    handler: str,
    description: str,
    dead_letter_queue: sqs.IQueue,
    function_name: str | None = None,
    reserved_concurrency: int | None = None,
) -> lambda_.Function:
    role = iam.Role(
        scope,
        f"{construct_id}Role",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=f"trainguard {construct_id}: its log group and the rights the stack grants it",
    )
    log_group = logs.LogGroup(scope, f"{construct_id}Logs", retention=logs.RetentionDays.THREE_MONTHS)
    # Instead of AWSLambdaBasicExecutionRole (logs:* on every group): write to this group only.
    log_group.grant_write(role)
    return lambda_.Function(
        scope,
        construct_id,
        function_name=function_name,
        description=description,
        runtime=lambda_.Runtime.PYTHON_3_14,
        architecture=lambda_.Architecture.ARM_64,
        code=code,
        handler=handler,
        memory_size=256,
        timeout=Duration.seconds(60),
        role=role,
        log_group=log_group,
        environment=dict(POWERTOOLS_ENVIRONMENT),
        retry_attempts=2,
        on_failure=destinations.SqsDestination(dead_letter_queue),
        reserved_concurrent_executions=reserved_concurrency,
    )


def function_for_rule(
    scope: Construct,
    construct_id: str,
    *,
    code: lambda_.Code,
    handler: str,
    description: str,
    rule_id: str,
    rule_description: str,
    pattern: dict[str, Any],
    dead_letter_queue: sqs.IQueue,
) -> tuple[lambda_.Function, events.Rule]:
    """A function (guard_function) and the EventBridge rule that invokes it (rule_to_function), one DLQ for both."""
    function = guard_function(
        scope, construct_id, code=code, handler=handler, description=description, dead_letter_queue=dead_letter_queue
    )
    rule = rule_to_function(
        scope,
        rule_id,
        description=rule_description,
        pattern=pattern,
        function=function,
        dead_letter_queue=dead_letter_queue,
    )
    return function, rule


def add_environment(functions: tuple[lambda_.Function, ...], environment: dict[str, str]) -> None:
    """Give every function the same variables (the stack passes `GuardConfig.to_env()`)."""
    for function in functions:
        for name, value in environment.items():
            function.add_environment(name, value)


def alarm_above_zero(
    scope: Construct, construct_id: str, *, metric: cloudwatch.IMetric, description: str, topic: sns.ITopic
) -> cloudwatch.Alarm:
    """Anything above zero alarms to the topic: each of these means trainguard failed to handle something."""
    alarm = cloudwatch.Alarm(
        scope,
        construct_id,
        alarm_description=description,
        metric=metric,
        threshold=0,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluation_periods=1,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
    )
    alarm.add_alarm_action(cloudwatch_actions.SnsAction(topic))
    return alarm


def dead_letter_queue_alarm(scope: Construct, queue: sqs.Queue, *, topic: sns.ITopic, owner: str) -> cloudwatch.Alarm:
    return alarm_above_zero(
        scope,
        "DeadLetterQueueNotEmptyAlarm",
        metric=queue.metric_approximate_number_of_messages_visible(
            period=ALARM_PERIOD, statistic=cloudwatch.Stats.MAXIMUM
        ),
        description=f"trainguard ({owner}): events or invocations it could not handle are waiting in its "
        "dead-letter queue; read them, fix the cause, then redrive or purge.",
        topic=topic,
    )


def errors_alarm(
    scope: Construct, construct_id: str, function: lambda_.Function, *, topic: sns.ITopic, name: str
) -> cloudwatch.Alarm:
    return alarm_above_zero(
        scope,
        construct_id,
        metric=function.metric_errors(period=ALARM_PERIOD, statistic=cloudwatch.Stats.SUM),
        description=f"trainguard: the {name} function raised an error; see its log group.",
        topic=topic,
    )


def guard_metric(name: str, *, statistic: str, period: Duration, label: str | None = None) -> cloudwatch.Metric:
    """One of the handlers' Powertools metrics (their namespace and `service` dimension)."""
    return cloudwatch.Metric(
        namespace=POWERTOOLS_ENVIRONMENT["POWERTOOLS_METRICS_NAMESPACE"],
        metric_name=name,
        dimensions_map={"service": POWERTOOLS_ENVIRONMENT["POWERTOOLS_SERVICE_NAME"]},
        statistic=statistic,
        period=period,
        label=label,
    )
