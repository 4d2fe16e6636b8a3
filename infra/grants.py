"""The functions' IAM statements: one builder per action group of infra/action_groups.py.

Every builder has the same shape, `grants.allow_<what>(function, actions=<its whole group>)`: it adds
one statement to the function's role with `actions` (any subset of its group; an action of another
group raises, and no action adds nothing), on the group's resources and under its conditions, and
records the cdk-nag acknowledgment of each wildcard resource with the group's reason. They are given
once per role and finding when the stack calls `grants.acknowledgments.acknowledge_all()`.
`allow_what_it_calls` gives a function each group's share of the actions its ports need.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import ArnFormat, Aws, CfnCondition, Fn, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import IConstruct

from infra import action_groups as groups
from infra.nag import PendingAcknowledgments, nag_arn
from infra.settings import Settings
from trainguard.adapters.service_quotas import SERVICE_CODE as QUOTAS_SERVICE_CODE
from trainguard.domain.policy import TagKeys
from trainguard.domain.stall_alarms import LOG_SILENCE_NAMESPACE, OWNED_PREFIXES

Actions = Iterable[str]
# What a statement is given to: a function (its role), a role of its own (a spoke's role for a hub function), or a
# managed policy that several roles share (a spoke's launch statements, written once: infra/spoke_stack.py).
Function = lambda_.Function | iam.Role | iam.ManagedPolicy


@dataclass(frozen=True)
class Statement:
    """One statement a builder adds: its Sid, the group its actions come from, and the reason cdk-nag is
    given for its wildcard resources (None: its resources name no wildcard of their own)."""

    sid: str
    group: tuple[str, ...]
    reason: str | None = None


READ_JOBS = Statement("DescribeTrainingJobs", groups.TRAINING_JOB_READ_ACTIONS, groups.READ_JOBS_REASON)
LIST_JOBS = Statement("ListRunningTrainingJobs", groups.TRAINING_JOB_LIST_ACTIONS, groups.LIST_JOBS_REASON)
LAUNCH_JOBS = Statement("RelaunchOptedInTrainingJobs", groups.TRAINING_JOB_LAUNCH_ACTIONS, groups.TRAINING_JOBS_REASON)
TAG_ON_CREATE = Statement(
    "TagTheTrainingJobsItCreates", groups.TRAINING_JOB_TAG_ON_CREATE_ACTIONS, groups.TRAINING_JOBS_REASON
)
LAUNCH_ON_PLANS = Statement(
    "RelaunchOnTheJobsOwnTrainingPlans", groups.TRAINING_PLAN_LAUNCH_ACTIONS, groups.TRAINING_PLANS_REASON
)
PASS_EXECUTION_ROLES = Statement("PassConfiguredExecutionRolesToSageMaker", groups.PASS_ROLE_ACTIONS)
STOP_JOBS = Statement("StopOptedInTrainingJobs", groups.TRAINING_JOB_STOP_ACTIONS, groups.STOPPED_JOBS_REASON)
LIST_CHECKPOINTS = Statement("ListCheckpointBuckets", groups.CHECKPOINT_LIST_ACTIONS)
PUT_ALARMS = Statement("PutStallAlarms", groups.ALARM_PUT_ACTIONS, groups.STALL_ALARMS_REASON)
PUT_COMPOSITES = Statement(
    "PutCompositeStallAlarms", groups.COMPOSITE_ALARM_PUT_ACTIONS, groups.COMPOSITE_ALARMS_REASON
)
DELETE_ALARMS = Statement("DeleteStallAlarms", groups.ALARM_DELETE_ACTIONS, groups.STALL_ALARMS_REASON)
REARM_ALARMS = Statement("RearmStallAlarms", groups.ALARM_REARM_ACTIONS, groups.STALL_ALARMS_REASON)
LIST_ALARMS = Statement("ListAlarmsWithComposites", groups.ALARM_LIST_ACTIONS, groups.LIST_ALARMS_REASON)
PUBLISH_LOG_SILENCE = Statement("PublishLogSilence", groups.METRIC_PUBLISH_ACTIONS, groups.PUBLISH_METRICS_REASON)
READ_GPU_METRICS = Statement("ReadGpuMetrics", groups.METRIC_READ_ACTIONS, groups.READ_METRICS_REASON)
READ_TRAINING_LOGS = Statement("ReadTrainingJobLogs", groups.LOG_READ_ACTIONS, groups.TRAINING_LOGS_REASON)
REQUEST_QUOTAS = Statement("ReadAndRequestSageMakerQuotas", groups.QUOTA_SCOPED_ACTIONS, groups.SAGEMAKER_QUOTAS_REASON)
READ_QUOTAS = Statement("ListQuotasAndReadQuotaRequests", groups.UNSCOPED_QUOTA_ACTIONS, groups.UNSCOPED_QUOTAS_REASON)
CREATE_QUOTAS_ROLE = Statement("LetServiceQuotasCreateItsServiceLinkedRole", groups.SERVICE_LINKED_ROLE_ACTIONS)


_TO_SAGEMAKER = {"StringEquals": {"iam:PassedToService": groups.SAGEMAKER_PRINCIPAL}}


@dataclass(frozen=True)
class Grants:
    """The builders, and what they all need: the stack (ARNs of its account and region), the settings
    (opt-in tag, execution roles, checkpoint buckets), and the acknowledgments, given at the end."""

    stack: Stack
    settings: Settings
    acknowledgments: PendingAcknowledgments

    def add_statement(
        self,
        function: Function,
        statement: Statement,
        actions: Actions,
        resources: Sequence[str],
        conditions: dict[str, Any] | None = None,
    ) -> None:
        """`statement` with `actions` (a subset of its group; none, or no resources, adds nothing) on
        `resources`; with its reason, each resource's acknowledgment (cdk-nag's IAM5) on the role."""
        chosen = list(actions)
        if stray := [action for action in chosen if action not in statement.group]:
            raise ValueError(f"the statement {statement.sid} grants only {list(statement.group)}, not {stray}")
        if not chosen or not resources:
            return
        policy_statement = iam.PolicyStatement(
            sid=statement.sid, actions=chosen, resources=list(resources), conditions=conditions
        )
        holder: IConstruct
        if isinstance(function, iam.ManagedPolicy):
            holder = function
            function.add_statements(policy_statement)
        else:
            role = function if isinstance(function, iam.Role) else function.role
            assert role is not None
            holder = role
            role.add_to_principal_policy(policy_statement)
        if statement.reason is not None:
            for resource in resources:
                finding = f"AwsSolutions-IAM5[Resource::{nag_arn(resource)}]"
                self.acknowledgments.add(holder, finding, statement.reason)

    @property
    def training_jobs_arn(self) -> str:
        """Every training job of the stack's account and region (their names are their owners')."""
        return self.stack.format_arn(service="sagemaker", resource="training-job", resource_name="*")

    @property
    def stall_alarm_arns(self) -> list[str]:
        """Every alarm trainguard may own: one ARN pattern per name prefix."""
        return [
            self.stack.format_arn(
                service="cloudwatch",
                resource="alarm",
                resource_name=f"{prefix}*",
                arn_format=ArnFormat.COLON_RESOURCE_NAME,
            )
            for prefix in OWNED_PREFIXES
        ]

    def allow_what_it_calls(self, function: Function, needed: frozenset[str], log_group: logs.ILogGroup) -> set[str]:
        """Each statement with the actions of its group that `needed` holds; the actions it placed.
        PassRole is not among them: whose role is passed depends on the port that needs it (the stack's)."""
        builders = (
            (READ_JOBS, self.allow_reading_training_jobs),
            (LIST_JOBS, self.allow_listing_training_jobs),
            (LAUNCH_JOBS, self.allow_launching_opted_in_training_jobs),
            (TAG_ON_CREATE, self.allow_tagging_the_jobs_it_creates),
            (LAUNCH_ON_PLANS, self.allow_launching_on_training_plans),
            (STOP_JOBS, self.allow_stopping_opted_in_training_jobs),
            (LIST_CHECKPOINTS, self.allow_listing_checkpoint_buckets),
            (PUT_ALARMS, self.allow_putting_stall_alarms),
            (PUT_COMPOSITES, self.allow_putting_composite_alarms),
            (DELETE_ALARMS, self.allow_deleting_stall_alarms),
            (REARM_ALARMS, self.allow_rearming_stall_alarms),
            (LIST_ALARMS, self.allow_listing_alarms),
            (PUBLISH_LOG_SILENCE, self.allow_publishing_log_silence),
            (READ_GPU_METRICS, self.allow_reading_gpu_metrics),
            (REQUEST_QUOTAS, self.allow_requesting_sagemaker_quotas),
            (READ_QUOTAS, self.allow_reading_quotas),
            (CREATE_QUOTAS_ROLE, self.allow_creating_the_service_quotas_role),
        )
        placed: set[str] = set()
        for statement, builder in builders:
            if actions := [action for action in statement.group if action in needed]:
                builder(function, actions)
                placed.update(actions)
        if logs_needed := [action for action in READ_TRAINING_LOGS.group if action in needed]:
            self.allow_reading_training_logs(function, logs_needed, log_group=log_group)
            placed.update(logs_needed)
        return placed

    def _opt_in_tag(self, where: str) -> str:
        """The opt-in tag's condition key, on the request ("RequestTag") or on the job ("ResourceTag")."""
        return f"aws:{where}/{self.settings.tag_prefix}:enabled"

    # SageMaker training jobs, and S3.

    def allow_reading_training_jobs(self, function: Function, actions: Actions = READ_JOBS.group) -> None:
        """Describe any training job and read its tags (acknowledged with its own reason: the stall prober reads
        jobs it neither launches nor stops)."""
        self.add_statement(function, READ_JOBS, actions, [self.training_jobs_arn])

    def allow_listing_training_jobs(self, function: Function, actions: Actions = LIST_JOBS.group) -> None:
        """List the running training jobs, which ListTrainingJobs allows only on Resource *."""
        self.add_statement(function, LIST_JOBS, actions, ["*"])

    @property
    def launchable_types(self) -> dict[str, Any]:
        """The deployer's bound on what a launch may run on (setting launchable_instance_types), as conditions:
        every instance type of the request in the list, and at least one type in the request (infra/action_groups.py,
        INSTANCE_TYPES_KEY). None when the list is empty: the domain then changes no job's types."""
        types = list(self.settings.launchable_instance_types)
        if not types:
            return {}
        return {
            "ForAllValues:StringEquals": {groups.INSTANCE_TYPES_KEY: types},
            "Null": {groups.INSTANCE_TYPES_KEY: "false"},
        }

    def allow_launching_opted_in_training_jobs(self, function: Function, actions: Actions = LAUNCH_JOBS.group) -> None:
        """CreateTrainingJob only for a request that carries the opt-in tag, on the launchable types."""
        # Case ignored, as the code reads the opt-in tag (domain/policy.py) and as the stop grant does.
        conditions = {"StringEqualsIgnoreCase": {self._opt_in_tag("RequestTag"): "true"}, **self.launchable_types}
        self.add_statement(function, LAUNCH_JOBS, actions, [self.training_jobs_arn], conditions)

    def allow_tagging_the_jobs_it_creates(self, function: Function, actions: Actions = TAG_ON_CREATE.group) -> None:
        """AddTags only as part of the CreateTrainingJob that creates the job (sagemaker:TaggingAction), never on a job
        that exists, and only for a request with the opt-in tag and trainguard's mark of its own launches (retry-of
        on a relaunch, blocked-launch on a launch it made for a quota wall). The other keys are not bounded: a
        relaunch copies the failed job's own tags (domain/job_end.py), whose keys the deployer cannot know, and they
        land only on the job the same request creates (SECURITY.md, "What trainguard's roles may do")."""
        keys = TagKeys(self.settings.tag_prefix)
        conditions = {
            "StringEqualsIgnoreCase": {self._opt_in_tag("RequestTag"): "true"},
            "StringEquals": {groups.TAGGING_ACTION_KEY: groups.TAG_ON_CREATE},
            "ForAnyValue:StringEquals": {"aws:TagKeys": [keys.retry_of, keys.blocked_launch]},
        }
        self.add_statement(function, TAG_ON_CREATE, actions, [self.training_jobs_arn], conditions)

    def allow_launching_on_training_plans(self, function: Function, actions: Actions = LAUNCH_ON_PLANS.group) -> None:
        """CreateTrainingJob on this account's training plans and reserved capacity (a relaunch carries its own), on
        the launchable types."""
        plans = [
            self.stack.format_arn(service="sagemaker", resource=kind, resource_name="*")
            for kind in ("training-plan", "reserved-capacity")
        ]
        self.add_statement(function, LAUNCH_ON_PLANS, actions, plans, self.launchable_types or None)

    def allow_passing_execution_roles(self, function: Function, actions: Actions = PASS_EXECUTION_ROLES.group) -> None:
        """PassRole to SageMaker, for the configured execution roles only (nothing when there are none)."""
        self.add_statement(function, PASS_EXECUTION_ROLES, actions, self.settings.passable_role_arns, _TO_SAGEMAKER)

    def allow_passing_execution_roles_of_the_account(self, roles: Sequence[iam.Role]) -> None:
        """For a spoke, deployed alike in every enrolled account: PassRole to SageMaker for the configured execution
        roles of the account it is deployed in, by their exact ARNs. One policy per account that has listed roles,
        attached to `roles`, and created only in that account (a CloudFormation condition on AWS::AccountId), so a
        listed role of account A is passable in account A only (nothing where none is listed)."""
        by_account: dict[str, list[str]] = {}
        for arn in self.settings.passable_role_arns:
            by_account.setdefault(arn.split(":")[4], []).append(arn)
        for account, arns in by_account.items():
            in_account = CfnCondition(
                self.stack, f"DeployedIn{account}", expression=Fn.condition_equals(Aws.ACCOUNT_ID, account)
            )
            statement = iam.PolicyStatement(
                sid=PASS_EXECUTION_ROLES.sid,
                actions=list(PASS_EXECUTION_ROLES.group),
                resources=arns,
                conditions=_TO_SAGEMAKER,
            )
            policy = iam.Policy(self.stack, f"PassExecutionRolesOf{account}", roles=list(roles), statements=[statement])
            cfn_policy = policy.node.default_child
            assert isinstance(cfn_policy, iam.CfnPolicy)
            cfn_policy.cfn_options.condition = in_account

    def allow_stopping_opted_in_training_jobs(self, function: Function, actions: Actions = STOP_JOBS.group) -> None:
        """StopTrainingJob only on a job whose own opt-in tag is true (its tag, not the request's)."""
        opted_in = {"StringEqualsIgnoreCase": {self._opt_in_tag("ResourceTag"): "true"}}
        self.add_statement(function, STOP_JOBS, actions, [self.training_jobs_arn], opted_in)

    def allow_listing_checkpoint_buckets(self, function: Function, actions: Actions = LIST_CHECKPOINTS.group) -> None:
        """ListBucket only on the configured checkpoint buckets (nothing when there are none)."""
        buckets = [f"arn:{Aws.PARTITION}:s3:::{bucket}" for bucket in self.settings.checkpoint_buckets]
        self.add_statement(function, LIST_CHECKPOINTS, actions, buckets)

    # CloudWatch alarms and metrics, CloudWatch Logs: Resource * only where nothing narrower allows the action.

    def allow_putting_stall_alarms(self, function: Function, actions: Actions = PUT_ALARMS.group) -> None:
        """Put (and tag) metric alarms with trainguard's name prefixes."""
        self.add_statement(function, PUT_ALARMS, actions, self.stall_alarm_arns)

    def allow_putting_composite_alarms(self, function: Function, actions: Actions = PUT_COMPOSITES.group) -> None:
        self.add_statement(function, PUT_COMPOSITES, actions, ["*"])

    def allow_deleting_stall_alarms(self, function: Function, actions: Actions = DELETE_ALARMS.group) -> None:
        self.add_statement(function, DELETE_ALARMS, actions, self.stall_alarm_arns)

    def allow_rearming_stall_alarms(self, function: Function, actions: Actions = REARM_ALARMS.group) -> None:
        """Set an alarm (and its GPU parts in ALARM, read by name: metric alarms only) back to OK."""
        self.add_statement(function, REARM_ALARMS, actions, self.stall_alarm_arns)

    def allow_listing_alarms(self, function: Function, actions: Actions = LIST_ALARMS.group) -> None:
        """List trainguard's alarms, composites included, which DescribeAlarms shows only to Resource *."""
        self.add_statement(function, LIST_ALARMS, actions, ["*"])

    def allow_publishing_log_silence(self, function: Function, actions: Actions = PUBLISH_LOG_SILENCE.group) -> None:
        """PutMetricData into trainguard's own namespace, where the log-silence alarms read."""
        in_namespace = {"StringEquals": {"cloudwatch:namespace": LOG_SILENCE_NAMESPACE}}
        self.add_statement(function, PUBLISH_LOG_SILENCE, actions, ["*"], in_namespace)

    def allow_reading_gpu_metrics(self, function: Function, actions: Actions = READ_GPU_METRICS.group) -> None:
        """GetMetricData: the GPU figures of the job being judged."""
        self.add_statement(function, READ_GPU_METRICS, actions, ["*"])

    def allow_reading_training_logs(
        self, function: Function, actions: Actions = READ_TRAINING_LOGS.group, *, log_group: logs.ILogGroup
    ) -> None:
        """FilterLogEvents in SageMaker's training log group only."""
        self.add_statement(function, READ_TRAINING_LOGS, actions, [log_group.log_group_arn])

    # Service Quotas.

    def allow_requesting_sagemaker_quotas(self, function: Function, actions: Actions = REQUEST_QUOTAS.group) -> None:
        """RequestServiceQuotaIncrease on this account's SageMaker quotas (any quota code)."""
        quotas = self.stack.format_arn(service="servicequotas", resource=QUOTAS_SERVICE_CODE, resource_name="*")
        self.add_statement(function, REQUEST_QUOTAS, actions, [quotas])

    def allow_reading_quotas(self, function: Function, actions: Actions = READ_QUOTAS.group) -> None:
        self.add_statement(function, READ_QUOTAS, actions, ["*"])

    def allow_creating_the_service_quotas_role(
        self, function: Function, actions: Actions = CREATE_QUOTAS_ROLE.group
    ) -> None:
        """The service-linked role Service Quotas needs for its first request, and no other role."""
        role = self.stack.format_arn(
            service="iam", region="", resource="role", resource_name=groups.SERVICE_QUOTAS_ROLE_PATH
        )
        for_service_quotas = {"StringEquals": {"iam:AWSServiceName": groups.SERVICE_QUOTAS_PRINCIPAL}}
        self.add_statement(function, CREATE_QUOTAS_ROLE, actions, [role], for_service_quotas)
