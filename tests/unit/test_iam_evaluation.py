"""The small IAM evaluator the cross-account tests ask (tests/iam_evaluation.py), held to IAM's documented
rules on hand-written policies, so that a policy it lets through is one IAM would let through."""

from __future__ import annotations

from typing import Any

import pytest

from tests.iam_evaluation import Principal, may_assume, may_call

HUB = "999999999999"
FUNCTION_ROLE = f"arn:aws:iam::{HUB}:role/trainguard-hub-job-events"
ADMIN = Principal(f"arn:aws:iam::{HUB}:role/Admin", "o-exampleorg1")


def render(value: Any) -> str:
    return str(value)


def trust(condition: dict[str, Any] | None = None, principal: Any = f"arn:aws:iam::{HUB}:root") -> dict[str, Any]:
    statement: dict[str, Any] = {"Effect": "Allow", "Principal": {"AWS": principal}, "Action": "sts:AssumeRole"}
    if condition:
        statement["Condition"] = condition
    return {"Statement": [statement]}


def test_an_account_root_principal_without_a_condition_lets_every_role_of_the_account_in() -> None:
    assert may_assume(trust(), ADMIN, render)
    assert not may_assume(trust(), Principal("arn:aws:iam::111111111111:role/Admin"), render)


def test_arn_equals_takes_wildcards_in_each_part_as_iam_does() -> None:
    exact = trust({"ArnEquals": {"aws:PrincipalArn": FUNCTION_ROLE}})
    assert may_assume(exact, Principal(FUNCTION_ROLE), render) and not may_assume(exact, ADMIN, render)
    wildcard = trust({"ArnEquals": {"aws:PrincipalArn": f"arn:aws:iam::{HUB}:role/*"}})
    assert may_assume(wildcard, ADMIN, render)  # ArnEquals with a * is as wide as ArnLike
    any_account = trust({"ArnLike": {"aws:PrincipalArn": "arn:aws:iam::*:role/trainguard-hub-job-events"}})
    assert may_assume(any_account, Principal(FUNCTION_ROLE), render)


def test_every_condition_must_hold_and_a_deny_wins() -> None:
    both = trust({"ArnEquals": {"aws:PrincipalArn": FUNCTION_ROLE}, "StringEquals": {"aws:PrincipalOrgID": "o-a"}})
    assert may_assume(both, Principal(FUNCTION_ROLE, "o-a"), render)
    assert not may_assume(both, Principal(FUNCTION_ROLE, "o-b"), render)
    assert not may_assume(both, Principal(FUNCTION_ROLE), render)  # no organization: the key is absent
    denied = trust()
    denied["Statement"].append({"Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "sts:*"})
    denied["Statement"][1]["Principal"] = {"AWS": f"arn:aws:iam::{HUB}:root"}
    assert not may_assume(denied, ADMIN, render)


def test_actions_and_resources_match_iams_wildcards_and_nothing_else() -> None:
    allow = [{"Effect": "Allow", "Action": "sts:Assume*", "Resource": "arn:aws:iam::1:role/spoke-?-*"}]
    assert may_call(allow, "sts:AssumeRole", "arn:aws:iam::1:role/spoke-a-us-east-1", render)
    assert not may_call(allow, "sts:AssumeRole", "arn:aws:iam::1:role/spoke-ab", render)
    brackets = [{"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": "arn:aws:iam::1:role/[ab]"}]
    assert not may_call(brackets, "sts:AssumeRole", "arn:aws:iam::1:role/a", render)  # no [...] classes in IAM


def test_what_it_does_not_understand_raises_rather_than_passes() -> None:
    with pytest.raises(NotImplementedError):
        may_assume(trust({"StringEqualsIfExists": {"aws:PrincipalTag/team": "ml"}}), ADMIN, render)
    with pytest.raises(NotImplementedError):
        may_call([{"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"}], "sts:AssumeRole", "x", render)
    conditioned = [{"Effect": "Allow", "Action": "sagemaker:*", "Resource": "*", "Condition": {"Null": {"k": "false"}}}]
    with pytest.raises(NotImplementedError):  # a statement with conditions asked without a request
        may_call(conditioned, "sagemaker:CreateTrainingJob", "x", render)


LAUNCH = "arn:aws:sagemaker:us-east-1:1:training-job/j"


def _launch(condition: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"Effect": "Allow", "Action": "sagemaker:CreateTrainingJob", "Resource": "*", "Condition": condition}]


@pytest.mark.parametrize(
    ("condition", "types", "allowed"),
    [
        # ForAllValues: every value of the request's key among the policy's, and true when the key is absent
        # ("The ForAllValues set operator also returns true if there are no context keys in the request").
        ({"ForAllValues:StringEquals": {"sagemaker:InstanceTypes": ["ml.g5.xlarge"]}}, ["ml.g5.xlarge"], True),
        (
            {"ForAllValues:StringEquals": {"sagemaker:InstanceTypes": ["ml.g5.xlarge"]}},
            ["ml.g5.xlarge", "ml.p5.48xlarge"],
            False,
        ),
        ({"ForAllValues:StringEquals": {"sagemaker:InstanceTypes": ["ml.g5.xlarge"]}}, None, True),
        # Null false: the key must be in the request.
        ({"Null": {"sagemaker:InstanceTypes": "false"}}, None, False),
        ({"Null": {"sagemaker:InstanceTypes": "false"}}, ["ml.g5.xlarge"], True),
        ({"Null": {"sagemaker:InstanceTypes": "true"}}, None, True),
        # ForAnyValue: at least one value among the policy's, so false when the key is absent.
        (
            {"ForAnyValue:StringEquals": {"sagemaker:InstanceTypes": ["ml.g5.xlarge"]}},
            ["ml.p5.48xlarge", "ml.g5.xlarge"],
            True,
        ),
        ({"ForAnyValue:StringEquals": {"sagemaker:InstanceTypes": ["ml.g5.xlarge"]}}, None, False),
    ],
)
def test_set_operators_and_null_follow_iams_documented_rules(
    condition: dict[str, Any], types: list[str] | None, allowed: bool
) -> None:
    context = {} if types is None else {"sagemaker:InstanceTypes": types}
    assert may_call(_launch(condition), "sagemaker:CreateTrainingJob", LAUNCH, render, context) is allowed
