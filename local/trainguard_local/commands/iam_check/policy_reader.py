"""Every policy statement of a synthesized template, as plain data: identity policies, resource policies (key,
topic, queue, bucket, event bus, Lambda permissions) and role trust policies.

CloudFormation's functions in values (Fn::Join, Fn::GetAtt, Ref, and any other) are rendered as text with the
references as <...>, which the rules read as "some string not known until deploy".
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["identity", "resource", "trust"]

# The resources that hold a policy document, and the property it is in.
IDENTITY_POLICY_TYPES = ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy")
RESOURCE_POLICY_DOCUMENTS = {
    "AWS::KMS::Key": "KeyPolicy",
    "AWS::SNS::TopicPolicy": "PolicyDocument",
    "AWS::SQS::QueuePolicy": "PolicyDocument",
    "AWS::S3::BucketPolicy": "PolicyDocument",
    "AWS::Logs::ResourcePolicy": "PolicyDocument",  # a JSON string
}
# A statement acknowledged on purpose: the resource's Metadata names it by Sid, with the reason, e.g.
# {"trainguard:iam_check": {"NotAction": {"<Sid>": "<why>"}}} (cdk: `cfn_resource.add_metadata(...)`).
ACKNOWLEDGMENTS = "trainguard:iam_check"

# What a reference to a template resource is, as the ARN prefix of its service and resource type.
ARN_OF_RESOURCE_TYPE = {
    "AWS::SQS::Queue": "sqs:",
    "AWS::SNS::Topic": "sns:",
    "AWS::Logs::LogGroup": "logs:log-group:",
    "AWS::DynamoDB::Table": "dynamodb:table/",
    "AWS::KMS::Key": "kms:key/",
    "AWS::Lambda::Function": "lambda:function:",
    "AWS::IAM::Role": "iam:role/",
    "AWS::Scheduler::ScheduleGroup": "scheduler:schedule-group/",
    "AWS::Events::EventBus": "events:event-bus/",
    "AWS::S3::Bucket": "s3:",
}


@dataclass(frozen=True)
class PolicyStatement:
    policy: str  # the logical ID of the resource that holds it
    kind: Kind
    statement: dict[str, Any]
    acknowledged: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    @property
    def sid(self) -> str:
        return str(self.statement.get("Sid", "")) if isinstance(self.statement, dict) else ""


def identity_statements(template: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for lid, resource in template.get("Resources", {}).items():
        props = resource.get("Properties", {})
        if resource.get("Type") in IDENTITY_POLICY_TYPES:
            yield from ((lid, s) for s in as_list(document(props["PolicyDocument"]).get("Statement", [])))
        if resource.get("Type") == "AWS::IAM::Role":
            for policy in props.get("Policies", []):
                yield from ((lid, s) for s in as_list(document(policy["PolicyDocument"]).get("Statement", [])))


def policy_statements(template: Mapping[str, Any]) -> Iterator[PolicyStatement]:
    """Every statement the template grants or denies with, identity, resource and trust policies alike."""
    resources = template.get("Resources", {})
    for lid, statement in identity_statements(template):
        yield PolicyStatement(lid, "identity", statement, _acknowledged(resources[lid]))
    for lid, resource in resources.items():
        kind, props = resource.get("Type"), resource.get("Properties", {})
        found: list[dict[str, Any]] = []
        if kind in RESOURCE_POLICY_DOCUMENTS:
            found = as_list(document(props.get(RESOURCE_POLICY_DOCUMENTS[kind], {})).get("Statement", []))
        elif kind == "AWS::Events::EventBusPolicy":
            found = [bus_policy_statement(props)]
        elif kind == "AWS::Lambda::Permission":
            found = [lambda_permission_statement(props)]
        elif kind == "AWS::IAM::Role":
            trust = as_list(document(props.get("AssumeRolePolicyDocument", {})).get("Statement", []))
            yield from (PolicyStatement(lid, "trust", s, _acknowledged(resource)) for s in trust)
        yield from (PolicyStatement(lid, "resource", s, _acknowledged(resource)) for s in found)


def bus_policy_statement(props: Mapping[str, Any]) -> dict[str, Any]:
    """An event bus policy's statement: its Statement, or the older Action/Principal/Condition properties."""
    if "Statement" in props:
        return dict(props["Statement"])
    statement: dict[str, Any] = {"Effect": "Allow", "Action": props.get("Action"), "Sid": props.get("StatementId")}
    principal = props.get("Principal")
    statement["Principal"] = "*" if principal == "*" else {"AWS": principal}
    condition = props.get("Condition")
    if isinstance(condition, dict):
        statement["Condition"] = {condition.get("Type"): {condition.get("Key"): condition.get("Value")}}
    return statement


def lambda_permission_statement(props: Mapping[str, Any]) -> dict[str, Any]:
    """An AWS::Lambda::Permission as the statement Lambda adds to the function's policy for it."""
    principal = props.get("Principal")
    text = render(principal)
    if text == "*":
        who: Any = "*"
    elif isinstance(text, str) and text.endswith((".amazonaws.com", ".amazonaws.com.cn")):
        who = {"Service": principal}
    else:
        who = {"AWS": principal}
    condition: dict[str, dict[str, Any]] = {}
    if "SourceArn" in props:
        condition.setdefault("ArnLike", {})["aws:SourceArn"] = props["SourceArn"]
    for prop, key in (("SourceAccount", "aws:SourceAccount"), ("PrincipalOrgID", "aws:PrincipalOrgID")):
        if prop in props:
            condition.setdefault("StringEquals", {})[key] = props[prop]
    function = props.get("FunctionName")
    if isinstance(function, str) and not function.startswith("arn:"):  # a name: the function of this account
        function = join("arn:", PARTITION, ":lambda:", REGION, ":", ACCOUNT, f":function:{function}")
    statement = {"Effect": "Allow", "Principal": who, "Action": props.get("Action"), "Resource": function}
    return {**statement, "Condition": condition} if condition else statement


PARTITION, REGION, ACCOUNT = {"Ref": "AWS::Partition"}, {"Ref": "AWS::Region"}, {"Ref": "AWS::AccountId"}


def join(*parts: Any) -> dict[str, Any]:
    return {"Fn::Join": ["", list(parts)]}


def document(value: Any) -> dict[str, Any]:
    """A policy document, given as an object or (AWS::Logs::ResourcePolicy) as JSON text."""
    if isinstance(value, str):
        value = json.loads(value)
    return value if isinstance(value, dict) else {}


def _acknowledged(resource: Mapping[str, Any]) -> Mapping[str, Mapping[str, str]]:
    found = resource.get("Metadata", {}).get(ACKNOWLEDGMENTS, {})
    return found if isinstance(found, dict) else {}


def as_arn(template: Mapping[str, Any], value: Any) -> str:
    """A granted resource as ARN text. A reference to a template resource's ARN (Ref of a topic, GetAtt Arn of a
    queue or a log group) becomes `ref:<service>:<type prefix>`, checked by service and type."""
    reference = value.get("Ref") if isinstance(value, dict) else None
    getatt = value.get("Fn::GetAtt") if isinstance(value, dict) else None
    if isinstance(getatt, list) and len(getatt) == 2 and getatt[1] == "Arn":
        reference = getatt[0]
    if isinstance(reference, str) and reference in template.get("Resources", {}):
        kind = template["Resources"][reference]["Type"]
        return f"ref:{ARN_OF_RESOURCE_TYPE.get(kind, kind)}"
    return text(value)


def render(value: Any) -> Any:
    """A CloudFormation value as cdk-nag prints it: Fn::Join flattened, pseudo parameters as <AWS::Region>, other
    references as <LogicalId> / <LogicalId.Attr>, any other function as <Fn::Name>; a list item by item."""
    if isinstance(value, dict) and len(value) == 1:
        ((key, arg),) = value.items()
        if key == "Fn::Join" and isinstance(arg, list) and len(arg) == 2 and isinstance(arg[1], list):
            return str(arg[0]).join(str(render(part)) for part in arg[1])
        if key == "Ref":
            return f"<{arg}>"
        if key == "Fn::GetAtt" and isinstance(arg, list) and len(arg) == 2:
            return f"<{arg[0]}.{arg[1]}>"
        if key.startswith("Fn::"):
            return f"<{key}>"
    if isinstance(value, list):
        return [render(v) for v in value]
    return value


def text(value: Any) -> str:
    """A single value as text: a reference or function as <...>, a boolean as JSON writes it."""
    rendered = render(value)
    if isinstance(rendered, bool):
        return "true" if rendered else "false"
    return rendered if isinstance(rendered, str) else json.dumps(rendered)


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]
