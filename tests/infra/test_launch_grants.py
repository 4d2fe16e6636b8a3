"""Issue 24: a launching role may do no more than the launch needs. CreateTrainingJob only on the deployer's
launchable instance types (sagemaker:InstanceTypes), AddTags only as part of the CreateTrainingJob that creates
the job (sagemaker:TaggingAction), asked of the synthesized policies with tests/iam_evaluation.py."""

from __future__ import annotations

from typing import Any

import pytest

from tests.iam_evaluation import may_call
from tests.infra.template_queries import (
    CONFIGURED_CONTEXT,
    FAILED_LAUNCHES_HANDLER,
    JOB_EVENTS_HANDLER,
    QUOTA_WATCH_HANDLER,
    RETRY_LAUNCHER_HANDLER,
    as_list,
    function_logical_id,
    render,
    role_of_function,
    statements_of_role,
)

pytestmark = pytest.mark.slow

LAUNCHING_HANDLERS = [JOB_EVENTS_HANDLER, RETRY_LAUNCHER_HANDLER, QUOTA_WATCH_HANDLER, FAILED_LAUNCHES_HANDLER]
ACCOUNT = "123456789012"
NEW_JOB = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-job/llama-pretrain-retry1"
OTHERS_JOB = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-job/someone-elses-job"
PLAN = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-plan/team-a-plan"
LAUNCHABLE = CONFIGURED_CONTEXT["launchable_instance_types"]
OPTED_IN = {"aws:RequestTag/trainguard:enabled": "true"}


def concrete(value: Any) -> str:
    """A template value as it is in the account and region of these tests."""
    text = render(value)
    return (
        text.replace("<AWS::Partition>", "aws")
        .replace("<AWS::Region>", "us-east-1")
        .replace("<AWS::AccountId>", ACCOUNT)
    )


def role_statements(template: dict[str, Any], handler: str) -> list[dict[str, Any]]:
    return statements_of_role(template, role_of_function(template, function_logical_id(template, handler)))


def launch(statements: list[dict[str, Any]], types: list[str] | None, resource: str = NEW_JOB) -> bool:
    """May the role call CreateTrainingJob for a request with these instance types (None: the request names none)?"""
    context: dict[str, Any] = {**OPTED_IN, **({} if types is None else {"sagemaker:InstanceTypes": types})}
    return may_call(statements, "sagemaker:CreateTrainingJob", resource, concrete, context)


@pytest.mark.parametrize("handler", LAUNCHING_HANDLERS)
@pytest.mark.parametrize(
    ("types", "allowed"),
    [
        (["ml.g5.xlarge"], True),
        (["ml.g5.12xlarge", "ml.p4d.24xlarge"], True),  # heterogeneous groups, every type listed
        (["ml.p5.48xlarge"], False),  # a fallback tag's type outside the deployer's list
        (["ml.g5.xlarge", "ml.p5.48xlarge"], False),  # one group outside the list is enough to refuse
        (None, False),  # a request without types cannot slip through ForAllValues
    ],
)
def test_create_training_job_is_allowed_only_on_the_launchable_instance_types(
    synthesized: Any, handler: str, types: list[str] | None, allowed: bool
) -> None:
    statements = role_statements(synthesized.template, handler)
    assert launch(statements, types) is allowed
    assert launch(statements, types, resource=PLAN) is allowed  # the job's own training plan: the same bound


@pytest.mark.parametrize("handler", LAUNCHING_HANDLERS[:3])
def test_with_no_launchable_types_listed_create_training_job_has_no_type_condition(
    synthesized: Any, handler: str
) -> None:
    statements = role_statements(synthesized.defaults_template, handler)
    creating = [s for s in statements if "sagemaker:CreateTrainingJob" in as_list(s["Action"])]
    assert len(creating) == 2 and not any("sagemaker:InstanceTypes" in str(s.get("Condition")) for s in creating)
    assert launch(statements, ["ml.p5.48xlarge"])  # the domain, not IAM, then keeps every launch to its own shape


@pytest.mark.parametrize("handler", LAUNCHING_HANDLERS)
def test_add_tags_is_allowed_only_on_the_job_its_create_training_job_creates(synthesized: Any, handler: str) -> None:
    statements = role_statements(synthesized.template, handler)
    [tagging] = [s for s in statements if "sagemaker:AddTags" in as_list(s["Action"])]
    assert as_list(tagging["Action"]) == ["sagemaker:AddTags"]

    def add_tags(resource: str, keys: list[str], **context: str) -> bool:
        request = {**OPTED_IN, "aws:TagKeys": keys, **context}
        return may_call(statements, "sagemaker:AddTags", resource, concrete, request)

    relaunch_keys = ["team", "trainguard:enabled", "trainguard:root-job", "trainguard:attempt", "trainguard:retry-of"]
    on_create = {"sagemaker:TaggingAction": "CreateTrainingJob"}
    assert add_tags(NEW_JOB, relaunch_keys, **on_create)  # a relaunch: the failed job's tags and trainguard's
    assert add_tags(NEW_JOB, ["team", "trainguard:enabled", "trainguard:blocked-launch"], **on_create)  # quota wall
    assert not add_tags(OTHERS_JOB, ["trainguard:enabled", "owner"])  # AddTags called on its own, on any job
    assert not add_tags(OTHERS_JOB, relaunch_keys, **{"sagemaker:TaggingAction": "CreateModel"})
    assert not add_tags(NEW_JOB, ["team", "trainguard:enabled"], **on_create)  # not marked as trainguard's launch
