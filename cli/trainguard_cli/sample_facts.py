"""The facts `trainguard test-notification` feeds trainguard's composers: a sample job as DescribeTrainingJob gives
it, its checkpoints, its quota error, and the deploy's default settings. Only facts are written here; every
sentence of a sample comes from the product's code (trainguard_cli.sample_notifications)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from trainguard.adapters.service_model import create_training_job_shape
from trainguard.config import FunctionSettings
from trainguard.domain.checkpoints import CheckpointState
from trainguard.domain.job_end import Assessment, Refusal, RelaunchPlan, RelaunchSettings, assess_job_end, plan_relaunch
from trainguard.domain.lineage import lineage_start
from trainguard.domain.model import TrainingJob
from trainguard.domain.policy import JobPolicy, PolicyDefaults, TagKeys, read_job_policy
from trainguard.domain.stalls import StallThresholds
from trainguard.domain.watched_job import WatchedJob
from trainguard.events.training_job import job_from_description

SAMPLE_JOB = "trainguard-test-notification"
# AWS's documentation account ID: the sample job's ARN names no real account.
SAMPLE_ACCOUNT = "123456789012"
SAMPLE_ROLE = f"arn:aws:iam::{SAMPLE_ACCOUNT}:role/SageMakerTrainingRole"
SAMPLE_IMAGE = f"{SAMPLE_ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/sample-training:latest"
SAMPLE_CHECKPOINTS = f"s3://example-checkpoints/{SAMPLE_JOB}/"
# Real FailureReason texts, from tests/fixtures/failure_reasons.json with their sources:
# github.com/aws/sagemaker-python-sdk/issues/70, the grand-challenge SageMaker backend's exact-match constant, and
# DIAGNijmegen/rse-grand-challenge#2631 (the capacity error).
INTERNAL_ERROR = "InternalServerError: We encountered an internal error. Please try again."
OUT_OF_MEMORY = (
    "ClientError: Please use an instance type with more memory, "
    "or reduce the size of job data processed on an instance."
)
CAPACITY_ERROR = (
    "CapacityError: Unable to provision requested ML compute capacity. Please retry using a different ML instance type."
)
SAMPLE_QUOTA = "ml.p4d.24xlarge for training job usage"  # a SageMaker quota name (Service Quotas)
QUOTA_ERROR_CODE = "ResourceLimitExceeded"
# CreateTrainingJob's answer when a quota is short, in the form docs/aws-facts.md quotes (as in
# github.com/aws/amazon-sagemaker-examples/issues/1543), sized for the sample's 4 instances.
QUOTA_ERROR = (
    f"The account-level service limit '{SAMPLE_QUOTA}' is 4 Instances, with current utilization of 4 Instances and "
    "a request delta of 4 Instances. Please use AWS Service Quotas to request an increase for this quota."
)
# The same code for an instance type the region does not offer (tests/fixtures/failure_reasons.json, from
# github.com/aws/amazon-sagemaker-examples/issues/1001): no quota can fix it.
NOT_OFFERED_ERROR = "The requested resource training-job/ml.p2.xlarge is not available in this region"
SAMPLE_LOG_LINE = "[rank 0] step 4120/90000 loss=1.83"  # the sample job's last log line before its silence
# A job a SageMaker pipeline launched (ownership.py reads this tag), with a sample execution ARN.
PIPELINE_TAGS = {
    "sagemaker:pipeline-execution-arn": f"arn:aws:sagemaker:us-east-1:{SAMPLE_ACCOUNT}:pipeline/sample/execution/x1"
}
KEYS = TagKeys()
SETTINGS = FunctionSettings()  # the deploy's defaults (trainguard.config); the policy's are the domain's, which act
# The types a deployer lets trainguard launch (setting launchable_instance_types; none by default, which allows no
# fallback): the sample's own type and the alternatives its tags list.
LAUNCHABLE = ("ml.p4d.24xlarge", "ml.p4de.24xlarge", "ml.p5.48xlarge")
ALTERNATIVES_TAG = {KEYS.fallback_types: "ml.p5.48xlarge:2+ml.p4de.24xlarge"}


def sample_job(
    status: str, reason: str, now: datetime, tags: dict[str, str] | None = None, **fields: Any
) -> TrainingJob:
    """The sample job as DescribeTrainingJob and ListTags would give it: opted in, 4 x ml.p4d.24xlarge, 6 h old."""
    description = {
        "TrainingJobName": SAMPLE_JOB,
        "TrainingJobArn": f"arn:aws:sagemaker:us-east-1:{SAMPLE_ACCOUNT}:training-job/{SAMPLE_JOB}",
        "TrainingJobStatus": status,
        "SecondaryStatus": "Failed" if status == "Failed" else "Training",
        "RoleArn": SAMPLE_ROLE,
        "AlgorithmSpecification": {"TrainingImage": SAMPLE_IMAGE, "TrainingInputMode": "File"},
        "ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 4, "VolumeSizeInGB": 500},
        "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
        "OutputDataConfig": {"S3OutputPath": f"s3://example-output/{SAMPLE_JOB}/"},
        "CheckpointConfig": {"S3Uri": SAMPLE_CHECKPOINTS, "LocalPath": "/opt/ml/checkpoints"},
        "CreationTime": now - timedelta(hours=6),
        "TrainingStartTime": now - timedelta(hours=5, minutes=50),
        **({"FailureReason": reason, "TrainingEndTime": now} if reason else {}),
        **fields,
    }
    tag_list = [{"Key": key, "Value": value} for key, value in {KEYS.enabled: "true", **(tags or {})}.items()]
    return job_from_description(description, tag_list)


def sample_checkpoints(now: datetime, newest_minutes_ago: int = 25, every_minutes: int = 30) -> CheckpointState:
    """Eight checkpoint writes `every_minutes` apart, the newest `newest_minutes_ago` minutes ago."""
    times = tuple(now - timedelta(minutes=newest_minutes_ago + every_minutes * n) for n in range(8))
    return CheckpointState(SAMPLE_CHECKPOINTS, times[0], len(times), object_times=times)


def job_end(job: TrainingJob) -> tuple[JobPolicy, Assessment]:
    """The job's policy (the deploy's defaults) and what its end calls for, as the job-events function reads them."""
    policy = read_job_policy(job.tags, PolicyDefaults(), KEYS)
    return policy, assess_job_end(job, policy)


def relaunch_plan(job: TrainingJob, now: datetime) -> RelaunchPlan | Refusal:
    """The relaunch the domain plans for the sample job, as the job-events function plans it (workflows/relaunch)."""
    policy, assessment = job_end(job)
    settings = RelaunchSettings(
        passable_role_arns=(SAMPLE_ROLE,),
        capacity_backoff_minutes=SETTINGS.capacity_backoff_minutes,
        capacity_backoff_max_minutes=SETTINGS.capacity_backoff_max_minutes,
        launchable_instance_types=LAUNCHABLE,
    )
    shape = create_training_job_shape()
    checkpoint = sample_checkpoints(now)
    start = lineage_start(job, KEYS, None)  # the sample starts its lineage: its own ResourceConfig
    return plan_relaunch(job, assessment, policy, checkpoint, settings, KEYS, shape, now, lineage_start=start)


def watched(now: datetime, **fields: Any) -> WatchedJob:
    """The sample job as the prober keeps it in the ledger."""
    return WatchedJob(
        job_name=SAMPLE_JOB,
        instance_type="ml.p4d.24xlarge",
        host_count=4,
        thresholds=StallThresholds(),
        training_since=now - timedelta(hours=5, minutes=50),
        checkpoint_uri=SAMPLE_CHECKPOINTS,
        **fields,
    )
