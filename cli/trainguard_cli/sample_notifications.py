"""A sample of each message trainguard sends, rendered by the functions' own composers (trainguard.domain.messages)
from sample facts put through the domain's own decisions, and marked as a test: what `trainguard
test-notification` publishes.

Only the facts are written here (a job's description, its checkpoints, its log silence); every sentence of a
message comes from the product's code, so a change of wording shows in the test notification too. Not sampled: the
messages whose sentences a workflow writes from what AWS answered it (a launch refused for a quota, and a launch
that waited for one: workflows/quota_wall.py, launch_blocked.py, quota_watch.py), and the stack's own CloudWatch
alarms, whose messages CloudWatch writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from trainguard.domain.checkpoint_health import judge_checkpoints
from trainguard.domain.checkpoints import CheckpointState
from trainguard.domain.job_end import Assessment, assess_job_end
from trainguard.domain.log_rhythm import LogRhythm
from trainguard.domain.messages import (
    Notification,
    compose_job_end_notification,
    compose_quota_request_closed_notification,
)
from trainguard.domain.model import Category, Decision, TrainingJob
from trainguard.domain.naming import retry_job_name
from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard.domain.policy import JobPolicy, PolicyDefaults, TagKeys, read_job_policy
from trainguard.domain.stall_messages import compose_prober_notice, compose_stall_notification
from trainguard.domain.stalls import StallEvidence, StallSignal, StallThresholds, judge_stall, read_stall_thresholds
from trainguard.domain.watched_job import WatchedJob, stuck_stopping_reason
from trainguard.events.training_job import job_from_description
from trainguard.workflows.stall_alarm import what_was_done

SAMPLE_JOB = "trainguard-test-notification"
# AWS's documentation account ID: the sample job's ARN names no real account.
SAMPLE_ACCOUNT = "123456789012"
SAMPLE_CHECKPOINTS = f"s3://example-checkpoints/{SAMPLE_JOB}/"
# Real FailureReason texts, from tests/fixtures/failure_reasons.json with their sources:
# github.com/aws/sagemaker-python-sdk/issues/70 and the grand-challenge SageMaker backend's exact-match constant.
INTERNAL_ERROR = "InternalServerError: We encountered an internal error. Please try again."
OUT_OF_MEMORY = (
    "ClientError: Please use an instance type with more memory, "
    "or reduce the size of job data processed on an instance."
)
SAMPLE_QUOTA = "ml.p4d.24xlarge for training job usage"  # a SageMaker quota name (Service Quotas)
TEST_MARK = "[trainguard TEST]"
TEST_NOTE = (
    "TEST NOTIFICATION, sent by `trainguard test-notification` to check that trainguard's messages reach you. "
    f"Nothing happened to any training job: {SAMPLE_JOB} is a sample, and so is every figure below."
)
KEYS = TagKeys()


def marked_as_test(notification: Notification) -> Notification:
    """The notification with the test mark first in its subject and body, and the attribute `test` = true (a
    subscription's filter policy can leave tests out)."""
    subject = notification.subject.replace("[trainguard]", TEST_MARK, 1)
    attributes = {**notification.attributes, "test": "true"}
    return replace(notification, subject=subject, body=f"{TEST_NOTE}\n\n{notification.body}", attributes=attributes)


def sample_notifications(region: str, now: datetime) -> dict[str, Notification]:
    """Each message kind, by name, as trainguard would send it about the sample job at `now`, marked as a test."""
    return {kind: marked_as_test(build(region, now)) for kind, build in SAMPLES.items()}


def _job(status: str, reason: str, now: datetime, **fields: Any) -> TrainingJob:
    """The sample job as DescribeTrainingJob and ListTags would give it: opted in, 4 x ml.p4d.24xlarge, 6 h old."""
    description = {
        "TrainingJobName": SAMPLE_JOB,
        "TrainingJobArn": f"arn:aws:sagemaker:us-east-1:{SAMPLE_ACCOUNT}:training-job/{SAMPLE_JOB}",
        "TrainingJobStatus": status,
        "SecondaryStatus": "Failed" if status == "Failed" else "Training",
        "RoleArn": f"arn:aws:iam::{SAMPLE_ACCOUNT}:role/SageMakerTrainingRole",
        "ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 4, "VolumeSizeInGB": 500},
        "CheckpointConfig": {"S3Uri": SAMPLE_CHECKPOINTS, "LocalPath": "/opt/ml/checkpoints"},
        "CreationTime": now - timedelta(hours=6),
        "TrainingStartTime": now - timedelta(hours=5, minutes=50),
        **({"FailureReason": reason, "TrainingEndTime": now} if reason else {}),
        **fields,
    }
    return job_from_description(description, [{"Key": KEYS.enabled, "Value": "true"}])


def _checkpoints(now: datetime, newest_minutes_ago: int = 25, every_minutes: int = 30) -> CheckpointState:
    """Eight checkpoint writes `every_minutes` apart, the newest `newest_minutes_ago` minutes ago."""
    times = tuple(now - timedelta(minutes=newest_minutes_ago + every_minutes * n) for n in range(8))
    return CheckpointState(SAMPLE_CHECKPOINTS, times[0], len(times), object_times=times)


def _job_end(job: TrainingJob) -> tuple[JobPolicy, Assessment]:
    """The job's policy (the deploy's defaults) and what its end calls for, as the job-events function reads them."""
    policy = read_job_policy(job.tags, PolicyDefaults(), KEYS)
    return policy, assess_job_end(job, policy)


def relaunched(region: str, now: datetime) -> Notification:
    job = _job("Failed", INTERNAL_ERROR, now)
    _, assessment = _job_end(job)
    outcome = assessment.outcome(OutcomeKind.RELAUNCHED, new_job_name=retry_job_name(job.name, 1))
    return compose_job_end_notification(job, outcome, _checkpoints(now), (), region, now)


def not_retried(region: str, now: datetime) -> Notification:
    job = _job("Failed", OUT_OF_MEMORY, now)
    _, assessment = _job_end(job)
    return compose_job_end_notification(
        job, assessment.outcome(OutcomeKind.NOTIFIED), _checkpoints(now), (), region, now
    )


def stall_stopped(region: str, now: datetime) -> Notification:
    job = _job("InProgress", "", now)
    policy, _ = _job_end(job)
    thresholds = read_stall_thresholds(job.tags, StallThresholds(), KEYS)
    last_line = now - timedelta(minutes=thresholds.stall_minutes + 7)
    evidence = StallEvidence(
        last_log_time=last_line,
        last_log_line="[rank 0] step 4120/90000 loss=1.83",
        gpu_by_host={f"{job.name}/algo-{n}": 0.0 for n in range(1, 5)},
        gpus_per_host=8,
        rhythm=LogRhythm(),
    )
    verdict = judge_stall(StallSignal.LOG_SILENCE, job, policy, thresholds, evidence, now)
    did, kind = what_was_done(verdict, stopped=True, muted_until=None)
    outcome = Outcome(kind, job.name, verdict.reason, Decision.STOP, Category.STALL)
    return compose_stall_notification(
        job.name, StallSignal.LOG_SILENCE.value, verdict, evidence, _checkpoints(now), did, outcome, region, now
    )


def _watched(now: datetime, **fields: Any) -> WatchedJob:
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


def checkpoint_stale(region: str, now: datetime) -> Notification:
    """Checkpoints written every 20 minutes until 3 hours ago: the prober's judgement, told once."""
    job = _watched(now)
    health = judge_checkpoints(_checkpoints(now, newest_minutes_ago=180, every_minutes=20), job.training_since, now)
    kind, category = OutcomeKind.CHECKPOINT_STALE, Category.CHECKPOINT_STALE
    return compose_prober_notice(Outcome(kind, job.job_name, health.reason, Decision.NOTIFY, category), region, now)


def stuck_stopping(region: str, now: datetime) -> Notification:
    job = _watched(now, stopping_since=now - timedelta(minutes=42))
    why = stuck_stopping_reason(job, now)
    outcome = Outcome(OutcomeKind.STUCK_STOPPING, job.job_name, why, Decision.NOTIFY, Category.STUCK_STOPPING)
    return compose_prober_notice(outcome, region, now)


def quota_request_approved(region: str, now: datetime) -> Notification:
    return compose_quota_request_closed_notification(SAMPLE_QUOTA, "8", "sample-request", "", "APPROVED", region, now)


# Each kind, by the name `trainguard test-notification --kind` takes.
SAMPLES: dict[str, Callable[[str, datetime], Notification]] = {
    "relaunched": relaunched,
    "not-retried": not_retried,
    "stall-stopped": stall_stopped,
    "checkpoint-stale": checkpoint_stale,
    "stuck-stopping": stuck_stopping,
    "quota-request-approved": quota_request_approved,
}
