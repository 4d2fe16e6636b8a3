"""NotifierPort: FakeNotifier and adapters/notifier.py's Notifier on moto's SNS, read back from an SQS inbox."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import boto3
import pytest

from tests.contracts.conftest import IMPLEMENTATIONS, REGION
from tests.fakes import FakeNotifier
from trainguard.adapters.notifier import Notifier
from trainguard.domain.message_kinds import MessageKind
from trainguard.domain.messages import Notification
from trainguard.workflows.ports import NotifierPort

FAILED = Notification(
    "[trainguard] relaunched j",
    "What happened\n  It failed.",
    {"decision": "retry", "job_name": "j"},
    kind=MessageKind.JOB_RELAUNCHED,
)

Published = tuple[str, str, dict[str, str]]  # subject, body, attributes


@dataclass
class Subject:
    notifier: NotifierPort
    published: Callable[[], list[Published]]


@pytest.fixture(params=IMPLEMENTATIONS)
def subject(request: pytest.FixtureRequest) -> Subject:
    if request.param == "fake":
        fake = FakeNotifier()
        return Subject(fake, lambda: [(n.subject, n.body, dict(n.attributes)) for n in fake.sent])
    request.getfixturevalue("aws")
    sns, sqs = boto3.client("sns", region_name=REGION), boto3.client("sqs", region_name=REGION)
    topic = sns.create_topic(Name="tg")["TopicArn"]
    inbox = sqs.create_queue(QueueName="inbox")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=inbox, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)

    def published() -> list[Published]:
        bodies = [
            json.loads(m["Body"]) for m in sqs.receive_message(QueueUrl=inbox, MaxNumberOfMessages=10)["Messages"]
        ]
        return [
            (b["Subject"], b["Message"], {k: v["Value"] for k, v in b.get("MessageAttributes", {}).items()})
            for b in bodies
        ]

    return Subject(Notifier(sns, topic), published)


def test_a_notification_is_published_with_its_subject_body_and_attributes(subject: Subject) -> None:
    first, second = subject.notifier.publish(FAILED), subject.notifier.publish(FAILED)
    assert first and second and first != second  # a message id each
    assert subject.published() == [(FAILED.subject, FAILED.body, FAILED.attributes)] * 2
