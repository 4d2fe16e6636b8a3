"""The statement builders of infra/grants.py: only their group's actions, one statement, nothing for none."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.slow


def _stack_with_a_function() -> tuple[Any, Any, Any]:
    from aws_cdk import App, Stack
    from aws_cdk import aws_lambda as lambda_

    from infra.grants import Grants
    from infra.nag import PendingAcknowledgments
    from infra.settings import Settings

    stack = Stack(App(), "GrantsUnderTest")
    function = lambda_.Function(
        stack,
        "Function",
        runtime=lambda_.Runtime.PYTHON_3_12,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"),
    )
    return stack, function, Grants(stack=stack, settings=Settings(), acknowledgments=PendingAcknowledgments())


def _statements(stack: Any) -> list[dict[str, Any]]:
    from aws_cdk.assertions import Template

    policies = Template.from_stack(stack).find_resources("AWS::IAM::Policy")
    return [s for policy in policies.values() for s in policy["Properties"]["PolicyDocument"]["Statement"]]


def test_a_builder_adds_one_statement_with_the_actions_asked_for() -> None:
    stack, function, grants = _stack_with_a_function()
    grants.allow_rearming_stall_alarms(function, ["cloudwatch:SetAlarmState"])
    (statement,) = _statements(stack)
    assert statement["Sid"] == "RearmStallAlarms"
    assert statement["Action"] == "cloudwatch:SetAlarmState"


def test_a_builder_refuses_an_action_of_another_group() -> None:
    _, function, grants = _stack_with_a_function()
    with pytest.raises(ValueError, match="sagemaker:StopTrainingJob"):
        grants.allow_reading_training_jobs(function, ["sagemaker:DescribeTrainingJob", "sagemaker:StopTrainingJob"])


def test_no_action_adds_no_statement() -> None:
    stack, function, grants = _stack_with_a_function()
    grants.allow_listing_alarms(function, [])
    grants.allow_passing_execution_roles(function)  # no execution roles configured: nothing to pass
    assert _statements(stack) == []
