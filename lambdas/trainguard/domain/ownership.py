"""Training jobs that another service launched and owns: trainguard never acts on them.

A parent (a tuning job, a pipeline, an AWS Batch queue, ...) runs, retries and counts its own training
jobs, and tags propagate from it, so its jobs can carry the user's opt-in tag. A relaunch behind its back
is a copy it does not know of: the pipeline step still fails, Batch retries on its own, and the copy
burns GPU hours nobody asked for. So a job with a parent's marker is never relaunched, stopped for a stall
or given a quota request, whatever its tags say; the ledger records why, and the owner is told at most
once per decision, with the parent's own retry named.

A marker in either the description (DescribeTrainingJob), the tags (ListTags), the job's name or, for a
launch seen only through CloudTrail, the caller's identity is enough: a doubt leaves the job alone.
Each marker is cited beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trainguard.domain.model import Category, Classification, Decision
from trainguard.domain.policy import TagKeys


@dataclass(frozen=True)
class ParentKind:
    name: str  # what a person calls it: "a SageMaker Pipelines execution"
    # The description fields, tag keys, tag key/value pairs, job-name prefixes and caller-ARN fragments
    # that mark a job it launched.
    description_fields: tuple[str, ...] = ()
    tag_keys: tuple[str, ...] = ()
    tag_values: tuple[tuple[str, str], ...] = ()
    name_prefixes: tuple[str, ...] = ()
    caller_markers: tuple[str, ...] = ()
    # Tell the owner when trainguard would have acted (relaunch, quota request, stop); False for parents that
    # launch jobs by the dozen and report on them themselves (tuning, AutoML, labeling): recorded, not told.
    tells_owner: bool = True
    # Failures the parent retries by itself: not even worth a notice.
    retries_itself: frozenset[Category] = frozenset()
    own_retry: str = ""  # what the owner should use instead of trainguard
    source: str = ""


PARENT_KINDS: tuple[ParentKind, ...] = (
    ParentKind(
        "a hyperparameter tuning job",
        description_fields=("TuningJobArn",),
        # botocore DescribeTrainingJobResponse.TuningJobArn: "The Amazon Resource Name (ARN) of the associated
        # hyperparameter tuning job if the training job was launched by a hyperparameter tuning job."
        tells_owner=False,
        own_retry="the tuning job's TrainingJobDefinition.RetryStrategy",
        source="botocore sagemaker DescribeTrainingJobResponse.TuningJobArn",
    ),
    ParentKind(
        "an Autopilot (AutoML) job",
        description_fields=("AutoMLJobArn",),
        tells_owner=False,
        own_retry="Autopilot, which retries its candidates internally",
        # https://docs.aws.amazon.com/sagemaker/latest/dg/pipelines-retry-policy.html: "Jobs running inside both
        # the tuning and AutoML steps conduct retries internally"
        source="botocore sagemaker DescribeTrainingJobResponse.AutoMLJobArn",
    ),
    ParentKind(
        "a Ground Truth labeling job",
        description_fields=("LabelingJobArn",),
        # "The Amazon Resource Name (ARN) of the SageMaker Ground Truth labeling job that created the transform
        # or training job."
        tells_owner=False,
        own_retry="the labeling job",
        source="botocore sagemaker DescribeTrainingJobResponse.LabelingJobArn",
    ),
    ParentKind(
        "a SageMaker Pipelines execution",
        # The tags Pipelines puts on the jobs its steps launch. AWS's own SDK reads the first as the marker of a
        # pipeline's job (aws/sagemaker-python-sdk src/sagemaker/lineage/context.py, pipeline_execution_arn:
        # `if tag["Key"] == "sagemaker:pipeline-execution-arn"`); users report both keys as "assigned
        # automatically" (getindata/kedro-sagemaker#20).
        tag_keys=("sagemaker:pipeline-execution-arn", "sagemaker:pipeline-step-name"),
        own_retry=(
            "the training step's RetryPolicies (ExceptionType SageMaker.JOB_INTERNAL_ERROR, SageMaker.CAPACITY_ERROR, "
            "SageMaker.RESOURCE_LIMIT), which start a new job the pipeline knows of"
        ),
        source="https://docs.aws.amazon.com/sagemaker/latest/dg/pipelines-retry-policy.html",
    ),
    ParentKind(
        "an AWS Batch job queue",
        # AWS Batch for SageMaker Training creates its jobs through the service-linked role
        # AWSServiceRoleForAWSBatchWithSagemaker, whose managed policy AWSBatchServiceRolePolicyForSageMaker (v1)
        # allows sagemaker:CreateTrainingJob only on "arn:aws:sagemaker:*:*:training-job/AWSBatch*": every job Batch
        # launches is named AWSBatch... (the service-job events page shows
        # "training-job/AWSBatchmy-training-job88b6...").
        # A user may name a job so too; the prefix leaves it alone, the safe side.
        name_prefixes=("AWSBatch",),
        caller_markers=("AWSServiceRoleForAWSBatchWithSagemaker",),
        # "When a SageMaker Training job fails due to insufficient capacity, AWS Batch retries the job automatically
        # until capacity becomes available. [...] These capacity-based retries don't consume your configured retry
        # attempts." (https://docs.aws.amazon.com/batch/latest/userguide/service-job-retries.html)
        retries_itself=frozenset({Category.CAPACITY}),
        own_retry=(
            "the service job's retryStrategy (attempts, and evaluateOnExit rules on onStatusReason such as "
            "'Received status from SageMaker: InternalServerError*'); Batch retries capacity errors by itself"
        ),
        source="https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AWSBatchServiceRolePolicyForSageMaker.html",
    ),
    ParentKind(
        "an AWS Step Functions execution",
        # Step Functions' SageMaker integration tags what it starts (seen in public DescribeHyperParameterTuningJob
        # and ProcessingJob outputs: "AWS_STEP_FUNCTIONS_EXECUTION_ARN", "MANAGED_BY_AWS": "STARTED_BY_STEP_FUNCTIONS";
        # aws/aws-cdk#32536 added sagemaker:AddTags to its CreateTrainingJob task for it). Public code, not an AWS page.
        tag_keys=("AWS_STEP_FUNCTIONS_EXECUTION_ARN",),
        tag_values=(("MANAGED_BY_AWS", "STARTED_BY_STEP_FUNCTIONS"),),
        own_retry="the state's Retry field in the state machine",
        source="https://docs.aws.amazon.com/step-functions/latest/dg/connect-sagemaker.html",
    ),
)


@dataclass(frozen=True)
class Parent:
    kind: ParentKind
    marker: str  # what showed it: "tag sagemaker:pipeline-execution-arn=arn:...", "name prefix AWSBatch"

    def describe(self) -> str:
        return f"{self.kind.name}, known by its {self.marker}"


def find_parent(
    *,
    job_name: str,
    description: Mapping[str, Any],
    tags: Mapping[str, str],
    caller_arn: str = "",
) -> Parent | None:
    """The service that launched this job and owns it, or None when nothing marks one."""
    for kind in PARENT_KINDS:
        marker = _marker(kind, job_name, description, tags, caller_arn)
        if marker:
            return Parent(kind, marker)
    return None


def _marker(
    kind: ParentKind, job_name: str, description: Mapping[str, Any], tags: Mapping[str, str], caller_arn: str
) -> str:
    for field in kind.description_fields:
        value = description.get(field)
        if isinstance(value, str) and value.strip():
            return f"{field} {value}"
    for key in kind.tag_keys:
        if key in tags:
            return f"tag {key}={_short(tags[key])}"
    for key, value in kind.tag_values:
        if tags.get(key, "").strip().upper() == value:
            return f"tag {key}={value}"
    for prefix in kind.name_prefixes:
        if job_name.startswith(prefix):
            return f"job name starts with {prefix}"
    for fragment in kind.caller_markers:
        if fragment in caller_arn:
            return f"launched by {caller_arn}"
    return ""


def _short(value: str) -> str:
    return value if len(value) <= 120 else value[:117] + "..."


def owner_sentence(parent: Parent) -> str:
    """The sentence a reason and a notification give: who owns the job, and what to use instead."""
    return (
        f"The job belongs to {parent.describe()}. That parent runs and retries its own training jobs; trainguard "
        f"never relaunches, stops or requests quotas for it, whatever its tags say. Use {parent.kind.own_retry}."
    )


def decide_for_owned_job(classification: Classification, parent: Parent) -> tuple[Decision, str]:
    """What trainguard does about a parent's job whose end (or refused launch) reads as `classification`:
    never act. It tells the owner (NOTIFY) only when it would have acted (a relaunch, a quota request) and the
    parent does not retry that failure by itself; otherwise the end is only recorded (IGNORE)."""
    would_act = classification.decision in (Decision.RETRY, Decision.QUOTA)
    retried_by_parent = classification.category in parent.kind.retries_itself
    if would_act and parent.kind.tells_owner and not retried_by_parent:
        return Decision.NOTIFY, f"{classification.reason} Not done: {owner_sentence(parent)}"
    if would_act and retried_by_parent:
        why = f"{parent.kind.name} retries {classification.category.value} failures by itself"
    else:
        why = f"{parent.kind.name} reports on its own jobs"
    return Decision.IGNORE, f"{classification.reason} Left alone, nobody told ({why}): {owner_sentence(parent)}"


def trainguard_mark(tags: Mapping[str, str], keys: TagKeys) -> str:
    """The tag that shows trainguard made this launch (a relaunch, or a launch that waited for a quota), or ""."""
    return next((key for key in (keys.retry_of, keys.blocked_launch) if key in tags), "")
