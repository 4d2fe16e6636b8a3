"""The ledger table, the encrypted topic and its key, and the bundled Lambda asset."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Match

from tests.infra.template_queries import DENY_INSECURE_TRANSPORT, only_logical_id, resources_of_type

pytestmark = pytest.mark.slow


def test_ledger_is_on_demand_with_pitr_sse_ttl_and_retained(template: Any) -> None:
    template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "Properties": Match.object_like(
                {
                    "KeySchema": [
                        {"AttributeName": "pk", "KeyType": "HASH"},
                        {"AttributeName": "sk", "KeyType": "RANGE"},
                    ],
                    "AttributeDefinitions": Match.array_with(
                        [
                            {"AttributeName": "pk", "AttributeType": "S"},
                            {"AttributeName": "sk", "AttributeType": "S"},
                        ]
                    ),
                    "BillingMode": "PAY_PER_REQUEST",
                    "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
                    "SSESpecification": {"SSEEnabled": True},
                    "TimeToLiveSpecification": {"AttributeName": "expires_at", "Enabled": True},
                }
            ),
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
        },
    )


def test_topic_is_encrypted_with_a_rotated_customer_key(synthesized: Any, template: Any) -> None:
    key = only_logical_id(synthesized.template, "AWS::KMS::Key")
    template.has_resource_properties("AWS::SNS::Topic", {"KmsMasterKeyId": {"Fn::GetAtt": [key, "Arn"]}})
    template.has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})


def test_cloudwatch_alarms_can_use_the_key_and_publish_to_the_topic(synthesized: Any, template: Any) -> None:
    template.has_resource_properties(
        "AWS::KMS::Key",
        {
            "KeyPolicy": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Allow",
                                "Principal": {"Service": "cloudwatch.amazonaws.com"},
                                "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
                            }
                        )
                    ]
                )
            }
        },
    )
    topic = only_logical_id(synthesized.template, "AWS::SNS::Topic", DisplayName="trainguard")
    template.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "Topics": [{"Ref": topic}],
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        DENY_INSECURE_TRANSPORT,
                        Match.object_like(
                            {
                                "Effect": "Allow",
                                "Principal": {"Service": "cloudwatch.amazonaws.com"},
                                "Action": "sns:Publish",
                                "Condition": Match.object_like(
                                    {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}
                                ),
                            }
                        ),
                    ]
                )
            },
        },
    )


def test_the_chat_topic_exists_only_when_asked_for_and_is_encrypted(synthesized: Any) -> None:
    key = only_logical_id(synthesized.template, "AWS::KMS::Key")
    chat = only_logical_id(synthesized.template, "AWS::SNS::Topic", DisplayName="trainguard chat")
    properties = synthesized.template["Resources"][chat]["Properties"]
    assert properties["KmsMasterKeyId"] == {"Fn::GetAtt": [key, "Arn"]}
    # The functions read its ARN from their environment; the defaults stack has no chat topic at all.
    functions = resources_of_type(synthesized.template, "AWS::Lambda::Function").values()
    assert all(
        f["Properties"]["Environment"]["Variables"]["TRAINGUARD_CHAT_TOPIC_ARN"] == {"Ref": chat} for f in functions
    )
    default_topics = resources_of_type(synthesized.defaults_template, "AWS::SNS::Topic").values()
    assert [t["Properties"]["DisplayName"] for t in default_topics] == ["trainguard"]


def test_each_notification_email_is_subscribed(synthesized: Any, template: Any) -> None:
    topic = only_logical_id(synthesized.template, "AWS::SNS::Topic", DisplayName="trainguard")
    template.has_resource_properties(
        "AWS::SNS::Subscription",
        {"Protocol": "email", "Endpoint": "ml-oncall@example.com", "TopicArn": {"Ref": topic}},
    )
    assert not [r for r in synthesized.defaults_template["Resources"].values() if r["Type"] == "AWS::SNS::Subscription"]


def test_lambda_asset_holds_the_package_and_powertools_without_bytecode(synthesized: Any) -> None:
    assets = json.loads((synthesized.outdir / "TrainGuard.assets.json").read_text())["files"]
    (code,) = [a for a in assets.values() if a["source"]["packaging"] == "zip"]
    root = Path(synthesized.outdir / code["source"]["path"])
    for expected in ("trainguard/config.py", "aws_lambda_powertools/__init__.py", "typing_extensions.py"):
        assert (root / expected).is_file(), expected
    assert not list(root.rglob("__pycache__")) and not list(root.rglob("*.pyc"))
    # boto3 and botocore come with the Lambda runtime; bundling them would only add megabytes.
    assert not (root / "boto3").exists() and not (root / "botocore").exists()
    # Lambda code only: no operator command, no emulator of CloudWatch, no local tool.
    assert not [p.name for p in root.iterdir() if p.name.startswith(("trainguard_cli", "trainguard_local"))]
    modules = {p.relative_to(root / "trainguard").as_posix() for p in (root / "trainguard").rglob("*.py")}
    assert not {m for m in modules if m.startswith("cli") or "explain" in m or "ledger_reader" in m}, modules
    assert "domain/alarm_evaluation.py" not in modules
    # Every function's handler names a module that is in the asset.
    for function in resources_of_type(synthesized.template, "AWS::Lambda::Function").values():
        module, _, _ = function["Properties"]["Handler"].rpartition(".")
        assert (root / (module.replace(".", "/") + ".py")).is_file(), module


def test_only_local_deploys_drop_the_bootstrap_version_rule(synthesized: Any) -> None:
    """moto server cannot evaluate the rule (docs/local-aws.md); real deploys keep it."""
    assert "CheckBootstrapVersion" not in synthesized.template.get("Rules", {})
    assert "BootstrapVersion" not in synthesized.template.get("Parameters", {})
    assert "CheckBootstrapVersion" in synthesized.defaults_template["Rules"]
