"""The synthesized policies against AWS's authorization data, offline (trainguard_local/commands/iam_check/,
make lint). What the check catches in resource and trust policies, conditions and Not* statements:
test_iam_check_rules.py."""

from __future__ import annotations

from typing import Any

import pytest

from trainguard_local.commands.iam_check import arn_fits, check_action, check_template, key_fits

QUOTA_FORMAT = "arn:${Partition}:servicequotas:${Region}:${Account}:${ServiceCode}/${QuotaCode}"


@pytest.mark.parametrize("stack", ["template", "defaults_template"])
def test_every_statement_fits_aws_authorization_data(synthesized: Any, stack: str) -> None:
    assert check_template(getattr(synthesized, stack)) == []


def test_the_check_finds_what_is_wrong() -> None:
    training_plans = "arn:<AWS::Partition>:sagemaker:<AWS::Region>:<AWS::AccountId>:training-plan/*"
    assert list(check_action("sagemaker:RelaunchTrainingJob", ["*"], []))  # no such action
    assert list(check_action("sagemaker:StopTrainingJob", [training_plans], []))  # not its resource type
    assert list(check_action("sagemaker:CreateTrainingJob", ["*"], ["iam:PassedToService"]))  # not its key
    assert list(check_action("servicequotas:ListServiceQuotas", ["arn:aws:servicequotas:us-east-1:1:sagemaker/*"], []))
    assert not list(
        check_action("sagemaker:CreateTrainingJob", [training_plans], ["aws:RequestTag/trainguard:enabled"])
    )


def test_arns_and_keys_are_matched_by_shape() -> None:
    assert arn_fits("arn:<AWS::Partition>:servicequotas:<AWS::Region>:<AWS::AccountId>:sagemaker/*", QUOTA_FORMAT)
    assert not arn_fits("arn:aws:sagemaker:us-east-1:1:training-job/x", QUOTA_FORMAT)
    assert not arn_fits("arn:aws:sagemaker:us-east-1:1:training-job/x", "*") and arn_fits("*", QUOTA_FORMAT)
    assert key_fits("aws:RequestTag/trainguard:enabled", frozenset({"aws:RequestTag/${TagKey}"}))
    assert not key_fits("aws:ResourceTag/x", frozenset({"aws:RequestTag/${TagKey}"}))
    assert key_fits("aws:SourceAccount", frozenset())  # a global key
    assert not key_fits("aws:SourceAccountt", frozenset())  # not in AWS's list of global keys
