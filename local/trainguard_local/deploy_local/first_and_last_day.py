"""`make deploy-local`'s checks of a deploy's first and last day: `trainguard test-notification` reaches a
subscriber of the deployed topic, and after `cdk destroy`, `trainguard uninstall-alarms` leaves no stall alarm.

Both commands run as a user runs them: the CLI in a process of its own, pointed at moto server by the same
environment as the CDK CLI (AWS_ENDPOINT_URL on localhost, dummy credentials)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import Any

from trainguard.adapters.alarms import StallAlarms
from trainguard.domain.message_kinds import MessageKind
from trainguard.domain.stall_alarms import OWNED_PREFIXES, plan_stall_alarms
from trainguard.domain.stalls import StallThresholds
from trainguard_cli.deploy_commands import TOPIC_OUTPUT
from trainguard_cli.sample_notifications import KIND_ATTRIBUTE, TEST_MARK
from trainguard_local.deploy_local.resource_checks import require

CLI_TIMEOUT_SECONDS = 120
SUBSCRIBER_QUEUE = "deploy-local-subscriber"
# A job watched when the stack goes: its alarms are what `cdk destroy` leaves (4 hosts: a log-silence alarm and an
# idle-GPU alarm, no composite, which moto 5.2 cannot create).
WATCHED_JOB = "llama-pretrain"
SOMEONE_ELSES_ALARM = "someone-elses-alarm"  # uninstall-alarms must leave it


def trainguard_cli(env: Mapping[str, str], *arguments: str) -> dict[str, Any]:
    """Run `trainguard ARGUMENTS --json` in its own process; its answer, or the failure with its output."""
    command = [sys.executable, "-m", "trainguard_cli.main", *arguments, "--json"]
    result = subprocess.run(
        command, env=dict(env), capture_output=True, text=True, timeout=CLI_TIMEOUT_SECONDS, check=False
    )
    require(result.returncode == 0, f"trainguard {arguments[0]} exited {result.returncode}: {result.stderr[-2000:]}")
    return dict(json.loads(result.stdout))


def subscribe_a_queue(client: Callable[[str], Any], stack_name: str) -> str:
    """An SQS queue subscribed to the stack's topic (read from the stack's output, as the CLI reads it)."""
    (stack,) = client("cloudformation").describe_stacks(StackName=stack_name)["Stacks"]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
    require(TOPIC_OUTPUT in outputs, f"{stack_name} has no output {TOPIC_OUTPUT}: {sorted(outputs)}")
    sqs = client("sqs")
    queue_url = str(sqs.create_queue(QueueName=SUBSCRIBER_QUEUE)["QueueUrl"])
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    client("sns").subscribe(TopicArn=outputs[TOPIC_OUTPUT], Protocol="sqs", Endpoint=queue_arn)
    return queue_url


def delivered(client: Callable[[str], Any], queue_url: str) -> list[dict[str, Any]]:
    """The SNS envelopes the queue received."""
    sqs, envelopes = client("sqs"), []
    while batch := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", []):
        envelopes += [json.loads(message["Body"]) for message in batch]
        for message in batch:
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    return envelopes


def check_test_notification(client: Callable[[str], Any], env: Mapping[str, str], stack_name: str) -> str:
    """`trainguard test-notification` publishes every kind of message (MessageKind), and each reaches the
    subscriber, marked as a test: the kinds are read from the delivered messages' `kind` attributes."""
    queue_url = subscribe_a_queue(client, stack_name)
    answer = trainguard_cli(env, "test-notification", "--stack", stack_name)
    published = {p["message_id"]: p["subject"] for p in answer["published"]}
    received = {e["MessageId"]: e for e in delivered(client, queue_url)}
    require(set(received) == set(published), f"delivered {sorted(received)}, published {sorted(published)}")
    kinds = set()
    for message_id, envelope in received.items():
        attributes = envelope.get("MessageAttributes", {})
        marked = envelope["Subject"].startswith(TEST_MARK) and attributes.get("test", {}).get("Value") == "true"
        require(marked and envelope["Subject"] == published[message_id], f"not marked as a test: {envelope}")
        kinds.add(attributes.get(KIND_ATTRIBUTE, {}).get("Value"))
    missing = sorted(kind.value for kind in MessageKind if kind.value not in kinds)
    require(not missing and len(received) == len(MessageKind), f"no test notification of {missing}: {answer}")
    return f"{len(received)} of {len(MessageKind)} kinds delivered to an SQS subscriber, each marked {TEST_MARK}"


def watch_a_job(client: Callable[[str], Any]) -> list[str]:
    """The stall alarms the job-events function puts for a job that trains (its adapter, its plan), and an alarm
    that is not trainguard's; the names of trainguard's."""
    cloudwatch = client("cloudwatch")
    plan = plan_stall_alarms(WATCHED_JOB, "ml.p4d.24xlarge", 4, StallThresholds())
    StallAlarms(cloudwatch).create(plan)
    cloudwatch.put_metric_alarm(**{**plan.metric_alarms[0], "AlarmName": SOMEONE_ELSES_ALARM})
    return sorted(plan.all_names)


def trainguard_alarms(client: Callable[[str], Any]) -> list[str]:
    """Every alarm DescribeAlarms lists under trainguard's prefixes, of either kind."""
    names = []
    for prefix in OWNED_PREFIXES:
        pages = (
            client("cloudwatch")
            .get_paginator("describe_alarms")
            .paginate(AlarmNamePrefix=prefix, AlarmTypes=["MetricAlarm", "CompositeAlarm"])
        )
        names += [a["AlarmName"] for page in pages for a in page["MetricAlarms"] + page["CompositeAlarms"]]
    return sorted(names)


def check_alarms_left_by_destroy(client: Callable[[str], Any], watched: list[str]) -> str:
    left = trainguard_alarms(client)
    require(left == watched, f"after cdk destroy, expected the watched job's alarms {watched}, found {left}")
    return f"{len(left)} alarms of {WATCHED_JOB} left by cdk destroy: {', '.join(left)}"


def check_uninstall_alarms(client: Callable[[str], Any], env: Mapping[str, str]) -> str:
    """`trainguard uninstall-alarms` deletes them; DescribeAlarms with trainguard's prefixes then lists nothing, and
    the alarm that is not trainguard's is still there."""
    answer = trainguard_cli(env, "uninstall-alarms")
    left = trainguard_alarms(client)
    require(left == [] and answer["remaining"] == [], f"trainguard alarms left after uninstall-alarms: {left}")
    others = client("cloudwatch").describe_alarms(AlarmNames=[SOMEONE_ELSES_ALARM])["MetricAlarms"]
    require(len(others) == 1, f"uninstall-alarms deleted {SOMEONE_ELSES_ALARM}, which is not trainguard's")
    return f"deleted {len(answer['deleted'])}; DescribeAlarms {'/'.join(OWNED_PREFIXES)}*: none left"
