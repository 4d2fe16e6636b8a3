"""make lint's IAM check (trainguard_local/commands/iam_check/) catches what is planted in a statement.

Each case starts from a copy of a statement the stacks synthesize (the file that declares it is named), which
the check passes, plants one typo or bad shape, and expects the finding: global condition keys against AWS's
published list, operators and value shapes, Deny and Not* statements, resource and trust policies and their
principals. Then CloudFormation functions in values, the acknowledgment of a NotAction, and the templates
`make lint` reads.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from trainguard_local.commands.iam_check import check_template, key_fits
from trainguard_local.commands.iam_check.command import synthesized_templates
from trainguard_local.commands.iam_check.global_condition_keys import GLOBAL_CONDITION_KEYS
from trainguard_local.commands.iam_check.policy_reader import policy_statements

PARTITION, REGION, ACCOUNT = {"Ref": "AWS::Partition"}, {"Ref": "AWS::Region"}, {"Ref": "AWS::AccountId"}


def join(*parts: Any) -> dict[str, Any]:
    return {"Fn::Join": ["", list(parts)]}


# Copies of synthesized statements (the templates of `make lint`), their references renamed to REFERRED's.
TOPIC = {  # infra/notifications.py: the alarms of this account publish to the topic
    "Sid": "AllowCloudWatchAlarmsOfThisAccountToPublish",
    "Effect": "Allow",
    "Principal": {"Service": "cloudwatch.amazonaws.com"},
    "Action": "sns:Publish",
    "Resource": {"Ref": "Topic"},
    "Condition": {
        "StringEquals": {"aws:SourceAccount": ACCOUNT},
        "ArnLike": {"aws:SourceArn": join("arn:", PARTITION, ":cloudwatch:", REGION, ":", ACCOUNT, ":alarm:*")},
    },
}
BUS = {  # infra/hub.py: the enrolled accounts put events on the hub's bus, within the organization
    "Sid": "EnrolledSpokesPutEvents",
    "Effect": "Allow",
    "Principal": {"AWS": join("arn:", PARTITION, ":iam::111111111111:root")},
    "Action": "events:PutEvents",
    "Resource": {"Fn::GetAtt": ["Bus", "Arn"]},
    "Condition": {"StringEquals": {"aws:PrincipalOrgID": "o-exampleorg1"}},
}
QUEUE_TLS = {  # CDK's enforce_ssl on every dead-letter queue
    "Effect": "Deny",
    "Principal": {"AWS": "*"},
    "Action": "sqs:*",
    "Resource": {"Fn::GetAtt": ["Queue", "Arn"]},
    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
}
KEY = {  # infra/notifications.py: the topic key, for the alarms
    "Sid": "AllowCloudWatchAlarmsToUseTheKey",
    "Effect": "Allow",
    "Principal": {"Service": "cloudwatch.amazonaws.com"},
    "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
    "Resource": "*",
}
SCHEDULER_TRUST = {  # infra/job_events.py: EventBridge Scheduler assumes the relaunch role for its schedules
    "Effect": "Allow",
    "Principal": {"Service": "scheduler.amazonaws.com"},
    "Action": "sts:AssumeRole",
    "Condition": {
        "StringEquals": {"aws:SourceAccount": ACCOUNT, "aws:SourceArn": {"Fn::GetAtt": ["Schedules", "Arn"]}}
    },
}
RELAUNCH = {  # infra/grants.py: relaunch opted-in training jobs
    "Sid": "RelaunchOptedInTrainingJobs",
    "Effect": "Allow",
    "Action": ["sagemaker:CreateTrainingJob", "sagemaker:AddTags"],
    "Resource": join("arn:", PARTITION, ":sagemaker:", REGION, ":", ACCOUNT, ":training-job/*"),
    "Condition": {"StringEquals": {"aws:RequestTag/trainguard:enabled": "true"}},
}
PERMISSION = {  # infra/job_events.py: the job-state rule invokes its function
    "Action": "lambda:InvokeFunction",
    "FunctionName": {"Fn::GetAtt": ["Function", "Arn"]},
    "Principal": "events.amazonaws.com",
    "SourceArn": {"Fn::GetAtt": ["Rule", "Arn"]},
}
SYNTHESIZED = {  # a statement of each kind of holder
    "topic": TOPIC,
    "bus": BUS,
    "queue": QUEUE_TLS,
    "key": KEY,
    "trust": SCHEDULER_TRUST,
    "identity": RELAUNCH,
    "permission": PERMISSION,
}
REFERRED = {
    "Topic": {"Type": "AWS::SNS::Topic"},
    "Queue": {"Type": "AWS::SQS::Queue"},
    "Bus": {"Type": "AWS::Events::EventBus", "Properties": {"Name": "trainguard-hub"}},
    "Function": {"Type": "AWS::Lambda::Function"},
    "Rule": {"Type": "AWS::Events::Rule"},
    "Schedules": {"Type": "AWS::Scheduler::ScheduleGroup"},
}


def template(holder: str, statement: dict[str, Any], metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """A template with the resource that holds the statement (a policy, a role, a key, a permission)."""
    document = {"Version": "2012-10-17", "Statement": [statement]}
    resource = {
        "identity": {"Type": "AWS::IAM::Policy", "Properties": {"PolicyDocument": document, "PolicyName": "p"}},
        "topic": {"Type": "AWS::SNS::TopicPolicy", "Properties": {"PolicyDocument": document}},
        "queue": {"Type": "AWS::SQS::QueuePolicy", "Properties": {"PolicyDocument": document}},
        "key": {"Type": "AWS::KMS::Key", "Properties": {"KeyPolicy": document}},
        "trust": {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": document}},
        "bus": {
            "Type": "AWS::Events::EventBusPolicy",
            "Properties": {"EventBusName": {"Ref": "Bus"}, "Statement": statement},
        },
        "permission": {"Type": "AWS::Lambda::Permission", "Properties": statement},
    }[holder]
    return {"Resources": {**REFERRED, "Holder": {**resource, "Metadata": metadata or {}}}}


def findings(holder: str, statement: dict[str, Any], metadata: dict[str, Any] | None = None) -> list[str]:
    return check_template(template(holder, statement, metadata))


def condition(operator: str, key: str, value: Any) -> dict[str, Any]:
    """A statement's Condition element of one operator and one key, to plant."""
    return {"Condition": {operator: {key: value}}}


def planted(statement: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A copy of the statement with elements replaced (None removes one)."""
    changed = copy.deepcopy(statement)
    for element, value in changes.items():
        if value is None:
            changed.pop(element)
        else:
            changed[element] = value
    return changed


ARN_LIKE_ALARMS = TOPIC["Condition"]["ArnLike"]  # type: ignore[index]
CASES = [  # (the holder, whose statement in SYNTHESIZED is planted, what is planted, the finding expected)
    # Global condition keys: AWS's published list, not any aws: name.
    (
        "bus",
        condition("StringEquals", "aws:PrincipalOrgIDD", "o-exampleorg1"),
        "aws:PrincipalOrgIDD: not a global condition key",
    ),
    (
        "topic",
        condition("ArnLike", "aws:SourceArnn", ARN_LIKE_ALARMS["aws:SourceArn"]),
        "aws:SourceArnn: not a global condition key",
    ),
    ("identity", condition("StringEquals", "aws:SourceAccountt", "123456789012"), "aws:SourceAccountt: not a global"),
    (
        "trust",
        condition("StringEquals", "aws:SourceArnn", "arn:aws:scheduler:us-east-1:123456789012:schedule-group/g"),
        "aws:SourceArnn: not a global",
    ),
    # Operators: IAM's names, the key's type, set operators for multivalued keys only.
    (
        "topic",
        condition("StringEqual", "aws:SourceAccount", ACCOUNT),
        "condition operator StringEqual is not one of IAM's",
    ),
    (
        "bus",
        condition("ForAnyValues:StringEquals", "aws:PrincipalOrgID", "o-exampleorg1"),
        "ForAnyValues:StringEquals is not one of IAM's",
    ),
    ("queue", condition("NullIfExists", "aws:SecureTransport", "false"), "Null takes no IfExists"),
    (
        "topic",
        condition("ArnLike", "aws:SourceAccount", ACCOUNT),
        "ArnLike on aws:SourceAccount: the operator compares ARN, the key is String",
    ),
    (
        "queue",
        condition("StringEquals", "aws:SecureTransport", "false"),
        "the operator compares ARN/String, the key is Bool",
    ),
    (
        "bus",
        condition("ForAnyValue:StringEquals", "aws:PrincipalOrgID", "o-exampleorg1"),
        "a set operator on a single-valued key",
    ),
    (
        "identity",
        condition("StringEquals", "aws:TagKeys", ["trainguard:enabled"]),
        "a multivalued key needs ForAllValues: or ForAnyValue:",
    ),
    # Value shapes by the key's type.
    ("queue", condition("Bool", "aws:SecureTransport", "flase"), "flase is not true or false"),
    ("topic", condition("StringEquals", "aws:SourceAccount", "12345678901"), "is not an account ID"),
    ("bus", condition("StringEquals", "aws:PrincipalOrgID", "exampleorg1"), "is not an organization ID"),
    ("topic", condition("ArnLike", "aws:SourceArn", "cloudwatch:alarm:*"), "cloudwatch:alarm:* is not an ARN"),
    ("topic", condition("StringLike", "aws:SourceAccount", "1111*"), "has a wildcard, which no sensitive key may have"),
    ("identity", condition("DateGreaterThan", "aws:CurrentTime", "tomorrow"), "tomorrow is not an ISO 8601 date"),
    ("identity", condition("IpAddress", "aws:SourceIp", "10.0.0.300/24"), "is not an IP address or CIDR range"),
    ("identity", condition("NumericLessThan", "aws:MultiFactorAuthAge", "an hour"), "an hour is not a number"),
    # Deny and Not* statements.
    ("queue", {"Action": "sqs:SendMesage"}, "sqs:SendMesage is not an action"),
    ("queue", {"Action": "sqs:Sned*"}, "sqs:Sned* is not an action"),
    (
        "identity",
        {"Effect": "Deny", "Action": None, "NotAction": ["sagemaker:StopTrainingJobs"]},
        "sagemaker:StopTrainingJobs is not an action",
    ),
    ("identity", {"Action": None, "NotAction": ["iam:*"], "Condition": None}, "NotAction in an Allow"),
    (
        "identity",
        {"Resource": None, "NotResource": "arn:aws:sagemaker:us-east-1:123456789012:training-job/x"},
        "NotResource in an Allow",
    ),
    (
        "topic",
        {"Principal": None, "NotPrincipal": {"AWS": "arn:aws:iam::123456789012:root"}},
        "NotPrincipal in an Allow",
    ),
    ("identity", {"Effect": "Alow"}, "Effect Alow is neither Allow nor Deny"),
    ("identity", {"NotAction": ["iam:*"]}, "exactly one of Action and NotAction"),
    # Resource and trust policies, their principals.
    ("key", {"Action": ["kms:Decypt"]}, "kms:Decypt is not an action"),
    ("trust", {"Action": "sts:AssumeRoles"}, "sts:AssumeRoles is not an action"),
    ("trust", {"Resource": "*"}, "a trust policy statement takes no Resource"),
    (
        "topic",
        {"Principal": {"Service": "cloudwatch.amazonaws.con"}},
        "cloudwatch.amazonaws.con: not the shape of a principal",
    ),
    (
        "bus",
        {"Principal": {"AWS": join("arn:", PARTITION, ":iam::11111111111:root")}},
        ":iam::11111111111:root: not the shape",
    ),
    ("queue", {"Principal": {"Aws": "*"}}, "Principal type Aws is not one of"),
    ("topic", {"Principal": None}, "names one Principal or NotPrincipal"),
    ("identity", {"Principal": "*"}, "an identity policy statement takes no Principal"),
    ("permission", {"Principal": "events.amazonaws.con"}, "events.amazonaws.con: not the shape"),
    ("permission", {"SourceAccount": "not-an-account"}, "not-an-account is not an account ID"),
    ("permission", {"Action": "lambda:InvokeFunctions"}, "lambda:InvokeFunctions is not an action"),
]


@pytest.mark.parametrize(("holder", "changes", "expected"), CASES, ids=[c[2] for c in CASES])
def test_the_check_finds_what_is_planted_in_a_synthesized_statement(
    holder: str, changes: dict[str, Any], expected: str
) -> None:
    statement = SYNTHESIZED[holder]
    assert findings(holder, statement) == []
    found = findings(holder, planted(statement, **changes))
    assert any(expected in finding for finding in found), found


def test_cloudformation_functions_in_values_are_strings_known_at_deploy() -> None:
    imported = {"Fn::ImportValue": "SpokeAccount"}
    statements = [
        ("identity", planted(RELAUNCH, Resource={"Fn::Sub": "arn:${AWS::Partition}:sagemaker:::training-job/*"})),
        ("identity", planted(RELAUNCH, Resource={"Ref": "JobsArnParameter"})),
        ("topic", planted(TOPIC, Condition={"StringEquals": {"aws:SourceAccount": imported}})),
        ("topic", planted(TOPIC, Principal={"Service": join("logs.", REGION, ".amazonaws.com")})),
        ("bus", planted(BUS, Principal={"AWS": {"Fn::If": ["Spoke", "111111111111", {"Ref": "AWS::NoValue"}]}})),
        (
            "bus",
            planted(BUS, Condition={"StringEquals": {"aws:PrincipalOrgID": {"Fn::Select": [0, ["o-exampleorg1"]]}}}),
        ),
        ("trust", planted(SCHEDULER_TRUST, Condition={"ArnLike": {"aws:SourceArn": {"Fn::Join": "malformed"}}})),
    ]
    assert [(holder, findings(holder, statement)) for holder, statement in statements] == [
        (holder, []) for holder, _ in statements
    ]


@pytest.mark.parametrize(
    ("acknowledgment", "found"),
    [
        ({}, True),
        ({"NotAction": {"EverythingButIam": "too short"}}, True),
        ({"NotAction": {"EverythingButIam": "the read-only auditor role reads every service but IAM"}}, False),
    ],
    ids=["none", "without a reason", "with a reason"],
)
def test_a_not_action_in_an_allow_is_a_finding_unless_acknowledged_with_a_reason(
    acknowledgment: dict[str, Any], found: bool
) -> None:
    statement = {"Sid": "EverythingButIam", "Effect": "Allow", "NotAction": "iam:*", "Resource": "*"}
    metadata = {"trainguard:iam_check": acknowledgment}
    assert any("NotAction in an Allow" in f for f in findings("identity", statement, metadata)) is found


def test_the_global_keys_are_awss_list_with_their_variable_parts() -> None:
    for key in ("aws:RequestTag/${TagKey}", "aws:ResourceTag/${TagKey}", "aws:PrincipalTag/${TagKey}", "aws:SourceArn"):
        assert key in GLOBAL_CONDITION_KEYS
    assert key_fits("aws:PrincipalTag/team", frozenset()) and key_fits("aws:sourcearn", frozenset())  # case-blind
    assert not key_fits("aws:PrincipalOrgIDD", frozenset()) and not key_fits("aws:SourceArnn", frozenset())


@pytest.mark.slow
def test_the_templates_make_lint_reads_have_no_findings_and_every_kind_of_policy() -> None:
    templates = synthesized_templates()  # single account, hub, spoke
    assert [finding for t in templates for finding in check_template(t)] == []
    read = {found.kind for t in templates for found in policy_statements(t)}
    holders = {r["Type"] for t in templates for r in t["Resources"].values()}
    assert read == {"identity", "resource", "trust"}
    assert {"AWS::Events::EventBusPolicy", "AWS::Lambda::Permission", "AWS::KMS::Key"} <= holders
