"""Just enough of IAM's policy evaluation to ask the cross-account questions of issue 16 of a synthesized
template: may this principal assume this role (its trust policy), may this role call this action on this
resource (its identity policies)?

The rules, from "Policy evaluation logic" and "Cross-account policy evaluation logic" in the IAM User Guide
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html,
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic-cross-account.html):
a request is allowed when some statement allows it and none denies it; a statement applies when its action,
its resource (or, in a trust policy, its principal) and every one of its conditions match. An `"AWS"` principal
that is an account's root ARN stands for every principal of that account ("Principal" element: "AWS account
principals"); a specific role ARN stands for that role only. The condition operators are those the templates
use: StringEquals and StringLike (case-sensitive; `*` and `?` wildcards for the Like form), and ArnEquals and
ArnLike, which IAM treats alike: each of an ARN's six colon-separated parts is matched on its own and may hold
`*` or `?` ("ARN condition operators" in the IAM User Guide's condition operators); Null, true when the key is
absent from the request and false when present ("Condition operator to check existence of condition keys"); and
the set operators on multivalued keys ("Multivalued context keys"): ForAllValues, true when every value of the
request's key matches one of the policy's, and so also when the key is absent; ForAnyValue, true when at least
one does, and so false when the key is absent. Actions and resources match with `*` and `?` wildcards, and
nothing else is special. A cross-account request also needs the caller's own identity policy to allow it: both
sides are asked separately here.

Anything the templates do not use (NotAction, NotPrincipal, other operators, IfExists) raises, so the test
cannot pass by skipping what it does not understand.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Render = Callable[[Any], str]  # a template value (Fn::Join, Ref of a pseudo parameter) as text


@dataclass(frozen=True)
class Principal:
    """Who asks: an IAM role's ARN, and the organization its account belongs to."""

    arn: str
    organization_id: str = ""

    @property
    def account(self) -> str:
        return self.arn.split(":")[4]


def _like(pattern: str, value: str) -> bool:
    """IAM's wildcards: `*` any run of characters, `?` any one; nothing else is special (no [...] classes)."""
    expression = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(expression, value, flags=re.DOTALL) is not None


def _arn_like(pattern: str, value: str) -> bool:
    """ArnEquals and ArnLike: the six parts of the ARN, each matched on its own."""
    wanted, actual = pattern.split(":", 5), value.split(":", 5)
    return len(wanted) == len(actual) == 6 and all(_like(w, a) for w, a in zip(wanted, actual, strict=True))


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


Context = Mapping[str, str | Sequence[str]]  # a request's condition keys: a string, or a multivalued key's list


_OPERATORS = ("StringEquals", "StringEqualsIgnoreCase", "StringLike", "ArnEquals", "ArnLike")


def _matches(operator: str, wanted: list[str], actual: str) -> bool:
    if operator == "StringEquals":
        return actual in wanted
    if operator == "StringEqualsIgnoreCase":  # "Exact matching, ignoring case" (IAM User Guide, condition operators)
        return actual.lower() in (w.lower() for w in wanted)
    if operator == "StringLike":
        return any(_like(w, actual) for w in wanted)
    if operator in ("ArnEquals", "ArnLike"):
        return any(_arn_like(w, actual) for w in wanted)
    raise NotImplementedError(f"condition operator {operator}")


def conditions_hold(conditions: Mapping[str, Any], context: Context, render: Render) -> bool:
    for operator, tests in conditions.items():
        if operator != "Null" and operator.rpartition(":")[2] not in _OPERATORS:
            raise NotImplementedError(f"condition operator {operator}")
        for key, expected in tests.items():
            actual = context.get(key)
            wanted = [render(v) for v in _as_list(expected)]
            if operator == "Null":
                matched = (actual is None) == (wanted == ["true"])
            elif operator.startswith(("ForAllValues:", "ForAnyValue:")):
                set_operator, _, inner = operator.partition(":")
                values = [] if actual is None else _as_list(actual)
                hits = [_matches(inner, wanted, value) for value in values]
                matched = all(hits) if set_operator == "ForAllValues" else any(hits)
            else:
                matched = isinstance(actual, str) and _matches(operator, wanted, actual)
            if not matched:
                return False
    return True


def _check_supported(statement: Mapping[str, Any]) -> None:
    if unsupported := {"NotAction", "NotPrincipal", "NotResource"} & set(statement):
        raise NotImplementedError(f"statement elements {sorted(unsupported)}")


def may_assume(trust: Mapping[str, Any], who: Principal, render: Render) -> bool:
    """Whether the trust policy lets `who` call sts:AssumeRole (the role's side of a cross-account request)."""
    return may_act_on(trust, who, "sts:AssumeRole", render)


def may_call(
    statements: Sequence[Mapping[str, Any]], action: str, resource: str, render: Render, context: Context | None = None
) -> bool:
    """Whether identity-policy `statements` allow `action` on `resource` for a request with the condition keys of
    `context` (None: a statement with conditions raises, so a test cannot pass by leaving the request out)."""
    allowed = False
    for statement in statements:
        _check_supported(statement)
        if statement.get("Condition") and context is None:
            raise NotImplementedError("identity statements with conditions, asked without a request context")
        if not any(_like(a, action) for a in _as_list(statement["Action"])):
            continue
        if not any(_like(render(r), resource) for r in _as_list(statement["Resource"])):
            continue
        if conditions_hold(statement.get("Condition", {}), context or {}, render):
            if statement["Effect"] == "Deny":
                return False
            allowed = True
    return allowed


def may_act_on(policy: Mapping[str, Any], who: Principal, action: str, render: Render) -> bool:
    """Whether a resource policy (a bus's, a role's trust) lets `who` call `action` on its resource (that side of
    a cross-account request)."""
    context = {"aws:PrincipalArn": who.arn, "aws:PrincipalAccount": who.account}
    if who.organization_id:
        context["aws:PrincipalOrgID"] = who.organization_id
    allowed = False
    for statement in policy["Statement"]:
        _check_supported(statement)
        if not any(_like(a, action) for a in _as_list(statement["Action"])):
            continue
        principals = [render(p) for p in _as_list(statement.get("Principal", {}).get("AWS", []))]
        named = any(p in (who.arn, f"arn:aws:iam::{who.account}:root", who.account) for p in principals)
        if named and conditions_hold(statement.get("Condition", {}), context, render):
            if statement["Effect"] == "Deny":
                return False
            allowed = True
    return allowed
