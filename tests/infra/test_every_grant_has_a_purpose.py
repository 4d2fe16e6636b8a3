"""Every grant in a single-account stack has a purpose, and the purpose is checked: the assertions that replace the
recorded shape of issue 16 (no hashed logical IDs). Each role is a function's (its statements are exactly what its
ports declare: test_iam_policies.test_each_role_grants_exactly_what_its_ports_declare) or the scheduler's
(test_iam_policies.test_scheduler_role_only_invokes_the_retry_launcher_for_this_account); each invoke permission
and each resource policy admits only this stack's own rules, log subscription and alarms, over TLS; and no kind of
grant the stack has no use for appears at all."""

from __future__ import annotations

from typing import Any

import pytest

from tests.infra.conftest import Synthesized
from tests.infra.template_queries import CONFIGURED_STACK, DEFAULTS_STACK, as_list, resources_of_type

STACKS = [CONFIGURED_STACK, DEFAULTS_STACK]
# Kinds of grant a single-account stack has no use for: any of them is a new way in, to be reviewed on purpose.
UNUSED_GRANTS = {
    "AWS::IAM::User",
    "AWS::IAM::Group",
    "AWS::IAM::AccessKey",
    "AWS::IAM::ManagedPolicy",
    "AWS::IAM::InstanceProfile",
    "AWS::S3::BucketPolicy",
    "AWS::Events::EventBusPolicy",
    "AWS::Logs::ResourcePolicy",
    "AWS::Lambda::Url",
}
TRAINING_LOG_GROUP = "/aws/sagemaker/TrainingJobs"


def _logical_id(value: Any) -> str:
    """The resource a `Ref` or `Fn::GetAtt` names ("" for anything else)."""
    if isinstance(value, dict) and "Ref" in value:
        return str(value["Ref"])
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return str(value["Fn::GetAtt"][0])
    return ""


def _services(statement: dict[str, Any]) -> set[str]:
    principal = statement.get("Principal")
    return set(as_list(principal.get("Service", []))) if isinstance(principal, dict) else set()


@pytest.fixture(params=STACKS)
def stack_template(synthesized: Synthesized, request: pytest.FixtureRequest) -> dict[str, Any]:
    """Each single-account stack's template: with every list setting filled, and with the defaults."""
    return synthesized.templates[request.param]


def test_no_kind_of_grant_the_stack_has_no_use_for(stack_template: dict[str, Any]) -> None:
    kinds = {resource["Type"] for resource in stack_template["Resources"].values()}
    assert kinds & UNUSED_GRANTS == set()


def test_each_role_is_a_functions_or_the_schedulers_with_its_own_policy_only(stack_template: dict[str, Any]) -> None:
    roles = resources_of_type(stack_template, "AWS::IAM::Role")
    function_roles = {
        _logical_id(f["Properties"]["Role"])
        for f in resources_of_type(stack_template, "AWS::Lambda::Function").values()
    }
    trusted = {}
    for role_id, role in roles.items():
        (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        trusted[role_id] = _services(statement)
        assert statement["Action"] == "sts:AssumeRole" and statement["Effect"] == "Allow", role_id
        assert not {"ManagedPolicyArns", "Policies", "PermissionsBoundary"} & set(role["Properties"]), role_id
    assert {r for r, s in trusted.items() if s == {"lambda.amazonaws.com"}} == function_roles
    assert [s for r, s in trusted.items() if r not in function_roles] == [{"scheduler.amazonaws.com"}]
    for policy_id, policy in resources_of_type(stack_template, "AWS::IAM::Policy").items():
        (attached,) = policy["Properties"]["Roles"]
        assert _logical_id(attached) in roles, policy_id


def test_each_invoke_permission_is_for_one_of_the_stacks_rules_or_its_training_log_subscription(
    stack_template: dict[str, Any],
) -> None:
    functions, rules = (resources_of_type(stack_template, t) for t in ("AWS::Lambda::Function", "AWS::Events::Rule"))
    for permission_id, permission in resources_of_type(stack_template, "AWS::Lambda::Permission").items():
        properties = permission["Properties"]
        assert properties["Action"] == "lambda:InvokeFunction", permission_id
        assert _logical_id(properties["FunctionName"]) in functions, permission_id
        if properties["Principal"] == "events.amazonaws.com":
            assert _logical_id(properties["SourceArn"]) in rules, permission_id
        else:
            assert properties["Principal"] == "logs.amazonaws.com", permission_id
            assert TRAINING_LOG_GROUP in str(properties["SourceArn"]), permission_id


def test_each_resource_policy_refuses_plain_http_and_admits_only_this_stacks_senders(
    stack_template: dict[str, Any],
) -> None:
    rules = resources_of_type(stack_template, "AWS::Events::Rule")
    policies = {
        policy_id: policy["Properties"]["PolicyDocument"]
        for kind in ("AWS::SQS::QueuePolicy", "AWS::SNS::TopicPolicy")
        for policy_id, policy in resources_of_type(stack_template, kind).items()
    }
    for policy_id, document in policies.items():
        denies = [s for s in document["Statement"] if s["Effect"] == "Deny"]
        assert [s["Condition"] for s in denies] == [{"Bool": {"aws:SecureTransport": "false"}}], policy_id
        for statement in (s for s in document["Statement"] if s["Effect"] == "Allow"):
            services = _services(statement)
            assert services <= {"events.amazonaws.com", "cloudwatch.amazonaws.com"} and services, policy_id
            condition = statement["Condition"]
            if "ArnEquals" in condition:  # a dead-letter queue: only this stack's own rules send to it
                assert _logical_id(condition["ArnEquals"]["aws:SourceArn"]) in rules, policy_id
            else:  # the topic: this account's own alarms and rules
                assert condition["StringEquals"]["aws:SourceAccount"] == {"Ref": "AWS::AccountId"}, policy_id
    (key,) = resources_of_type(stack_template, "AWS::KMS::Key").values()
    for statement in key["Properties"]["KeyPolicy"]["Statement"]:
        principal = statement["Principal"]
        if "AWS" in principal:  # the account's own administrators (IAM policies decide who)
            assert ":root" in str(principal["AWS"]) and "AWS::AccountId" in str(principal["AWS"])
        else:
            assert _services(statement) <= {"cloudwatch.amazonaws.com", "events.amazonaws.com"}
            assert "aws:SourceAccount" in str(statement["Condition"])
