"""`trainguard test-notification` after a deploy, and `trainguard uninstall-alarms` after `cdk destroy`, with your
credentials (or the local stand-in through AWS_ENDPOINT_URL). docs/deploying.md says when to run each.

IAM: cloudformation:DescribeStacks on the stack (test-notification without --topic-arn), sns:ListSubscriptionsByTopic
and sns:Publish on the topic(s), kms:GenerateDataKey and kms:Decrypt on the topics' key (an SSE topic's publisher
needs both: infra/notifications.py); cloudwatch:DescribeAlarms (on *: composite alarms are listed only so) and
cloudwatch:DeleteAlarms on arn:aws:cloudwatch:<region>:<account>:alarm:trainguard-* (uninstall-alarms).
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from trainguard_cli.inputs import EXIT_NO, NotFound, UnusableInput, aws_session

# One way to declare a command (its --json, its keys in the help): the operator commands'.
from trainguard_cli.operator_commands import add_command
from trainguard_cli.sample_notifications import SAMPLES

DEFAULT_STACK = "TrainGuard"  # app.STACK_NAME (a test checks they agree)
# The stack's outputs (infra/stack.py TOPIC_OUTPUT and CHAT_TOPIC_OUTPUT; a test checks they agree).
TOPIC_OUTPUT = "NotificationTopicArn"
CHAT_TOPIC_OUTPUT = "ChatTopicArn"
PENDING = "PendingConfirmation"  # ListSubscriptionsByTopic's SubscriptionArn of an unconfirmed subscription
TEST_NOTIFICATION_KEYS = """JSON keys (stable): topic_arn, chat_topic_arn ("" when none), region,
  subscriptions: {confirmed, pending} (null when they could not be listed),
  published: [{kind, subject, message_id}] (kind: the message's kind, as --kind names it)"""
UNINSTALL_KEYS = (
    "JSON keys (stable): region, found, deleted, remaining (alarm names; exit 1 when any remains after a deletion)"
)


TEST_ABOUT = (
    "Publish a sample of each kind of message trainguard sends to the deployed topic, marked as a test (subject "
    "'[trainguard TEST] ...', message attributes test=true and kind=<its kind>), so that you see what reaches your "
    "subscribers before the first real failure does. The topic comes from the stack's output NotificationTopicArn, "
    "or --topic-arn. Nothing happens to any training job."
)
UNINSTALL_ABOUT = (
    "Delete every stall alarm trainguard made for a job (trainguard-stall-* and trainguard-gpu-part-*) in this account "
    "and region. `cdk destroy` leaves the alarms of the jobs watched at that moment, because the functions that delete "
    "them go with the stack: run this after `cdk destroy`."
)


def add_deploy_commands(commands: Any) -> None:
    summary = "publish a sample of each message to the deployed topic, marked as a test"
    keys, run, render = TEST_NOTIFICATION_KEYS, run_test_notification, test_notification_text
    test = add_command(commands, "test-notification", summary, TEST_ABOUT, keys, run, render, ())
    test.add_argument("--stack", default=DEFAULT_STACK, help=f"the deployed stack's name (default: {DEFAULT_STACK})")
    test.add_argument("--topic-arn", metavar="ARN", help="publish to this topic instead of the stack's")
    kinds = [kind.value for kind in SAMPLES]
    test.add_argument(
        "--kind",
        action="append",
        choices=kinds,
        metavar="KIND",
        help=f"only this message kind, one of {', '.join(kinds)}; repeat it (default: all {len(kinds)})",
    )
    summary = "delete the per-job stall alarms `cdk destroy` leaves behind"
    uninstall = add_command(
        commands, "uninstall-alarms", summary, UNINSTALL_ABOUT, UNINSTALL_KEYS, run_uninstall_alarms, uninstall_text, ()
    )
    uninstall.add_argument("--dry-run", action="store_true", help="list the alarms, delete nothing")


def stack_topics(cloudformation: Any, stack: str) -> tuple[str, str]:
    """The stack's topic and chat topic ("" when it has none), from its outputs."""
    from botocore.exceptions import ClientError

    try:
        (described,) = cloudformation.describe_stacks(StackName=stack)["Stacks"]
    except ClientError as err:  # ValidationError "Stack with id X does not exist" (CloudFormation's answer)
        if err.response.get("Error", {}).get("Code") == "ValidationError" and "does not exist" in str(err):
            raise NotFound(f"no stack named {stack} in this account and region (--stack names another)") from None
        raise
    outputs = {o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])}
    if TOPIC_OUTPUT not in outputs:
        raise UnusableInput(
            f"stack {stack} has no output {TOPIC_OUTPUT}: deployed by an older trainguard? Deploy again, or pass "
            "--topic-arn"
        )
    return outputs[TOPIC_OUTPUT], outputs.get(CHAT_TOPIC_OUTPUT, "")


def subscription_counts(sns: Any, topic_arn: str) -> dict[str, int] | None:
    """Confirmed and pending subscriptions of the topic; None when they cannot be listed (no right to)."""
    from botocore.exceptions import ClientError

    counts = {"confirmed": 0, "pending": 0}
    try:
        for page in sns.get_paginator("list_subscriptions_by_topic").paginate(TopicArn=topic_arn):
            for subscription in page.get("Subscriptions", []):
                counts["pending" if subscription["SubscriptionArn"] == PENDING else "confirmed"] += 1
    except ClientError:
        return None
    return counts


def run_test_notification(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from trainguard.adapters.notifier import Notifier
    from trainguard.domain.message_kinds import MessageKind
    from trainguard_cli.sample_notifications import sample_notifications

    session = aws_session()
    if args.topic_arn:
        topic_arn, chat_topic_arn = args.topic_arn, ""
    else:
        topic_arn, chat_topic_arn = stack_topics(session.client("cloudformation"), args.stack)
    sns = session.client("sns")
    subscriptions = subscription_counts(sns, topic_arn)
    notifier = Notifier(sns, topic_arn, chat_topic_arn)
    kinds = [MessageKind(kind) for kind in args.kind] if args.kind else None
    samples = sample_notifications(session.region_name, datetime.now(UTC), kinds)
    published = []
    for kind, notification in samples.items():
        message_id = notifier.publish(notification)
        published.append({"kind": kind.value, "subject": notification.subject, "message_id": message_id})
    answer = {
        "topic_arn": topic_arn,
        "chat_topic_arn": chat_topic_arn,
        "region": session.region_name,
        "subscriptions": subscriptions,
        "published": published,
    }
    return answer, 0


def test_notification_text(answer: dict[str, Any]) -> str:
    lines = [f"Published {len(answer['published'])} test notifications to {answer['topic_arn']}"]
    if answer["chat_topic_arn"]:
        lines[0] += f" (and their chat copies to {answer['chat_topic_arn']})"
    width = max((len(p["kind"]) for p in answer["published"]), default=0)
    lines += [f"  {p['kind']:<{width}}  {p['subject']}" for p in answer["published"]]
    counts = answer["subscriptions"]
    if counts is None:
        lines.append("Its subscriptions could not be listed (sns:ListSubscriptionsByTopic was refused).")
    elif counts["confirmed"] == 0:
        lines.append(
            f"No one will receive them: the topic has no confirmed subscription ({counts['pending']} pending "
            "confirmation). Confirm the email AWS sent each address in notification_emails, or subscribe an endpoint."
        )
    else:
        lines.append(f"{counts['confirmed']} confirmed subscriptions will receive them ({counts['pending']} pending).")
    return "\n".join(lines)


def run_uninstall_alarms(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from trainguard.adapters.alarms import StallAlarms

    session = aws_session()
    alarms = StallAlarms(session.client("cloudwatch"))
    found = sorted(alarms.list_owned())
    if not args.dry_run and found:
        alarms.delete(found)  # composites first, in the batches DeleteAlarms takes (trainguard.adapters.alarms)
    remaining = sorted(alarms.list_owned())
    deleted = [] if args.dry_run else [name for name in found if name not in remaining]
    answer = {"region": session.region_name, "found": found, "deleted": deleted, "remaining": remaining}
    return answer, EXIT_NO if remaining and not args.dry_run else 0


def uninstall_text(answer: dict[str, Any]) -> str:
    region = answer["region"]
    if not answer["found"]:
        return f"No trainguard stall alarm in {region}."
    lines = [f"{len(answer['found'])} trainguard stall alarms in {region}; deleted {len(answer['deleted'])}."]
    if answer["remaining"]:
        lines.append(f"Still there ({len(answer['remaining'])}):")
        lines += [f"  {name}" for name in answer["remaining"]]
    return "\n".join(lines)
