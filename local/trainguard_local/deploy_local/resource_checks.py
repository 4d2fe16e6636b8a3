"""One deployed resource, checked against its template properties by asking the endpoint with boto3.

The checks `make deploy-local` makes per resource type (trainguard_local.deploy_local.stack_checks runs them over a
stack), and the probes that tell whether a resource still exists after the destroy.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

# Error codes that mean "no such resource" in the services probed after the destroy.
NOT_FOUND_CODES = frozenset(
    {
        "ResourceNotFoundException",
        "ResourceNotFound",
        "NoSuchEntity",
        "NotFound",
        "NotFoundException",
        "AWS.SimpleQueueService.NonExistentQueue",
        "ResourceNotFoundFault",
    }
)


class DeployCheckError(AssertionError):
    """What was deployed differs from the template or from what trainguard needs; the message says what."""


@dataclass(frozen=True)
class StackResource:
    logical_id: str
    resource_type: str
    physical_id: str


def require(ok: bool, message: str) -> None:
    if not ok:
        raise DeployCheckError(message)


def resolve(value: Any, created: dict[str, StackResource]) -> str | None:
    """A template value as the deploy should have made it: literal text as is, a Ref as the referenced
    resource's physical ID; None for what only the service knows (GetAtt, Join over pseudo parameters)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and set(value) == {"Ref"} and value["Ref"] in created:
        return created[value["Ref"]].physical_id
    return None


ResourceCheck = Callable[[StackResource, dict[str, Any], dict[str, StackResource]], None]


class ResourceChecks:
    """`client(service)` gives a boto3 client for the endpoint; each check raises DeployCheckError."""

    def __init__(self, client: Callable[[str], Any]) -> None:
        self.client = client

    def checks_by_type(self) -> dict[str, ResourceCheck]:
        return {
            "AWS::DynamoDB::Table": self.check_table,
            "AWS::SNS::Topic": self.check_topic,
            "AWS::SQS::Queue": self.check_queue,
            "AWS::Lambda::Function": self.check_function,
            "AWS::Events::Rule": self.check_rule,
            "AWS::IAM::Role": self.check_role,
            "AWS::IAM::Policy": self.check_policy,
            "AWS::Logs::LogGroup": self.check_log_group,
            "AWS::KMS::Key": self.check_key,
            "AWS::Scheduler::ScheduleGroup": self.check_schedule_group,
            "AWS::CloudWatch::Dashboard": self.check_dashboard,
        }

    def exists(self, resource: StackResource) -> bool | None:
        """Whether the resource is still there; None for a type this check does not probe."""
        probes: dict[str, Callable[[], Any]] = {
            "AWS::DynamoDB::Table": lambda: self.client("dynamodb").describe_table(TableName=resource.physical_id),
            "AWS::SNS::Topic": lambda: self.client("sns").get_topic_attributes(TopicArn=resource.physical_id),
            "AWS::SQS::Queue": lambda: self.client("sqs").get_queue_attributes(QueueUrl=resource.physical_id),
            "AWS::Lambda::Function": lambda: self.client("lambda").get_function(FunctionName=resource.physical_id),
            "AWS::Events::Rule": lambda: self.client("events").describe_rule(Name=resource.physical_id),
            "AWS::IAM::Role": lambda: self.client("iam").get_role(RoleName=resource.physical_id),
            "AWS::Scheduler::ScheduleGroup": lambda: self.client("scheduler").get_schedule_group(
                Name=resource.physical_id
            ),
            "AWS::Logs::LogGroup": lambda: self.log_group(resource.physical_id),
        }
        probe = probes.get(resource.resource_type)
        if probe is None:
            return None
        try:
            probe()
        except ClientError as err:
            if err.response["Error"]["Code"] in NOT_FOUND_CODES:
                return False
            raise
        return True

    def log_group(self, name: str) -> dict[str, Any]:
        groups = self.client("logs").describe_log_groups(logGroupNamePrefix=name)["logGroups"]
        matching = [g for g in groups if g["logGroupName"] == name]
        if not matching:
            raise ClientError({"Error": {"Code": "ResourceNotFoundException", "Message": name}}, "DescribeLogGroups")
        return matching[0]

    def check_table(self, resource: StackResource, props: dict[str, Any], _: dict[str, StackResource]) -> None:
        table = self.client("dynamodb").describe_table(TableName=resource.physical_id)["Table"]
        require(table["TableStatus"] == "ACTIVE", f"table {resource.physical_id} is {table['TableStatus']}")
        require(table["KeySchema"] == props["KeySchema"], f"table key schema {table['KeySchema']}")

    def check_topic(self, resource: StackResource, props: dict[str, Any], created: dict[str, StackResource]) -> None:
        attributes = self.client("sns").get_topic_attributes(TopicArn=resource.physical_id)["Attributes"]
        if "KmsMasterKeyId" in props:
            key = props["KmsMasterKeyId"]["Fn::GetAtt"][0]
            require(
                attributes.get("KmsMasterKeyId", "").endswith(f"key/{created[key].physical_id}"),
                f"topic {resource.physical_id} is encrypted with {attributes.get('KmsMasterKeyId')!r}, not {key}",
            )

    def check_queue(self, resource: StackResource, props: dict[str, Any], _: dict[str, StackResource]) -> None:
        attributes = self.client("sqs").get_queue_attributes(QueueUrl=resource.physical_id, AttributeNames=["All"])
        retention = attributes["Attributes"]["MessageRetentionPeriod"]
        require(retention == str(props["MessageRetentionPeriod"]), f"queue {resource.physical_id} keeps {retention} s")

    def check_function(self, resource: StackResource, props: dict[str, Any], created: dict[str, StackResource]) -> None:
        config = self.client("lambda").get_function_configuration(FunctionName=resource.physical_id)
        for key in ("Handler", "Runtime", "MemorySize", "Timeout"):
            require(
                config[key] == props[key], f"function {resource.logical_id} {key} {config[key]!r} != {props[key]!r}"
            )
        deployed = config.get("Environment", {}).get("Variables", {})
        wanted = props["Environment"]["Variables"]
        require(set(deployed) == set(wanted), f"function {resource.logical_id} variables {sorted(deployed)}")
        for name, value in wanted.items():
            expected = resolve(value, created)
            ok = bool(deployed[name]) if expected is None else deployed[name] == expected
            require(ok, f"function {resource.logical_id} {name}={deployed[name]!r}, expected {expected!r}")

    def check_rule(self, resource: StackResource, props: dict[str, Any], created: dict[str, StackResource]) -> None:
        rule = self.client("events").describe_rule(Name=resource.physical_id)
        require(rule["State"] == props.get("State", "ENABLED"), f"rule {resource.physical_id} is {rule['State']}")
        if "EventPattern" in props:
            require(json.loads(rule["EventPattern"]) == props["EventPattern"], f"rule {resource.logical_id} pattern")
        require(rule.get("ScheduleExpression") == props.get("ScheduleExpression"), f"rule {resource.logical_id}")
        targets = self.client("events").list_targets_by_rule(Rule=resource.physical_id)["Targets"]
        functions = [created[t["Arn"]["Fn::GetAtt"][0]].physical_id for t in props["Targets"]]
        require(
            sorted(t["Arn"].rsplit(":", 1)[-1] for t in targets) == sorted(functions),
            f"rule {resource.logical_id} targets {[t['Arn'] for t in targets]}, expected {functions}",
        )

    def check_role(self, resource: StackResource, props: dict[str, Any], _: dict[str, StackResource]) -> None:
        role = self.client("iam").get_role(RoleName=resource.physical_id)["Role"]
        trust = role["AssumeRolePolicyDocument"]
        principals = [s["Principal"] for s in trust["Statement"]]
        wanted = [s["Principal"] for s in props["AssumeRolePolicyDocument"]["Statement"]]
        require(principals == wanted, f"role {resource.logical_id} trusts {principals}, expected {wanted}")

    def check_policy(self, resource: StackResource, props: dict[str, Any], created: dict[str, StackResource]) -> None:
        (role_ref,) = props["Roles"]
        document = self.client("iam").get_role_policy(
            RoleName=resolve(role_ref, created), PolicyName=props["PolicyName"]
        )["PolicyDocument"]
        statements = document["Statement"] if isinstance(document, dict) else json.loads(document)["Statement"]
        sids = sorted(s.get("Sid", "") for s in statements)
        wanted = sorted(s.get("Sid", "") for s in props["PolicyDocument"]["Statement"])
        require(sids == wanted, f"policy {resource.logical_id} statements {sids}, expected {wanted}")

    def check_log_group(self, resource: StackResource, props: dict[str, Any], _: dict[str, StackResource]) -> None:
        group = self.log_group(resource.physical_id)
        require(group.get("retentionInDays") == props.get("RetentionInDays"), f"log group {resource.physical_id}")

    def check_key(self, resource: StackResource, _: dict[str, Any], __: dict[str, StackResource]) -> None:
        # Listed, not described: moto 5.2.5 keeps a key policy from CloudFormation as an object, and then
        # answers DescribeKey and GetKeyRotationStatus for that key with HTTP 500 (json.loads of a dict).
        keys = [k["KeyId"] for page in self.client("kms").get_paginator("list_keys").paginate() for k in page["Keys"]]
        require(resource.physical_id in keys, f"key {resource.physical_id} is not in ListKeys")

    def check_schedule_group(self, resource: StackResource, _: dict[str, Any], __: dict[str, StackResource]) -> None:
        group = self.client("scheduler").get_schedule_group(Name=resource.physical_id)
        require(group["State"] == "ACTIVE", f"schedule group {resource.physical_id} is {group['State']}")

    def check_dashboard(self, resource: StackResource, _: dict[str, Any], __: dict[str, StackResource]) -> None:
        body = json.loads(self.client("cloudwatch").get_dashboard(DashboardName=resource.physical_id)["DashboardBody"])
        require(bool(body.get("widgets")), f"dashboard {resource.physical_id} has no widgets")
