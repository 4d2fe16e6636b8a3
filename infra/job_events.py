"""Job events: the rule on training-job state changes, the two functions, their DLQ and alarms.

    EventBridge rule --(retry 8x / 2 h, then DLQ)--> job-events function --(async retry 2x, then DLQ)
    job-events --CreateSchedule--> Scheduler group "trainguard" --(scheduler role)--> retry-launcher

Both functions run the same asset (infra/lambda_asset.py). Their roles start with their own log
group, the DLQ and (job-events) the scheduler; the stack adds SageMaker, the ledger and the topic.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Acknowledgment, ArnFormat, Aws, Duration, RemovalPolicy, Stack, Validations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_logs as logs
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct, IConstruct

from infra.event_patterns import training_job_ended_pattern
from infra.lambda_asset import guard_code

JOB_EVENTS_HANDLER = "trainguard.handlers.job_events.handler"
RETRY_LAUNCHER_HANDLER = "trainguard.handlers.retry_launcher.handler"
SCHEDULE_GROUP_NAME = "trainguard"
MAX_FUNCTION_NAME_LENGTH = 64
POWERTOOLS_ENVIRONMENT = {
    "POWERTOOLS_SERVICE_NAME": "trainguard",
    "POWERTOOLS_METRICS_NAMESPACE": "TrainGuard",
}
SCHEDULER_PRINCIPAL = "scheduler.amazonaws.com"
# cdk-nag v3 findings are acknowledged as "<plugin>::<rule>[<finding>]", as synth prints them.
NAG_PLUGIN = "AwsSolutions"


def _event_pattern(pattern: dict[str, Any]) -> events.EventPattern:
    """The plain-data pattern of infra/event_patterns.py as CDK's struct ('detail-type' -> detail_type)."""
    return events.EventPattern(**{key.replace("-", "_"): value for key, value in pattern.items()})


class JobEvents(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        alarm_topic: sns.ITopic,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)

        self.dead_letter_queue = sqs.Queue(
            self,
            "DeadLetterQueue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
        )
        acknowledge_nag_finding(
            self.dead_letter_queue,
            "AwsSolutions-SQS3",
            "This queue is itself the dead-letter queue of the rule target and of both functions' "
            "asynchronous invocations; its depth raises an alarm instead of moving messages on.",
        )

        code = guard_code()
        self.job_events_function = self._guard_function(
            "JobEventsFunction",
            code=code,
            handler=JOB_EVENTS_HANDLER,
            description="trainguard: classifies ended training jobs and acts on opted-in failures",
        )
        # A fixed name, so the retry launcher's ARN can go into the environment of both functions
        # (its own included) without a circular reference to the function resource.
        retry_launcher_name = f"{stack.stack_name}-retry-launcher"
        if len(retry_launcher_name) > MAX_FUNCTION_NAME_LENGTH:
            raise ValueError(
                f"stack name {stack.stack_name!r} is too long for the function name {retry_launcher_name!r}"
            )
        self.retry_launcher_function = self._guard_function(
            "RetryLauncherFunction",
            code=code,
            handler=RETRY_LAUNCHER_HANDLER,
            function_name=retry_launcher_name,
            description="trainguard: relaunches a training job when its capacity backoff ends",
        )
        self.retry_launcher_arn = stack.format_arn(
            service="lambda",
            resource="function",
            resource_name=retry_launcher_name,
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )

        self.rule = events.Rule(
            self,
            "TrainingJobEndedRule",
            description="trainguard: SageMaker training jobs that failed or stopped",
            event_pattern=_event_pattern(training_job_ended_pattern()),
            targets=[
                targets.LambdaFunction(
                    self.job_events_function,
                    dead_letter_queue=self.dead_letter_queue,
                    max_event_age=Duration.hours(2),
                    retry_attempts=8,
                )
            ],
        )

        # Destroyed with the stack (the default is to retain it): its name is fixed, and a retained
        # group would make the next deploy of the stack fail with "already exists".
        self.schedule_group = scheduler.ScheduleGroup(
            self,
            "RetrySchedules",
            schedule_group_name=SCHEDULE_GROUP_NAME,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.scheduler_role = self._scheduler_role()
        self._allow_scheduling_retries(self.job_events_function)
        self._add_alarms(alarm_topic)

    @property
    def functions(self) -> tuple[lambda_.Function, lambda_.Function]:
        return (self.job_events_function, self.retry_launcher_function)

    def add_environment(self, environment: dict[str, str]) -> None:
        """Give both functions the same variables (the stack passes `GuardConfig.to_env()`)."""
        for function in self.functions:
            for name, value in environment.items():
                function.add_environment(name, value)

    def _guard_function(
        self,
        construct_id: str,
        *,
        code: lambda_.Code,
        handler: str,
        description: str,
        function_name: str | None = None,
    ) -> lambda_.Function:
        role = iam.Role(
            self,
            f"{construct_id}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"trainguard {construct_id}: SageMaker relaunch rights, its log group, ledger, topic",
        )
        log_group = logs.LogGroup(self, f"{construct_id}Logs", retention=logs.RetentionDays.THREE_MONTHS)
        # Instead of AWSLambdaBasicExecutionRole (logs:* on every group): write to this group only.
        log_group.grant_write(role)
        function = lambda_.Function(
            self,
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
            on_failure=destinations.SqsDestination(self.dead_letter_queue),
        )
        return function

    def _scheduler_role(self) -> iam.Role:
        """The role EventBridge Scheduler assumes to invoke the retry launcher, for this account's
        "trainguard" schedule group only (confused-deputy conditions on the trust policy)."""
        role = iam.Role(
            self,
            "SchedulerRole",
            description="trainguard: lets EventBridge Scheduler invoke the retry launcher",
            assumed_by=iam.ServicePrincipal(
                SCHEDULER_PRINCIPAL,
                conditions={
                    "StringEquals": {
                        "aws:SourceAccount": Aws.ACCOUNT_ID,
                        "aws:SourceArn": self.schedule_group.schedule_group_arn,
                    },
                },
            ),
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="InvokeRetryLauncher",
                actions=["lambda:InvokeFunction"],
                resources=[self.retry_launcher_arn],
            )
        )
        return role

    def _allow_scheduling_retries(self, function: lambda_.Function) -> None:
        schedules_arn = Stack.of(self).format_arn(
            service="scheduler", resource="schedule", resource_name=f"{SCHEDULE_GROUP_NAME}/*"
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="CreateRetrySchedules",
                actions=["scheduler:CreateSchedule"],
                resources=[schedules_arn],
            )
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="PassSchedulerRole",
                actions=["iam:PassRole"],
                resources=[self.scheduler_role.role_arn],
                conditions={"StringEquals": {"iam:PassedToService": SCHEDULER_PRINCIPAL}},
            )
        )
        assert function.role is not None
        acknowledge_nag_finding(
            function.role,
            f"AwsSolutions-IAM5[Resource::{nag_arn(schedules_arn)}]",
            "Each retry gets a one-time schedule named after the failed job, so names are not known in "
            "advance; the grant is limited to creating schedules in trainguard's own schedule group.",
        )

    def _add_alarms(self, topic: sns.ITopic) -> None:
        """Anything above zero alarms: each of these means trainguard failed to handle an event."""
        alarms = {
            "DeadLetterQueueNotEmptyAlarm": (
                self.dead_letter_queue.metric_approximate_number_of_messages_visible(
                    period=Duration.minutes(5), statistic=cloudwatch.Stats.MAXIMUM
                ),
                "trainguard: events or invocations it could not handle are waiting in its dead-letter "
                "queue; read them, fix the cause, then redrive or purge.",
            ),
            "JobEventsErrorsAlarm": (
                self.job_events_function.metric_errors(period=Duration.minutes(5), statistic=cloudwatch.Stats.SUM),
                "trainguard: the job-events function raised an error; see its log group.",
            ),
            "RetryLauncherErrorsAlarm": (
                self.retry_launcher_function.metric_errors(period=Duration.minutes(5), statistic=cloudwatch.Stats.SUM),
                "trainguard: the retry-launcher function raised an error; see its log group.",
            ),
        }
        action = cloudwatch_actions.SnsAction(topic)
        for construct_id, (metric, description) in alarms.items():
            alarm = cloudwatch.Alarm(
                self,
                construct_id,
                alarm_description=description,
                metric=metric,
                threshold=0,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                evaluation_periods=1,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
            alarm.add_alarm_action(action)


def acknowledge_nag_finding(construct: IConstruct, finding: str, reason: str) -> None:
    """Acknowledge one cdk-nag finding on one construct (and its children), with the reason."""
    Validations.of(construct).acknowledge(Acknowledgment(id=f"{NAG_PLUGIN}::{finding}", reason=reason))


def nag_arn(arn: str) -> str:
    """An ARN as cdk-nag names it in a finding: pseudo parameters as <AWS::Region>."""
    return (
        arn.replace(Aws.PARTITION, "<AWS::Partition>")
        .replace(Aws.REGION, "<AWS::Region>")
        .replace(Aws.ACCOUNT_ID, "<AWS::AccountId>")
    )
