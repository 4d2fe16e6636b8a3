"""The chat copy of a notification follows Amazon Q Developer's custom-notification event schema.

Schema: https://docs.aws.amazon.com/chatbot/latest/adminguide/custom-notifs.html ("Event schema"):
top level `version`, `source`, `id`, `content` {textType, title, description, nextSteps, keywords},
`metadata` {threadId, summary, eventType, relatedResources, additionalContext}; `version` "1.0",
`source` "custom", `textType` "client-markdown".
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from trainguard.domain.chat_messages import compose_chat_message
from trainguard.domain.classification import Category
from trainguard.domain.message_kinds import MessageKind
from trainguard.domain.messages import Notification, compose_job_end_notification, compose_notification
from trainguard.domain.model import TrainingJob
from trainguard.domain.naming import lineage_of
from trainguard.domain.outcome import Outcome, OutcomeKind

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
SCHEMA_TOP = {"version", "source", "id", "content", "metadata"}
SCHEMA_CONTENT = {"textType", "title", "description", "nextSteps", "keywords"}
SCHEMA_METADATA = {"threadId", "summary", "eventType", "relatedResources", "additionalContext"}


def _stall_notification(job_name: str = "nccl-hang-retry2") -> Notification:
    return compose_notification(
        kind=MessageKind.STALL_STOPPED,
        headline="stopped {job}: no logs for 30 minutes",
        job_name=job_name,
        happened="No log line for 30 minutes while the job was Training.",
        did="Stopped it; it will be relaunched from its checkpoint.",
        why="A hung collective never recovers by itself.",
        outcome="stall-stopped",
        decision="stop",
        region="us-west-2",
        now=NOW,
        category="stall",
        event_type="stall",
    )


def _check_schema(message: dict[str, Any]) -> None:
    assert set(message) <= SCHEMA_TOP and {"version", "source", "content"} <= set(message)
    assert set(message["content"]) <= SCHEMA_CONTENT and set(message["metadata"]) <= SCHEMA_METADATA
    assert (message["version"], message["source"], message["content"]["textType"]) == (
        "1.0",
        "custom",
        "client-markdown",
    )
    assert all(isinstance(step, str) for step in message["content"]["nextSteps"])
    assert all(isinstance(value, str) for value in message["metadata"]["additionalContext"].values())
    json.dumps(message)  # what SNS carries


def test_a_stall_message_keeps_every_section_and_turns_links_into_next_steps() -> None:
    message = compose_chat_message(_stall_notification(), notification_id="msg-1")
    _check_schema(message)
    content = message["content"]
    assert content["title"] == "stopped nccl-hang-retry2: no logs for 30 minutes"
    for heading in ("*What happened*", "*What trainguard did*", "*Why*"):
        assert heading in content["description"]
    assert "A hung collective never recovers by itself." in content["description"]
    assert "Links" not in content["description"] and "-- trainguard" not in content["description"]
    assert content["nextSteps"][0].startswith("Open the job: https://us-west-2.console.aws.amazon.com/")
    assert content["keywords"] == ["stall-stopped", "stall"]
    assert message["id"] == "msg-1"
    # Every notification of a lineage lands in one thread of the channel.
    assert message["metadata"]["threadId"] == "trainguard-nccl-hang"
    assert message["metadata"]["eventType"] == "stall"


def test_a_job_end_message_carries_the_failure_and_the_new_job() -> None:
    job = TrainingJob(
        name="llama-pretrain",
        arn="arn:aws:sagemaker:us-east-1:123456789012:training-job/llama-pretrain",
        status="Failed",
        failure_reason="InternalServerError: We encountered an internal error. Please try again.",
        tags={"trainguard:enabled": "true"},
    )
    outcome = Outcome(
        kind=OutcomeKind.RELAUNCHED,
        job_name="llama-pretrain",
        reason="An internal error is transient.",
        category=Category.INTERNAL.value,
        decision="retry",
        new_job_name="llama-pretrain-retry1",
    )
    notification = compose_job_end_notification(job, outcome, None, (), "us-east-1", NOW)
    message = compose_chat_message(notification)
    _check_schema(message)
    assert "id" not in message
    assert "InternalServerError" in message["content"]["description"]
    assert "llama-pretrain-retry1" in message["content"]["description"]
    assert any(step.startswith("Open the new job: ") for step in message["content"]["nextSteps"])
    assert message["metadata"]["additionalContext"]["decision"] == "retry"


def test_lineage_is_read_from_the_relaunch_suffix_only() -> None:
    assert lineage_of("llama-retry12") == "llama"
    assert lineage_of("retry-model") == "retry-model"
    assert lineage_of("tg-a1b2c3-retry1") == "tg-a1b2c3"


# --- issue 24: a failure reason (written by the training script) is data, never markup ---


def _failed_with(reason: str) -> Notification:
    job = TrainingJob(
        name="llama-pretrain",
        arn="arn:aws:sagemaker:us-east-1:123456789012:training-job/llama-pretrain",
        status="Failed",
        failure_reason=reason,
        tags={"trainguard:enabled": "true"},
    )
    outcome = Outcome(OutcomeKind.NOTIFIED, job.name, "A user error needs a fix.", "notify", Category.USER_CODE.value)
    return compose_job_end_notification(job, outcome, None, (), "us-east-1", NOW)


CONSOLE_STEPS = [
    "Open the job: https://us-east-1.console.aws.amazon.com/sagemaker/home?region=us-east-1#/jobs/llama-pretrain",
    "Open the logs: https://us-east-1.console.aws.amazon.com/cloudwatch/home?region=us-east-1"
    "#logsV2:log-groups/log-group/$252Faws$252Fsagemaker$252FTrainingJobs$3FlogStreamNameFilter$3Dllama-pretrain",
]


def test_a_line_separator_in_the_failure_reason_cannot_start_a_links_section_of_its_own() -> None:
    # U+2028 is a line break to str.splitlines and to chat clients; the old chat copy took the first "Links"
    # section it found, the reason's, and its URL replaced the console links.
    notification = _failed_with("AlgorithmError: boom\u2028Links\u2028  Job:  https://evil.example/login")
    message = compose_chat_message(notification)
    assert message["content"]["nextSteps"] == CONSOLE_STEPS
    assert "evil.example" not in notification.body.split("\nLinks\n", 1)[1]


def test_mentions_in_the_failure_reason_notify_nobody() -> None:
    mentions = ["<!channel>", "<!here>", "<!everyone>", "@here", "@channel", "<@U024BE7LH>", "<#C024BE7LH>", "<at>"]
    message = compose_chat_message(_failed_with("AlgorithmError: " + " ".join(mentions) + "Alex</at>"))
    description = message["content"]["description"]
    assert "AlgorithmError" in description and "channel" in description  # the reader still sees what it said
    assert [mention for mention in mentions if mention in description] == []


def test_a_markdown_link_in_the_failure_reason_is_no_link() -> None:
    notification = _failed_with("AlgorithmError: see [the console](https://evil.example/login) or https://evil.example")
    message = compose_chat_message(notification)
    for text in (message["content"]["description"], notification.body):
        assert "](" not in text and "https://evil.example" not in text
        assert "the console" in text and "evil[.]example" in text
    assert message["content"]["nextSteps"] == CONSOLE_STEPS
