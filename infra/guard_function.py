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

from infra.lambda_asset import guard_code
from infra.nag import acknowledge_nag_finding

POWERTOOLS_ENVIRONMENT = {
    "POWERTOOLS_SERVICE_NAME": "trainguard",
    "POWERTOOLS_METRICS_NAMESPACE": "TrainGuard",
}
ALARM_PERIOD = Duration.minutes(5)
# What each function and trigger of the stack is for, by construct ID: its Description, after "trainguard: ".
DESCRIPTIONS = {
    # infra/job_events.py
    "JobEventsFunction": "watches training jobs for stalls; relaunches transient failures, reports the rest",
    "RetryLauncherFunction": "relaunches a training job when its capacity backoff ends",
    "TrainingJobStateRule": "SageMaker training jobs InProgress, Stopping, Completed, Failed or Stopped",
    # infra/quota_walls.py
    "QuotaWatchFunction": "follows quota increase requests and launches what waited for them",
    "QuotaCheckSchedule": "the periodic check of quota requests and waiting launches",
    "FailedLaunchesFunction": "requests the quota a refused CreateTrainingJob needed, and keeps the launch",
    "FailedLaunchRule": "CreateTrainingJob calls refused, ResourceLimitExceeded (via CloudTrail)",
    # infra/stall_detection.py
    "StallAlarmsFunction": "verifies a stall alarm on fresh evidence, stops the stalled job once and tells",
    "StallAlarmRule": "its stall alarms (trainguard-stall-*) going to ALARM",
    "StallProberFunction": "every minute, publishes each watched job's log silence and sweeps orphan alarms",
    "ProbeSchedule": "the stall prober, every minute",
    "LogActivityFunction": "keeps each watched training job's newest log line (from the log subscription)",
}


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


class FunctionGroup(Construct):
    """A construct's functions (each running the one asset) and what they all have: one dead-letter queue for them
    and their triggers, an errors alarm each, and an alarm on the queue, both to `alarm_topic`. `owner` names the
    group in the queue's alarm; `holds` says what the queue holds. Each function and trigger is described in
    DESCRIPTIONS."""

    def __init__(self, scope: Construct, construct_id: str, *, alarm_topic: sns.ITopic, owner: str, holds: str) -> None:
        super().__init__(scope, construct_id)
        self._alarm_topic = alarm_topic
        self._code = guard_code()
        self._functions: list[lambda_.Function] = []
        self.dead_letter_queue = dead_letter_queue(self, "DeadLetterQueue", holds=holds)
        alarm_above_zero(
            self,
            "DeadLetterQueueNotEmptyAlarm",
            metric=self.dead_letter_queue.metric_approximate_number_of_messages_visible(
                period=ALARM_PERIOD, statistic=cloudwatch.Stats.MAXIMUM
            ),
            description=f"trainguard ({owner}): events or invocations it could not handle are waiting in its "
            "dead-letter queue; read them, fix the cause, then redrive or purge.",
            topic=alarm_topic,
        )

    def add_function(self, construct_id: str, handler: str, **options: Any) -> lambda_.Function:
        """A function running `handler` (guard_function, `options` its own) and its errors alarm, `<Name>ErrorsAlarm`
        for the function `<Name>Function`, which names it for its handler's module ("quota_watch": "quota-watch")."""
        function = guard_function(
            self,
            construct_id,
            code=self._code,
            handler=handler,
            description=self._description(construct_id),
            dead_letter_queue=self.dead_letter_queue,
            **options,
        )
        alarm_above_zero(
            self,
            construct_id.removesuffix("Function") + "ErrorsAlarm",
            metric=function.metric_errors(period=ALARM_PERIOD, statistic=cloudwatch.Stats.SUM),
            description=f"trainguard: the {handler.split('.')[-2].replace('_', '-')} function raised an error; see "
            "its log group.",
            topic=self._alarm_topic,
        )
        self._functions.append(function)
        return function

    def add_rule(self, construct_id: str, function: lambda_.IFunction, pattern: dict[str, Any]) -> events.Rule:
        """An EventBridge rule on `pattern` that invokes `function` (rule_to_function), into the group's queue."""
        return rule_to_function(
            self,
            construct_id,
            description=self._description(construct_id),
            pattern=pattern,
            function=function,
            dead_letter_queue=self.dead_letter_queue,
        )

    def add_schedule(self, construct_id: str, function: lambda_.IFunction, every_minutes: int) -> events.Rule:
        """An EventBridge schedule that invokes `function` every `every_minutes`, spelled out (Schedule.rate()
        writes whole hours as "rate(1 hour)"). A run EventBridge could not deliver is worth two more tries within
        its interval, not more: the next run comes; then the event goes to the group's queue."""
        unit = "minute" if every_minutes == 1 else "minutes"  # EventBridge wants the singular for 1
        return _rule_to_function(
            self,
            construct_id,
            description=self._description(construct_id),
            schedule=events.Schedule.expression(f"rate({every_minutes} {unit})"),
            function=function,
            dead_letter_queue=self.dead_letter_queue,
            max_event_age=Duration.minutes(every_minutes),
            retry_attempts=2,
        )

    def _description(self, construct_id: str) -> str:
        return f"trainguard: {DESCRIPTIONS[construct_id]}"

    @property
    def functions(self) -> tuple[lambda_.Function, ...]:
        return tuple(self._functions)

    def add_environment(self, environment: dict[str, str]) -> None:
        """Give every function the same variables (the stack passes `GuardConfig.to_env()`)."""
        for function in self._functions:
            for name, value in environment.items():
                function.add_environment(name, value)
