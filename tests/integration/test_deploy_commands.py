"""`trainguard test-notification` and `trainguard uninstall-alarms` against moto: the messages an SQS subscriber of
the stack's topic receives, and the alarms left in CloudWatch."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tests.unit.test_message_rules import channels, rule_breaks
from trainguard.adapters.alarms import StallAlarms
from trainguard.domain.message_kinds import MessageKind
from trainguard.domain.messages import EVENT_TYPE_JOB_ENDED, EVENT_TYPE_QUOTA, EVENT_TYPE_STALL
from trainguard.domain.stall_alarms import plan_stall_alarms
from trainguard.domain.stalls import StallThresholds
from trainguard.domain.user_text import shown
from trainguard_cli import deploy_commands
from trainguard_cli.deploy_commands import DEFAULT_STACK, TOPIC_OUTPUT
from trainguard_cli.inputs import EXIT_NO, EXIT_NOT_FOUND
from trainguard_cli.main import main
from trainguard_cli.sample_facts import (
    CAPACITY_ERROR,
    INTERNAL_ERROR,
    NOT_OFFERED_ERROR,
    OUT_OF_MEMORY,
    PIPELINE_TAGS,
    QUOTA_ERROR,
    SAMPLE_JOB,
    SAMPLE_LOG_LINE,
    SAMPLE_QUOTA,
)
from trainguard_cli.sample_notifications import KIND_ATTRIBUTE, TEST_MARK, TEST_NOTE, sample_notifications
from trainguard_cli.sample_training import MUTE_RULE

REGION = "us-east-1"
NOW = datetime(2026, 12, 1, 3, 7, 12, tzinfo=UTC)


class FrozenClock(datetime):
    """The command's clock, held at NOW: the samples' times (a last log line, the signature) then match."""

    @classmethod
    def now(cls, tz: Any = None) -> FrozenClock:
        return cls.fromtimestamp(NOW.timestamp(), tz)


# A stack with the one output test-notification reads, as infra/stack.py names it.
TEMPLATE = {
    "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
    "Outputs": {TOPIC_OUTPUT: {"Value": {"Ref": "Topic"}}},
}


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        yield


def deployed_topic_with_a_queue() -> tuple[str, str]:
    """The stack's topic (created through CloudFormation, read back from its output) and an SQS queue subscribed."""
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    cloudformation.create_stack(StackName=DEFAULT_STACK, TemplateBody=json.dumps(TEMPLATE))
    (topic_arn,) = [o["OutputValue"] for o in cloudformation.describe_stacks()["Stacks"][0]["Outputs"]]
    sqs = boto3.client("sqs", region_name=REGION)
    queue_url = sqs.create_queue(QueueName="subscriber")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    boto3.client("sns", region_name=REGION).subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn)
    return topic_arn, queue_url


def received(queue_url: str) -> list[dict[str, Any]]:
    """The SNS envelopes the queue holds (not raw delivery: Subject, Message and MessageAttributes)."""
    sqs, envelopes = boto3.client("sqs", region_name=REGION), []
    while batch := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", []):
        envelopes += [json.loads(m["Body"]) for m in batch]
        sqs.delete_message_batch(
            QueueUrl=queue_url,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)],
        )
    return envelopes


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, (json.loads(out) if "--json" in args and out else out), err


def test_every_kind_reaches_a_subscriber_of_the_stacks_topic_marked_as_a_test(
    aws: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    topic_arn, queue_url = deployed_topic_with_a_queue()
    monkeypatch.setattr(deploy_commands, "datetime", FrozenClock)
    code, answer, err = run(capsys, "test-notification", "--json")
    assert code == 0, err
    assert answer["topic_arn"] == topic_arn and answer["subscriptions"] == {"confirmed": 1, "pending": 0}

    envelopes = received(queue_url)
    assert {e["MessageId"] for e in envelopes} == {p["message_id"] for p in answer["published"]}
    expected = sample_notifications(REGION, NOW)
    delivered: dict[str, dict[str, Any]] = {}
    for envelope in envelopes:
        attributes = {name: a["Value"] for name, a in envelope["MessageAttributes"].items()}
        assert envelope["Subject"].startswith(TEST_MARK + " ") and attributes["test"] == "true"
        assert envelope["Message"].startswith(TEST_NOTE + "\n\nWhat happened\n")
        kind = MessageKind(attributes[KIND_ATTRIBUTE])
        assert kind.value not in delivered, f"{kind} delivered twice"
        delivered[kind.value] = attributes
        # The product's own rendering at the same moment: the message is the composers', not a copy of them.
        assert (envelope["Subject"], envelope["Message"]) == (expected[kind].subject, expected[kind].body)
        assert attributes == expected[kind].attributes
    # Read from what was delivered: a kind added to MessageKind without a sample fails here.
    missing = [kind.value for kind in MessageKind if kind.value not in delivered]
    assert missing == [], f"no test notification of {missing}"
    assert {a["event_type"] for a in delivered.values()} == {EVENT_TYPE_JOB_ENDED, EVENT_TYPE_STALL, EVENT_TYPE_QUOTA}


# What the samples' facts hold that a job, a script, a team or AWS wrote: data, which the rules leave alone.
SAMPLE_USER_TEXTS = (
    SAMPLE_JOB,
    INTERNAL_ERROR,
    OUT_OF_MEMORY,
    CAPACITY_ERROR,
    QUOTA_ERROR,
    NOT_OFFERED_ERROR,
    SAMPLE_LOG_LINE,
    SAMPLE_QUOTA,
    MUTE_RULE,
    *PIPELINE_TAGS.values(),
)


@pytest.mark.parametrize("kind", list(MessageKind))
def test_each_sample_keeps_the_rules_of_a_message_read_at_3_am(kind: MessageKind) -> None:
    """The message-rules test's checks (tests/unit/test_message_rules.py) on each test notification, in every
    channel, test note included."""
    [notification] = sample_notifications(REGION, NOW, [kind]).values()
    # Masked only where the sample fed it in whole (a quota name alone is not the whole quota error that holds it),
    # and only a text a rule could trip on: one without a parenthesis or a figure masked would only hide trainguard's
    # own words it shares ("capacity" in "(capacity backoff)").
    fed = tuple(t for t in SAMPLE_USER_TEXTS if shown(t) in notification.body and re.search(r"[()\d]", t))
    for channel, (text, chat) in channels(notification).items():
        assert rule_breaks(text, fed, chat) == [], f"{kind}, {channel}:\n{text}"


def test_one_kind_to_a_topic_named_on_the_command_line_in_words(aws: None, capsys: pytest.CaptureFixture[str]) -> None:
    topic_arn, queue_url = deployed_topic_with_a_queue()
    code, out, err = run(capsys, "test-notification", "--topic-arn", topic_arn, "--kind", "stall-stopped")
    assert code == 0, err
    assert out.startswith(f"Published 1 test notifications to {topic_arn}\n  stall-stopped ")
    assert "1 confirmed subscriptions will receive them" in out
    [envelope] = received(queue_url)
    assert envelope["Subject"] == f"{TEST_MARK} trainguard-test-notification stalled: stopped"


def test_a_topic_nobody_confirmed_is_said_so(aws: None, capsys: pytest.CaptureFixture[str]) -> None:
    topic_arn = boto3.client("sns", region_name=REGION).create_topic(Name="lonely")["TopicArn"]
    code, out, _ = run(capsys, "test-notification", "--topic-arn", topic_arn, "--kind", "job-relaunched")
    assert code == 0 and "No one will receive them: the topic has no confirmed subscription" in out


def test_a_stack_that_is_not_there_exits_not_found(aws: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "test-notification", "--stack", "NoSuchStack")
    assert code == EXIT_NOT_FOUND and "no stack named NoSuchStack" in err


def test_uninstall_alarms_deletes_every_stall_alarm_and_nothing_else(
    aws: None, capsys: pytest.CaptureFixture[str]
) -> None:
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    plans = [plan_stall_alarms(job, "ml.g5.12xlarge", 2, StallThresholds()) for job in ("llama", "bert")]
    for plan in plans:
        StallAlarms(cloudwatch).create(plan)
    cloudwatch.put_metric_alarm(**{**plans[0].metric_alarms[0], "AlarmName": "someone-elses-alarm"})
    ours = sorted(name for plan in plans for name in plan.all_names)

    code, answer, _ = run(capsys, "uninstall-alarms", "--dry-run", "--json")
    assert (code, answer["found"], answer["deleted"], answer["remaining"]) == (0, ours, [], ours)

    code, answer, _ = run(capsys, "uninstall-alarms", "--json")
    assert (code, answer["found"], answer["deleted"], answer["remaining"]) == (0, ours, ours, [])
    left = cloudwatch.describe_alarms(AlarmTypes=["MetricAlarm", "CompositeAlarm"])
    assert [a["AlarmName"] for a in left["MetricAlarms"] + left["CompositeAlarms"]] == ["someone-elses-alarm"]
    code, out, _ = run(capsys, "uninstall-alarms")
    assert (code, out.strip()) == (0, f"No trainguard stall alarm in {REGION}.")


def test_uninstall_alarms_exits_1_when_an_alarm_survives(
    aws: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    StallAlarms(boto3.client("cloudwatch", region_name=REGION)).create(
        plan_stall_alarms("llama", "ml.g5.12xlarge", 2, StallThresholds())
    )
    monkeypatch.setattr(StallAlarms, "delete", lambda self, names: None)  # a deletion that did not happen
    code, out, _ = run(capsys, "uninstall-alarms")
    assert code == EXIT_NO and "Still there (2):" in out
