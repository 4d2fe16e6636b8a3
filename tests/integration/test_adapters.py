"""The adapters against moto (DynamoDB, SNS, S3, Scheduler) and botocore's Stubber (SageMaker). What each adapter
shares with its in-memory fake (the ledger's steps, leases and budget among it) is in tests/contracts."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from tests.conftest import LEDGER_TABLE
from tests.fakes import NOW, described_job
from trainguard.adapters.checkpoints import CheckpointReader
from trainguard.adapters.ledger import Ledger
from trainguard.adapters.notifier import Notifier
from trainguard.adapters.sagemaker import SageMakerJobs
from trainguard.adapters.scheduler import RelaunchScheduler, schedule_name
from trainguard.domain.console_links import Link
from trainguard.domain.messages import Notification
from trainguard.workflows.ports import (
    JobNotFound,
    LaunchRefused,
    LaunchResult,
    NameTaken,
)

REGION = "us-east-1"


@pytest.fixture
def ledger(dynamodb: Any) -> Ledger:
    return Ledger(dynamodb, LEDGER_TABLE)


def test_notifications_carry_filterable_attributes(aws: None) -> None:
    sns = boto3.client("sns", region_name=REGION)
    sqs = boto3.client("sqs", region_name=REGION)
    topic = sns.create_topic(Name="tg")["TopicArn"]
    queue = sqs.create_queue(QueueName="inbox")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
    Notifier(sns, topic).publish(Notification("[trainguard] subject", "body", {"decision": "retry", "job_name": "j"}))
    [message] = sqs.receive_message(QueueUrl=queue)["Messages"]
    body = json.loads(message["Body"])
    assert body["Subject"] == "[trainguard] subject" and body["Message"] == "body"
    assert body["MessageAttributes"]["decision"] == {"Type": "String", "Value": "retry"}


def _inbox(sns: Any, sqs: Any, topic: str, name: str) -> str:
    queue = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
    return str(queue)


def test_a_chat_topic_gets_the_custom_notification_format(aws: None) -> None:
    sns = boto3.client("sns", region_name=REGION)
    sqs = boto3.client("sqs", region_name=REGION)
    topic, chat = (sns.create_topic(Name=name)["TopicArn"] for name in ("tg", "tg-chat"))
    email_inbox, chat_inbox = _inbox(sns, sqs, topic, "email"), _inbox(sns, sqs, chat, "chat")
    body = "What happened\n  It failed.\n\nLinks\n  Job:  https://example.com/job"
    # The chat's next steps come from the notification's links (data), never from the body's text.
    links = (Link("job", "https://example.com/job"),)
    message_id = Notifier(sns, topic, chat).publish(
        Notification("[trainguard] failed j", body, {"job_name": "j"}, links)
    )
    [email] = sqs.receive_message(QueueUrl=email_inbox)["Messages"]
    assert json.loads(email["Body"])["Message"] == body
    [posted] = sqs.receive_message(QueueUrl=chat_inbox)["Messages"]
    card = json.loads(json.loads(posted["Body"])["Message"])
    assert card["version"] == "1.0" and card["source"] == "custom" and card["id"] == message_id
    assert card["content"]["title"] == "failed j" and card["content"]["nextSteps"] == [
        "Open the job: https://example.com/job"
    ]


def test_a_chat_publish_failure_does_not_undo_the_notification(aws: None) -> None:
    sns = boto3.client("sns", region_name=REGION)
    topic = sns.create_topic(Name="tg")["TopicArn"]
    missing_chat_topic = topic + "-deleted"
    notifier = Notifier(sns, topic, missing_chat_topic)
    assert notifier.publish(Notification("[trainguard] s", "body", {"job_name": "j"}))
    assert notifier.chat_failures == 1


def test_the_newest_checkpoint_is_found_across_pages(aws: None) -> None:
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket="ckpt")
    for i in range(1005):
        s3.put_object(Bucket="ckpt", Key=f"run/step-{i:05d}/shard.pt", Body=b"x")
    s3.put_object(Bucket="ckpt", Key="other-run/x", Body=b"x")
    state = CheckpointReader(s3).read("s3://ckpt/run/")
    assert state.object_count == 1005 and state.newest_object_time is not None
    assert CheckpointReader(s3).read("s3://ckpt/empty/").is_empty
    assert CheckpointReader(s3).read("s3://missing-bucket/x").listing_error.startswith("NoSuchBucket")
    assert CheckpointReader(s3).read("https://not-s3").listing_error
    assert not CheckpointReader(s3).read("").configured


def test_a_schedule_is_created_once_per_failed_job(aws: None) -> None:
    client = boto3.client("scheduler", region_name=REGION)
    client.create_schedule_group(Name="trainguard")
    scheduler = RelaunchScheduler(
        client,
        group_name="trainguard",
        target_arn="arn:aws:lambda:us-east-1:123456789012:function:launcher",
        role_arn="arn:aws:iam::123456789012:role/scheduler",
    )
    at = datetime(2026, 11, 29, 12, 10, tzinfo=UTC)
    first = scheduler.schedule_relaunch("job-" + "x" * 70, at, "capacity")
    assert scheduler.schedule_relaunch("job-" + "x" * 70, at, "capacity") == first
    schedule = client.get_schedule(Name=first, GroupName="trainguard")
    assert schedule["ScheduleExpression"] == "at(2026-11-29T12:10:00)"
    assert schedule["ActionAfterCompletion"] == "DELETE"
    assert len(first) <= 64
    assert schedule_name("a") != schedule_name("b")


def test_a_lineage_record_written_again_keeps_the_first(ledger: Ledger) -> None:
    ledger.record_lineage("job", 1, "job-retry1", "job", NOW)
    ledger.record_lineage("job", 1, "job-retry1", "job", NOW + timedelta(minutes=3))  # a redelivery after a death
    items = boto3.client("dynamodb", region_name=REGION).query(
        TableName="ledger",
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "lineage#job"}},
    )["Items"]
    assert [(i["job_name"]["S"], i["created_at"]["S"]) for i in items] == [("job-retry1", NOW.isoformat())]


def _sagemaker() -> tuple[SageMakerJobs, Stubber]:
    client = boto3.client("sagemaker", region_name=REGION)
    return SageMakerJobs(client), Stubber(client)


def test_describe_reads_the_tags_with_list_tags() -> None:
    jobs, stub = _sagemaker()
    description = described_job()
    stub.add_response("describe_training_job", description, {"TrainingJobName": "llama-pretrain"})
    stub.add_response(
        "list_tags",
        {"Tags": [{"Key": "trainguard:enabled", "Value": "true"}], "NextToken": "n"},
        {"ResourceArn": description["TrainingJobArn"], "MaxResults": 100},
    )
    stub.add_response(
        "list_tags",
        {"Tags": [{"Key": "team", "Value": "llm"}]},
        {"ResourceArn": description["TrainingJobArn"], "MaxResults": 100, "NextToken": "n"},
    )
    with stub:
        job = jobs.describe("llama-pretrain")
    assert not isinstance(job, JobNotFound)
    assert job.tags == {"trainguard:enabled": "true", "team": "llm"}
    assert job.checkpoint_s3_uri == "s3://ckpt-bucket/llama-pretrain/"


def test_a_missing_job_is_not_found() -> None:
    jobs, stub = _sagemaker()
    stub.add_client_error("describe_training_job", "ValidationException", "Requested resource not found.")
    with stub:
        assert isinstance(jobs.describe("gone"), JobNotFound)


REQUEST = {
    "TrainingJobName": "j-retry1",
    "RoleArn": "arn:aws:iam::123456789012:role/TrainingRole",
    "OutputDataConfig": {"S3OutputPath": "s3://b/o"},
    "AlgorithmSpecification": {"TrainingImage": "img", "TrainingInputMode": "File"},
    "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 10},
    "StoppingCondition": {"MaxRuntimeInSeconds": 60},
}


def test_create_sends_the_request_as_built() -> None:
    jobs, stub = _sagemaker()
    stub.add_response(
        "create_training_job", {"TrainingJobArn": "arn:aws:sagemaker:us-east-1:1:training-job/j"}, REQUEST
    )
    with stub:
        assert jobs.create(REQUEST, "j", "trainguard:retry-of") is LaunchResult.CREATED


def test_a_duplicate_name_is_success_only_if_it_is_our_relaunch() -> None:
    for owner, expected in (("j", LaunchResult.ALREADY_EXISTS), ("someone-else", None)):
        jobs, stub = _sagemaker()
        stub.add_client_error("create_training_job", "ResourceInUse", "Training job names must be unique")
        desc = described_job("j-retry1", status="InProgress")
        stub.add_response("describe_training_job", desc)
        stub.add_response("list_tags", {"Tags": [{"Key": "trainguard:retry-of", "Value": owner}]})
        with stub:
            if expected is None:
                with pytest.raises(NameTaken):
                    jobs.create(REQUEST, "j", "trainguard:retry-of")
            else:
                assert jobs.create(REQUEST, "j", "trainguard:retry-of") is expected


def test_a_refusal_keeps_the_code_and_message_and_throttling_is_raised_for_a_retry() -> None:
    jobs, stub = _sagemaker()
    stub.add_client_error("create_training_job", "ResourceLimitExceeded", "The account-level service limit ...")
    stub.add_client_error("create_training_job", "ThrottlingException", "Rate exceeded")
    with stub:
        with pytest.raises(LaunchRefused) as refused:
            jobs.create(REQUEST, "j", "trainguard:retry-of")
        assert refused.value.code == "ResourceLimitExceeded"
        with pytest.raises(Exception, match="Rate exceeded"):
            jobs.create(REQUEST, "j", "trainguard:retry-of")
