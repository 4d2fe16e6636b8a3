"""One policy statement against IAM's grammar and AWS's authorization data: its effect, its actions (Action or
NotAction), its resources (Resource or NotResource), its principal and its condition keys; Allow and Deny alike.

An Allow with NotAction, NotResource or NotPrincipal grants everything it does not name: it is a finding unless
the resource holding it acknowledges it by Sid with a reason (policy_reader.ACKNOWLEDGMENTS).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from trainguard_local.commands.iam_check.authorization_data import (
    TAG_KEYS,
    action_data,
    arn_fits,
    key_exists,
    key_fits,
)
from trainguard_local.commands.iam_check.condition_rules import check_condition
from trainguard_local.commands.iam_check.policy_reader import (
    PolicyStatement,
    as_arn,
    as_list,
    policy_statements,
    text,
)

# Principal shapes (IAM User Guide, "AWS JSON policy elements: Principal"), a reference standing for one part.
_PARTITION = r"(aws(-[a-z]+)*|x)"
_ACCOUNT = r"(\d{12}|x)"
SERVICE_PRINCIPAL = re.compile(r"[a-z0-9][a-z0-9.-]*\.amazonaws\.com(\.cn)?")
AWS_PRINCIPAL = re.compile(
    rf"\d{{12}}|arn:{_PARTITION}:iam::{_ACCOUNT}:(root|role/.+|user/.+)"
    rf"|arn:{_PARTITION}:sts::{_ACCOUNT}:(assumed-role|federated-user)/.+"
)
FEDERATED_PRINCIPAL = re.compile(
    rf"[a-z0-9][a-z0-9.-]*\.[a-z]+|arn:{_PARTITION}:iam::{_ACCOUNT}:(saml-provider|oidc-provider)/.+"
)
PRINCIPAL_SHAPES = {
    "AWS": AWS_PRINCIPAL,
    "Service": SERVICE_PRINCIPAL,
    "Federated": FEDERATED_PRINCIPAL,
    "CanonicalUser": re.compile(r"[0-9a-f]{64}"),
}
NEGATIONS = ("NotAction", "NotResource", "NotPrincipal")


def check_template(template: Mapping[str, Any]) -> list[str]:
    """Each finding as `<policy> <Sid>: <problem>`."""
    return [
        f"{found.policy} {found.sid or '(no Sid)'}: {problem}"
        for found in policy_statements(template)
        for problem in check_statement(template, found)
    ]


def check_statement(template: Mapping[str, Any], found: PolicyStatement) -> Iterator[str]:
    statement = found.statement
    if not isinstance(statement, dict):
        yield f"a statement that is not an object: {text(statement)}"
        return
    effect = statement.get("Effect")
    if effect not in ("Allow", "Deny"):
        yield f"Effect {text(effect)} is neither Allow nor Deny"
    yield from _exactly_one(statement, "Action", "NotAction")
    if found.kind == "trust":
        if "Resource" in statement or "NotResource" in statement:
            yield "a trust policy statement takes no Resource"
    else:
        yield from _exactly_one(statement, "Resource", "NotResource")
    yield from check_principal(found)
    for element in NEGATIONS:
        reason = str(found.acknowledged.get(element, {}).get(found.sid, ""))
        if element in statement and effect == "Allow" and len(reason.split()) < 3:
            yield (
                f"{element} in an Allow grants all it does not name; acknowledge it with a reason "
                f'(Metadata {{"trainguard:iam_check": {{"{element}": {{"<Sid>": "<why>"}}}}}}) or name what is granted'
            )
    condition = statement.get("Condition", {})
    yield from check_condition(condition)
    keys = (
        [str(k) for block in condition.values() if isinstance(block, dict) for k in block]
        if isinstance(condition, dict)
        else []
    )
    resources = [as_arn(template, r) for r in as_list(statement.get("Resource", statement.get("NotResource", [])))]
    if "Action" in statement:
        for action in as_list(statement["Action"]):
            yield from check_action(text(action), resources, keys)
        return
    for action in as_list(statement.get("NotAction", [])):  # what is not granted, or not denied, must exist
        yield from check_action(text(action), [], [])
    yield from check_action("*", [], keys)  # the actions are all others: their keys must exist


def check_action(action: str, resources: list[str], condition_keys: list[str]) -> Iterator[str]:
    if action == "*" or re.fullmatch(r"<[^>]+>", action):  # every action, or a reference known at deploy
        unknown = [key for key in condition_keys if not key_exists(key)]
        yield from (f"condition key {key}: neither a global key nor one its service defines" for key in unknown)
        return
    data = action_data(action)
    if data is None:
        yield f"{action} is not an action in AWS's authorization data"
        return
    for resource in resources:
        if not any(arn_fits(resource, arn_format) for arn_format in data.arn_formats):
            formats = ", ".join(data.arn_formats)
            yield f"{action} on {resource}: fits none of its resource types ({formats})"
    for key in condition_keys:
        if key_fits(key, data.condition_keys):
            continue
        if key.lower().startswith("aws:") and not key.lower().startswith(tuple(t.lower() for t in TAG_KEYS)):
            yield f"{action} with condition key {key}: not a global condition key (AWS's list)"
        else:
            yield f"{action} with condition key {key}: not one it takes ({', '.join(sorted(data.condition_keys))})"


def check_principal(found: PolicyStatement) -> Iterator[str]:
    """An identity policy names no principal; a resource or trust policy names one, of a valid shape."""
    statement = found.statement
    named = [element for element in ("Principal", "NotPrincipal") if element in statement]
    if found.kind == "identity":
        yield from (f"an identity policy statement takes no {element}" for element in named)
        return
    if len(named) != 1:
        yield "a resource or trust policy statement names one Principal or NotPrincipal"
        return
    principal = statement[named[0]]
    if principal == "*":
        return
    if not isinstance(principal, dict):
        yield f"{named[0]} {text(principal)}: neither * nor an object of principal types"
        return
    for kind, values in principal.items():
        shape = PRINCIPAL_SHAPES.get(str(kind))
        if shape is None:
            yield f"{named[0]} type {kind} is not one of {', '.join(PRINCIPAL_SHAPES)}"
            continue
        for value in as_list(values):
            shown = text(value)
            if (shown == "*" and kind == "AWS") or re.fullmatch(r"<[^>]+>", shown):
                continue
            if not shape.fullmatch(re.sub(r"<[^>]+>", "x", shown)):
                yield f"{named[0]} {kind} {shown}: not the shape of a principal of type {kind}"


def _exactly_one(statement: Mapping[str, Any], element: str, negation: str) -> Iterator[str]:
    if (element in statement) == (negation in statement):
        yield f"a statement has exactly one of {element} and {negation}"
