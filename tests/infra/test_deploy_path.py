"""What a first deploy meets: synth warns of a guard that tells no one or relaunches nothing, and the stack outputs the
topics `trainguard test-notification` publishes to."""

from __future__ import annotations

from typing import Any

import pytest

from infra.settings import Settings
from infra.stack import CHAT_TOPIC_OUTPUT, TOPIC_OUTPUT
from tests.infra.template_queries import CONFIGURED_STACK, DEFAULTS_STACK, only_logical_id
from trainguard_cli import deploy_commands

pytestmark = pytest.mark.slow

WARNING = "aws:cdk:warning"


def _warnings(synthesized: Any, stack: str) -> dict[str, list[str]]:
    """Construct path -> the warnings the synth shows for it (as `cdk synth` prints them)."""
    found: dict[str, list[str]] = {}
    for path, entries in synthesized.construct_metadata(stack).items():
        found.setdefault(path, []).extend(str(e["data"]) for e in entries if e["type"] == WARNING)
    return {path: messages for path, messages in found.items() if messages}


def test_a_stack_that_tells_no_one_and_passes_no_role_warns_of_both(synthesized: Any) -> None:
    warnings = _warnings(synthesized, DEFAULTS_STACK)
    assert list(warnings) == [f"/{DEFAULTS_STACK}"]
    expected = Settings().silent_guard_warnings()
    assert len(warnings[f"/{DEFAULTS_STACK}"]) == len(expected) == 2
    for shown, message in zip(sorted(warnings[f"/{DEFAULTS_STACK}"]), sorted(expected.values()), strict=True):
        assert shown.startswith(message)  # CDK appends the acknowledgment id
    assert any("will tell no one" in m for m in expected.values())
    assert any("will relaunch nothing" in m for m in expected.values())


def test_a_stack_with_emails_and_roles_warns_of_nothing(synthesized: Any) -> None:
    assert _warnings(synthesized, CONFIGURED_STACK) == {}


def test_the_outputs_are_the_topics_the_cli_reads(synthesized: Any) -> None:
    template = synthesized.template
    topics = {
        only_logical_id(template, "AWS::SNS::Topic", DisplayName=name): key
        for name, key in (("trainguard", TOPIC_OUTPUT), ("trainguard chat", CHAT_TOPIC_OUTPUT))
    }
    outputs = {key: output["Value"]["Ref"] for key, output in template["Outputs"].items()}
    assert outputs == {key: topic for topic, key in topics.items()}
    assert (deploy_commands.TOPIC_OUTPUT, deploy_commands.CHAT_TOPIC_OUTPUT) == (TOPIC_OUTPUT, CHAT_TOPIC_OUTPUT)
    assert set(synthesized.defaults_template["Outputs"]) == {TOPIC_OUTPUT}  # no chat topic there


def test_the_cli_s_default_stack_is_the_app_s() -> None:
    import app

    assert deploy_commands.DEFAULT_STACK == app.STACK_NAME
