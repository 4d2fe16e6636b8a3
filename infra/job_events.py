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
from infra.guard_function import FunctionGroup
from infra.nag import acknowledge_nag_finding, nag_arn

JOB_EVENTS_HANDLER = "trainguard.handlers.job_events.handler"
RETRY_LAUNCHER_HANDLER = "trainguard.handlers.retry_launcher.handler"
SCHEDULE_GROUP_NAME = "trainguard"
MAX_FUNCTION_NAME_LENGTH = 64
SCHEDULER_PRINCIPAL = "scheduler.amazonaws.com"
SCHEDULE_ACTIONS = ("scheduler:CreateSchedule",)


class JobEvents(FunctionGroup):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        alarm_topic: sns.ITopic,
    ) -> None:
        holds = "the rule target and both functions' asynchronous invocations"
        super().__init__(scope, construct_id, alarm_topic=alarm_topic, owner="job events", holds=holds)
        self.job_events_function = self.add_function("JobEventsFunction", JOB_EVENTS_HANDLER)
        self._build_retry_launcher()
        self.rule = self.add_rule("TrainingJobStateRule", self.job_events_function, training_job_state_pattern())
        self._build_retry_schedules()

    def _build_retry_launcher(self) -> None:
        """The retry launcher, under a fixed name, so its ARN can go into the environment of both
        functions (its own included) without a circular reference to the function resource."""
        stack = Stack.of(self)
        retry_launcher_name = f"{stack.stack_name}-retry-launcher"
        if len(retry_launcher_name) > MAX_FUNCTION_NAME_LENGTH:
            raise ValueError(
                f"stack name {stack.stack_name!r} is too long for the function name {retry_launcher_name!r}"
            )
        self.retry_launcher_function = self.add_function(
            "RetryLauncherFunction", RETRY_LAUNCHER_HANDLER, function_name=retry_launcher_name
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
