"""Training jobs that another service launched and owns: trainguard never relaunches them; it stops only a hang.

A parent (a tuning job, a pipeline, an AWS Batch queue, ...) runs, retries and counts its own training
jobs, and tags propagate from it, so its jobs can carry the user's opt-in tag. A relaunch behind its back
is a copy it does not know of: the pipeline step still fails, Batch retries on its own, and the copy
burns GPU hours nobody asked for. So a job with a parent's marker is never relaunched, moved to a fallback
or given a quota request, whatever its tags say; the ledger records why, and the owner is told at most
once per decision, with the parent's own retry named.

A verified hang is the one thing trainguard acts on (issue 27): stopping it is what the owner would do, and the
parent's own failure handling takes over from the stopped job (`after_stop`: what AWS documents each parent does
then). The setting `stop_stalled_parent_jobs` turns this off; the job is then told, never stopped. The stopped
job's end is recorded, not relaunched and not told again: the stop's message already told the owner.

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
    # What the parent does with a child that was stopped, as far as AWS documents it (docs/decisions.md, "Hangs of
    # jobs a parent owns", has the quotes and their pages); told when trainguard stops a hang of its job.
    after_stop: str = ""


PARENT_KINDS: tuple[ParentKind, ...] = (
    ParentKind(
        "a hyperparameter tuning job",
        description_fields=("TuningJobArn",),
        # botocore DescribeTrainingJobResponse.TuningJobArn: "The Amazon Resource Name (ARN) of the associated
        # hyperparameter tuning job if the training job was launched by a hyperparameter tuning job."
        tells_owner=False,
        own_retry="the tuning job's TrainingJobDefinition.RetryStrategy",
        source="botocore sagemaker DescribeTrainingJobResponse.TuningJobArn",
        # botocore TrainingJobStatusCounters.Stopped: "The number of training jobs launched by a hyperparameter tuning
        # job that were manually stopped"; RetryStrategy: "The retry strategy to use when a training job fails due to
        # an InternalServerError" (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_RetryStrategy.html).
        after_stop=(
            "The tuning job counts it as Stopped in its TrainingJobStatusCounters. Its RetryStrategy covers only "
            "InternalServerError failures, so it does not retry this trial; AWS does not document whether the tuner "
            "starts another trial in its place."
        ),
    ),
    ParentKind(
        "an Autopilot (AutoML) job",
        description_fields=("AutoMLJobArn",),
        tells_owner=False,
        own_retry="Autopilot, which retries its candidates internally",
        # https://docs.aws.amazon.com/sagemaker/latest/dg/pipelines-retry-policy.html: "Jobs running inside both
        # the tuning and AutoML steps conduct retries internally"
        source="botocore sagemaker DescribeTrainingJobResponse.AutoMLJobArn",
        # botocore AutoMLCandidate.CandidateStatus: Completed | InProgress | Failed | Stopped | Stopping.
        after_stop=(
            "Autopilot can record the candidate as Stopped; AWS does not document whether it trains another "
            "candidate in its place."
        ),
    ),
    ParentKind(
        "a Ground Truth labeling job",
        description_fields=("LabelingJobArn",),
        # "The Amazon Resource Name (ARN) of the SageMaker Ground Truth labeling job that created the transform
        # or training job."
        tells_owner=False,
        own_retry="the labeling job",
        source="botocore sagemaker DescribeTrainingJobResponse.LabelingJobArn",
        after_stop="AWS does not document what a labeling job does when its training job is stopped.",
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
        # The retry policy's SageMaker exception types are InternalServerError, EC2 capacity and resource limits
        # (pipelines-retry-policy.html); none is a stopped job. botocore's StepStatus has Stopped and Failed, and AWS
        # does not say which a step whose job was stopped outside the pipeline takes.
        after_stop=(
            "A training step's RetryPolicies retry only SageMaker.JOB_INTERNAL_ERROR, SageMaker.CAPACITY_ERROR and "
            "SageMaker.RESOURCE_LIMIT, and a stopped job is none of them; AWS does not document how the step ends. "
            "Run the execution again with RetryPipelineExecution, or start a new one."
        ),
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
        # "FAILED | Stopped | Stopped | SageMaker Training job was manually stopped using StopTrainingJob."
        # (https://docs.aws.amazon.com/batch/latest/userguide/service-job-status.html); the retry strategy retries
        # failed service jobs (service-job-retries.html). The statusReason of a stopped job is not documented.
        after_stop=(
            "AWS Batch marks the service job FAILED. Its retryStrategy then starts a new attempt if attempts are "
            "left and no evaluateOnExit rule exits it; AWS does not document the statusReason Batch gives a stopped "
            "job, so a rule that matches only it cannot be written from the docs."
        ),
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
        after_stop=(
            "AWS does not document what a SageMaker task of Step Functions reports when its job is stopped outside "
            "it; the state's Retry and Catch decide on whatever it reports."
        ),
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
        f"never relaunches it or requests quotas for it, whatever its tags say. Use {parent.kind.own_retry}."
    )


STOP_SETTING = "stop_stalled_parent_jobs"


def stall_left_to_parent(reason: str, parent: Parent) -> str:
    """Why a verified hang of a parent's job is told, not stopped: the deployment turned those stops off."""
    return (
        f"{reason}. Not stopped: the setting {STOP_SETTING} is off, so trainguard only tells. {owner_sentence(parent)}"
    )


def stall_stopped_for_parent(reason: str, parent: Parent) -> str:
    """Why a verified hang of a parent's job is stopped, and what follows: never a relaunch, the parent decides."""
    return (
        f"{reason}. The job belongs to {parent.describe()}, which decides what follows: trainguard never relaunches it"
    )


def decide_after_stall_stop(parent: Parent, stall_reason: str) -> tuple[Decision, str]:
    """A parent's job that trainguard stopped as hung has ended: recorded (IGNORE), never relaunched, and not told
    again, since the stop's own message told the owner and named what the parent does next."""
    first = stall_reason.split(". ", 1)[0]  # the evidence; the rest names the parent, said again here
    return Decision.IGNORE, (
        f"trainguard stopped the job as stalled ({first}). No relaunch: the job belongs to {parent.describe()}, which "
        f"decides what follows. {parent.kind.after_stop} The owner was told when it was stopped."
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
