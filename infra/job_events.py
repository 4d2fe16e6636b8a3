"""Job events: the rule on training-job state changes, the two functions, their DLQ and alarms.

    EventBridge rule --(retry 8x / 2 h, then DLQ)--> job-events function --(async retry 2x, then DLQ)
    job-events --CreateSchedule--> Scheduler group "trainguard" --(scheduler role)--> retry-launcher

The rule passes every status the job-events function acts on (infra/event_patterns.py): while a job
trains, the function watches it for stalls and puts its alarms; when it ends, the function deletes
them and handles the end (a relaunch, or a notification).

Both functions run the same asset (infra/lambda_asset.py) and are built by infra/guard_function.py.
Their roles start with their own log group, the DLQ and (job-events) the scheduler; the stack adds
SageMaker, Service Quotas, the ledger, the topic and (job-events) the stall alarms.
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Aws, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_sns as sns
from constructs import Construct

from infra.event_patterns import training_job_state_pattern
from infra.guard_function import (
    add_environment,
    dead_letter_queue,
    dead_letter_queue_alarm,
    errors_alarm,
    guard_function,
    rule_to_function,
)
from infra.lambda_asset import guard_code
from infra.nag import acknowledge_nag_finding, nag_arn

JOB_EVENTS_HANDLER = "trainguard.handlers.job_events.handler"
RETRY_LAUNCHER_HANDLER = "trainguard.handlers.retry_launcher.handler"
SCHEDULE_GROUP_NAME = "trainguard"
MAX_FUNCTION_NAME_LENGTH = 64
SCHEDULER_PRINCIPAL = "scheduler.amazonaws.com"
SCHEDULE_ACTIONS = ("scheduler:CreateSchedule",)


class JobEvents(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        alarm_topic: sns.ITopic,
    ) -> None:
        super().__init__(scope, construct_id)
        self.dead_letter_queue = dead_letter_queue(
            self, "DeadLetterQueue", holds="the rule target and both functions' asynchronous invocations"
        )
        code = guard_code()
        self.job_events_function = guard_function(
            self,
            "JobEventsFunction",
            code=code,
            handler=JOB_EVENTS_HANDLER,
            description="trainguard: watches training jobs for stalls; relaunches transient failures, reports the rest",
            dead_letter_queue=self.dead_letter_queue,
        )
        self._build_retry_launcher(code)
        self.rule = rule_to_function(
            self,
            "TrainingJobStateRule",
            description="trainguard: SageMaker training jobs InProgress, Stopping, Completed, Failed or Stopped",
            pattern=training_job_state_pattern(),
            function=self.job_events_function,
            dead_letter_queue=self.dead_letter_queue,
        )
        self._build_retry_schedules()
        self._alarm_on_failures(alarm_topic)

    def _build_retry_launcher(self, code: lambda_.Code) -> None:
        """The retry launcher, under a fixed name, so its ARN can go into the environment of both
        functions (its own included) without a circular reference to the function resource."""
        stack = Stack.of(self)
        retry_launcher_name = f"{stack.stack_name}-retry-launcher"
        if len(retry_launcher_name) > MAX_FUNCTION_NAME_LENGTH:
            raise ValueError(
                f"stack name {stack.stack_name!r} is too long for the function name {retry_launcher_name!r}"
            )
        self.retry_launcher_function = guard_function(
            self,
            "RetryLauncherFunction",
            code=code,
            handler=RETRY_LAUNCHER_HANDLER,
            function_name=retry_launcher_name,
            description="trainguard: relaunches a training job when its capacity backoff ends",
            dead_letter_queue=self.dead_letter_queue,
        )
        self.retry_launcher_arn = stack.format_arn(
            service="lambda",
            resource="function",
            resource_name=retry_launcher_name,
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )

    def _build_retry_schedules(self) -> None:
        """The schedule group of the one-time relaunch schedules, the role Scheduler invokes the retry
        launcher with (the right to create them is the stack's to give: `allow_scheduling_retries`)."""
        # Destroyed with the stack (the default is to retain it): its name is fixed, and a retained
        # group would make the next deploy of the stack fail with "already exists".
        self.schedule_group = scheduler.ScheduleGroup(
            self,
            "RetrySchedules",
            schedule_group_name=SCHEDULE_GROUP_NAME,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.scheduler_role = self._scheduler_role()

    def _alarm_on_failures(self, topic: sns.ITopic) -> None:
        """The DLQ's alarm and each function's errors alarm."""
        dead_letter_queue_alarm(self, self.dead_letter_queue, topic=topic, owner="job events")
        errors_alarm(self, "JobEventsErrorsAlarm", self.job_events_function, topic=topic, name="job-events")
        errors_alarm(self, "RetryLauncherErrorsAlarm", self.retry_launcher_function, topic=topic, name="retry-launcher")

    @property
    def functions(self) -> tuple[lambda_.Function, lambda_.Function]:
        return (self.job_events_function, self.retry_launcher_function)

    def add_environment(self, environment: dict[str, str]) -> None:
        """Give both functions the same variables (the stack passes `GuardConfig.to_env()`)."""
        add_environment(self.functions, environment)

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

    def allow_scheduling_retries(self, function: lambda_.Function, needed: frozenset[str]) -> set[str]:
        """The scheduler port's actions: its schedules in trainguard's group, and passing the scheduler's own
        role to EventBridge Scheduler (adapters/scheduler.py). The actions it placed."""
        schedules_arn = Stack.of(self).format_arn(
            service="scheduler", resource="schedule", resource_name=f"{SCHEDULE_GROUP_NAME}/*"
        )
        actions = sorted(action for action in needed if action.startswith("scheduler:"))
        if unknown := needed - {*SCHEDULE_ACTIONS, "iam:PassRole"}:
            raise ValueError(
                f"the scheduler port needs {sorted(unknown)}, which allow_scheduling_retries does not grant"
            )
        function.add_to_role_policy(
            iam.PolicyStatement(sid="CreateAndReadRetrySchedules", actions=actions, resources=[schedules_arn])
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
            "advance; the grant is limited to creating and reading schedules in trainguard's own schedule group.",
        )
        return set(needed)
