"""The trainguard stack: composes the constructs and makes the grants between them.

The functions' environment is one `GuardConfig`, built here once from the constructs' names and
ARNs (CDK tokens) and passed through `to_env()`, so no variable name is typed in the infrastructure.
The functions' SageMaker and Service Quotas rights come from settings and adapters, so they are
granted here too.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Aws, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.job_events import JobEvents
from infra.ledger import Ledger
from infra.nag import acknowledge_nag_finding, nag_arn
from infra.notifications import Notifications
from infra.quota_walls import QuotaWalls
from infra.settings import Settings
from trainguard.adapters.service_quotas import IAM_ACTIONS as SERVICE_QUOTAS_ACTIONS
from trainguard.adapters.service_quotas import SERVICE_CODE as QUOTAS_SERVICE_CODE
from trainguard.config import GuardConfig

TRAINING_JOB_READ_ACTIONS = ("sagemaker:DescribeTrainingJob", "sagemaker:ListTags")
TRAINING_JOB_LAUNCH_ACTIONS = ("sagemaker:CreateTrainingJob", "sagemaker:AddTags")
SAGEMAKER_PRINCIPAL = "sagemaker.amazonaws.com"
_TRAINING_JOBS_REASON = (
    "Training jobs are named by their owners and relaunches get new names, so no narrower ARN exists; "
    "launches are limited to jobs that carry the opt-in tag, and PassRole to the configured roles."
)

# Service Quotas, from "Actions, resources, and condition keys for Service Quotas"
# (https://docs.aws.amazon.com/service-authorization/latest/reference/list_servicequotas.html):
# these three take the resource type `quota`, arn:${Partition}:servicequotas:${Region}:${Account}:
# ${ServiceCode}/${QuotaCode} (and the condition key servicequotas:service, which adds nothing to an
# ARN that already names the service, so it is not used) ...
QUOTA_SCOPED_ACTIONS = (
    "servicequotas:GetServiceQuota",
    "servicequotas:RequestServiceQuotaIncrease",
    "servicequotas:ListRequestedServiceQuotaChangeHistoryByQuota",
)
# ... and these two take no resource type and no condition key: only "Resource": "*" can allow them.
# (A servicequotas:service condition on them would never match, and deny them.)
UNSCOPED_QUOTA_ACTIONS = (
    "servicequotas:ListServiceQuotas",
    "servicequotas:GetRequestedServiceQuotaChange",
)
SERVICE_QUOTAS_PRINCIPAL = "servicequotas.amazonaws.com"
# A quota request needs the service-linked role AWSServiceRoleForServiceQuotas in the account; Service
# Quotas creates it on the first request, and the caller then needs iam:CreateServiceLinkedRole for
# servicequotas.amazonaws.com: https://docs.aws.amazon.com/awssupport/latest/user/support-app-permissions.html
# ("The AWS Support App says that I'm missing an IAM role for Service Quotas"). That role, not the caller,
# opens the support case that SupportCaseAllowed permits (its policy ServiceQuotasServiceRolePolicy:
# https://docs.aws.amazon.com/aws-managed-policy/latest/reference/ServiceQuotasServiceRolePolicy.html),
# so the functions get no support:* action.
SERVICE_QUOTAS_ROLE_PATH = f"aws-service-role/{SERVICE_QUOTAS_PRINCIPAL}/AWSServiceRoleForServiceQuotas"
_SAGEMAKER_QUOTAS_REASON = (
    "Quota codes differ between sources and are resolved by name at run time (ListServiceQuotas), so the "
    "grant names the service and leaves the code open: SageMaker quotas of this account and region only."
)
_UNSCOPED_QUOTAS_REASON = (
    "ListServiceQuotas and GetRequestedServiceQuotaChange support no resource type and no condition key "
    "(Service Authorization Reference, Service Quotas), so only Resource * can allow them; both only read."
)


class TrainGuardStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, settings: Settings, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.settings = settings
        self.notifications = Notifications(self, "Notifications", notification_emails=settings.notification_emails)
        self.ledger = Ledger(self, "Ledger")
        self.job_events = JobEvents(self, "JobEvents", alarm_topic=self.notifications.topic)
        self.quota_walls = QuotaWalls(
            self,
            "QuotaWalls",
            alarm_topic=self.notifications.topic,
            check_every_minutes=settings.quota_check_minutes,
            watch_failed_launches=settings.watch_failed_launches,
        )
        for function in (*self.job_events.functions, *self.quota_walls.functions):
            self.ledger.grant_ledger_access(function)
            self.notifications.grant_publish(function)
            self.allow_quota_requests(function)
        for function in self.job_events.functions:
            self.allow_relaunching_training_jobs(function)
            self.allow_reading_checkpoints(function)
        # The quota watcher launches what waited for a quota (the request is already built: no
        # checkpoint to read); the failed-launches function only requests quotas and records the launch.
        self.allow_relaunching_training_jobs(self.quota_walls.quota_watch_function)

        self.guard_config = guard_config(
            settings,
            ledger_table_name=self.ledger.table.table_name,
            topic_arn=self.notifications.topic.topic_arn,
            retry_launcher_arn=self.job_events.retry_launcher_arn,
            scheduler_role_arn=self.job_events.scheduler_role.role_arn,
            schedule_group_name=self.job_events.schedule_group.schedule_group_name,
        )
        self.job_events.add_environment(self.guard_config.to_env())
        self.quota_walls.add_environment(self.guard_config.to_env())

    def allow_relaunching_training_jobs(self, function: lambda_.Function) -> None:
        """Re-describe a job and relaunch it, and nothing wider: CreateTrainingJob only with the
        opt-in tag, PassRole only for the configured execution roles (none when the list is empty)."""
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
        for statement in statements:
            function.add_to_role_policy(statement)
        assert function.role is not None
        acknowledge_nag_finding(
            function.role, f"AwsSolutions-IAM5[Resource::{nag_arn(training_jobs_arn)}]", _TRAINING_JOBS_REASON
        )

    def allow_reading_checkpoints(self, function: lambda_.Function) -> None:
        """ListBucket only on the configured checkpoint buckets (nothing when the list is empty)."""
        if self.settings.checkpoint_buckets:
            function.add_to_role_policy(
                iam.PolicyStatement(
                    sid="ListCheckpointBuckets",
                    actions=["s3:ListBucket"],
                    resources=[f"arn:{Aws.PARTITION}:s3:::{bucket}" for bucket in self.settings.checkpoint_buckets],
                )
            )

    def allow_quota_requests(self, function: lambda_.Function) -> None:
        """The Service Quotas adapter's actions, each as narrow as AWS allows (see the constants above)."""
        if set(SERVICE_QUOTAS_ACTIONS) != {*QUOTA_SCOPED_ACTIONS, *UNSCOPED_QUOTA_ACTIONS}:
            raise ValueError(
                f"the Service Quotas adapter declares {sorted(SERVICE_QUOTAS_ACTIONS)}; look each action up in the "
                "Service Authorization Reference and add it to QUOTA_SCOPED_ACTIONS or UNSCOPED_QUOTA_ACTIONS"
            )
        service_quotas_arn = self.format_arn(service="servicequotas", resource=QUOTAS_SERVICE_CODE, resource_name="*")
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="ReadAndRequestSageMakerQuotas",
                actions=list(QUOTA_SCOPED_ACTIONS),
                resources=[service_quotas_arn],
            )
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="ListQuotasAndReadQuotaRequests", actions=list(UNSCOPED_QUOTA_ACTIONS), resources=["*"]
            )
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="LetServiceQuotasCreateItsServiceLinkedRole",
                actions=["iam:CreateServiceLinkedRole"],
                resources=[
                    self.format_arn(service="iam", region="", resource="role", resource_name=SERVICE_QUOTAS_ROLE_PATH)
                ],
                conditions={"StringEquals": {"iam:AWSServiceName": SERVICE_QUOTAS_PRINCIPAL}},
            )
        )
        assert function.role is not None
        acknowledge_nag_finding(
            function.role, f"AwsSolutions-IAM5[Resource::{nag_arn(service_quotas_arn)}]", _SAGEMAKER_QUOTAS_REASON
        )
        acknowledge_nag_finding(function.role, "AwsSolutions-IAM5[Resource::*]", _UNSCOPED_QUOTAS_REASON)


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
        quota_support_case_allowed=settings.quota_support_case_allowed,
        default_quota_ceiling=settings.default_quota_ceiling,
        quota_ceilings_json=settings.quota_ceilings_json,
        quota_wait_hours=settings.quota_wait_hours,
    )
