"""The trainguard stack: composes the constructs and makes the grants between them.

The functions' environment is one `GuardConfig`, built here once from the constructs' names and
ARNs (CDK tokens) and passed through `to_env()`, so no variable name is typed in the infrastructure.
The functions' SageMaker rights come from settings, so they are granted here too.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Aws, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct
from trainguard.config import GuardConfig

from infra.job_events import JobEvents, acknowledge_nag_finding, nag_arn
from infra.ledger import Ledger
from infra.notifications import Notifications
from infra.settings import Settings

TRAINING_JOB_READ_ACTIONS = ("sagemaker:DescribeTrainingJob", "sagemaker:ListTags")
TRAINING_JOB_LAUNCH_ACTIONS = ("sagemaker:CreateTrainingJob", "sagemaker:AddTags")
SAGEMAKER_PRINCIPAL = "sagemaker.amazonaws.com"
_TRAINING_JOBS_REASON = (
    "Training jobs are named by their owners and relaunches get new names, so no narrower ARN exists; "
    "launches are limited to jobs that carry the opt-in tag, and PassRole to the configured roles."
)


class TrainGuardStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, settings: Settings, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.settings = settings
        self.notifications = Notifications(self, "Notifications", notification_emails=settings.notification_emails)
        self.ledger = Ledger(self, "Ledger")
        self.job_events = JobEvents(self, "JobEvents", alarm_topic=self.notifications.topic)
        for function in self.job_events.functions:
            self.ledger.grant_ledger_access(function)
            self.notifications.grant_publish(function)
            self.allow_relaunching_training_jobs(function)

        self.guard_config = guard_config(
            settings,
            ledger_table_name=self.ledger.table.table_name,
            topic_arn=self.notifications.topic.topic_arn,
            retry_launcher_arn=self.job_events.retry_launcher_arn,
            scheduler_role_arn=self.job_events.scheduler_role.role_arn,
            schedule_group_name=self.job_events.schedule_group.schedule_group_name,
        )
        self.job_events.add_environment(self.guard_config.to_env())

    def allow_relaunching_training_jobs(self, function: lambda_.Function) -> None:
        """Re-describe a job and relaunch it, and nothing wider: CreateTrainingJob only with the
        opt-in tag, PassRole only for the configured execution roles, ListBucket only on the
        configured checkpoint buckets (none when the lists are empty)."""
        training_jobs_arn = self.format_arn(service="sagemaker", resource="training-job", resource_name="*")
        statements = [
            iam.PolicyStatement(
                sid="DescribeTrainingJobs",
                actions=list(TRAINING_JOB_READ_ACTIONS),
                resources=[training_jobs_arn],
            ),
            iam.PolicyStatement(
                sid="RelaunchOptedInTrainingJobs",
                actions=list(TRAINING_JOB_LAUNCH_ACTIONS),
                resources=[training_jobs_arn],
                conditions={"StringEquals": {f"aws:RequestTag/{self.settings.tag_prefix}:enabled": "true"}},
            ),
        ]
        if self.settings.passable_role_arns:
            statements.append(
                iam.PolicyStatement(
                    sid="PassConfiguredExecutionRolesToSageMaker",
                    actions=["iam:PassRole"],
                    resources=list(self.settings.passable_role_arns),
                    conditions={"StringEquals": {"iam:PassedToService": SAGEMAKER_PRINCIPAL}},
                )
            )
        if self.settings.checkpoint_buckets:
            statements.append(
                iam.PolicyStatement(
                    sid="ListCheckpointBuckets",
                    actions=["s3:ListBucket"],
                    resources=[f"arn:{Aws.PARTITION}:s3:::{bucket}" for bucket in self.settings.checkpoint_buckets],
                )
            )
        for statement in statements:
            function.add_to_role_policy(statement)
        assert function.role is not None
        acknowledge_nag_finding(
            function.role, f"AwsSolutions-IAM5[Resource::{nag_arn(training_jobs_arn)}]", _TRAINING_JOBS_REASON
        )


def guard_config(
    settings: Settings,
    *,
    ledger_table_name: str,
    topic_arn: str,
    retry_launcher_arn: str,
    scheduler_role_arn: str,
    schedule_group_name: str,
) -> GuardConfig:
    """Settings plus the deployed resources' names: what the handlers read back with `from_env()`."""
    return GuardConfig(
        ledger_table_name=ledger_table_name,
        topic_arn=topic_arn,
        tag_prefix=settings.tag_prefix,
        default_max_retries=settings.default_max_retries,
        retry_budget_per_hour=settings.retry_budget_per_hour,
        dry_run=settings.dry_run,
        capacity_backoff_minutes=settings.capacity_backoff_minutes,
        capacity_backoff_max_minutes=settings.capacity_backoff_max_minutes,
        retry_launcher_arn=retry_launcher_arn,
        scheduler_role_arn=scheduler_role_arn,
        schedule_group_name=schedule_group_name,
        passable_role_arns=settings.passable_role_arns,
    )
