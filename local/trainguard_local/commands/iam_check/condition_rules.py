"""A statement's Condition element: each operator is one of IAM's, fits its key's type, and each value has the
shape the key's type gives.

Operators: IAM User Guide, "IAM JSON policy elements: Condition operators",
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html (read on
2026-12-04): string, numeric, date, Boolean, binary, IP address and ARN operators, `...IfExists` on any but
Null, and the set operators `ForAllValues:` / `ForAnyValue:`, which are for multivalued keys only ("Do not use
set operators with single-valued condition keys"; a multivalued key needs one). The key's type comes from
AWS's list of global keys (aws:...) or the authorization data (service keys); which keys exist for the
statement's actions is judged by statement_rules.py.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Iterator
from typing import Any

from trainguard_local.commands.iam_check.authorization_data import global_key, key_type
from trainguard_local.commands.iam_check.global_condition_keys import (
    ACCOUNT_ID,
    ACCOUNT_KEYS,
    ORGANIZATION_ID,
    ORGANIZATION_KEYS,
    SENSITIVE_KEYS,
)
from trainguard_local.commands.iam_check.policy_reader import as_list, text

# Each operator, with the key types it compares.
OPERATOR_TYPES: dict[str, frozenset[str]] = {
    **dict.fromkeys(
        (
            "StringEquals",
            "StringNotEquals",
            "StringEqualsIgnoreCase",
            "StringNotEqualsIgnoreCase",
            "StringLike",
            "StringNotLike",
        ),
        frozenset({"String", "ARN"}),  # AWS recommends the ARN operators for ARNs, and allows these
    ),
    **dict.fromkeys(
        (
            "NumericEquals",
            "NumericNotEquals",
            "NumericLessThan",
            "NumericLessThanEquals",
            "NumericGreaterThan",
            "NumericGreaterThanEquals",
        ),
        frozenset({"Numeric"}),
    ),
    **dict.fromkeys(
        (
            "DateEquals",
            "DateNotEquals",
            "DateLessThan",
            "DateLessThanEquals",
            "DateGreaterThan",
            "DateGreaterThanEquals",
        ),
        frozenset({"Date"}),
    ),
    "Bool": frozenset({"Bool"}),
    "BinaryEquals": frozenset({"Binary", "String"}),  # no key of the data is typed Binary: the value is checked
    "IpAddress": frozenset({"IPAddress"}),
    "NotIpAddress": frozenset({"IPAddress"}),
    **dict.fromkeys(("ArnEquals", "ArnLike", "ArnNotEquals", "ArnNotLike"), frozenset({"ARN"})),
    "Null": frozenset({"String", "ARN", "Numeric", "Date", "Bool", "IPAddress", "Binary"}),
}
SET_OPERATORS = ("ForAllValues:", "ForAnyValue:")
IF_EXISTS = "IfExists"

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?")
_NUMBER = re.compile(r"-?\d+(\.\d+)?")
_ARN = re.compile(r"arn:[^:]*:[^:]*:[^:]*:[^:]*:.+")
_WILDCARDS = ("*", "?")
_REFERENCE = r"<[^>]+>|\$\{[^}]+\}"  # a CloudFormation reference as rendered, or a policy variable


def parse_operator(operator: str) -> tuple[str, str, bool] | str:
    """(set operator or "", base operator, IfExists) for a valid operator; otherwise why it is not one."""
    prefix = next((p for p in SET_OPERATORS if operator.startswith(p)), "")
    base = operator.removeprefix(prefix)
    if_exists = base.endswith(IF_EXISTS) and base != IF_EXISTS
    base = base.removesuffix(IF_EXISTS) if if_exists else base
    if base not in OPERATOR_TYPES:
        return f"condition operator {operator} is not one of IAM's"
    if base == "Null" and (if_exists or prefix):
        return f"condition operator {operator}: Null takes no IfExists and no set operator"
    return prefix, base, if_exists


def check_condition(condition: Any) -> Iterator[str]:
    """The problems of a Condition element's operators and values (its keys' existence aside)."""
    if not isinstance(condition, dict):
        yield f"Condition is not an object: {text(condition)}"
        return
    for operator, block in condition.items():
        parsed = parse_operator(str(operator))
        if isinstance(parsed, str):
            yield parsed
            continue
        if not isinstance(block, dict):
            yield f"{operator}: not an object of keys and values"
            continue
        for key, values in block.items():
            yield from check_key_values(str(operator), parsed, str(key), values)


def check_key_values(operator: str, parsed: tuple[str, str, bool], key: str, values: Any) -> Iterator[str]:
    prefix, base, _ = parsed
    found = key_type(key)
    if found is None:
        return  # an unknown key: statement_rules.py says so
    multivalued = found.startswith("ArrayOf")
    types = frozenset(found.removeprefix("ArrayOf").split("|"))
    if prefix and not multivalued:
        yield f"{operator} on {key}: a set operator on a single-valued key"
    if multivalued and not prefix and base != "Null":
        yield f"{operator} on {key}: a multivalued key needs ForAllValues: or ForAnyValue:"
    if not types & OPERATOR_TYPES[base]:
        yield f"{operator} on {key}: the operator compares {'/'.join(sorted(OPERATOR_TYPES[base]))}, the key is {found}"
        return
    for value in as_list(values):
        problem = value_problem(base, key, types, value)
        if problem:
            yield f"{operator} on {key}: {text(value)} {problem}"


def value_problem(base: str, key: str, types: frozenset[str], value: Any) -> str | None:
    """Why a condition value does not have the shape its key's type and its operator give, or None."""
    if isinstance(value, (dict, list)) and not _is_function(value):
        return "is not a single value"
    shown = text(value)
    if "<" in shown or "${" in shown:  # a CloudFormation reference or a policy variable: known at deploy
        return _arn_problem(shown) if base.startswith("Arn") or types == {"ARN"} else None
    if base in ("Bool", "Null"):
        return None if shown.lower() in ("true", "false") else "is not true or false"
    if base.startswith("Numeric"):
        return None if _NUMBER.fullmatch(shown) else "is not a number"
    if base.startswith("Date"):
        if _DATE.fullmatch(shown) or ("Numeric" in types and _NUMBER.fullmatch(shown)):
            return None
        return "is not an ISO 8601 date"
    if base in ("IpAddress", "NotIpAddress"):
        return None if _is_network(shown) else "is not an IP address or CIDR range"
    if base == "BinaryEquals":
        return None if _is_base64(shown) else "is not base64"
    canonical = global_key(key) or key
    if canonical in SENSITIVE_KEYS and any(w in shown for w in _WILDCARDS):
        return "has a wildcard, which no sensitive key may have"
    if canonical in ACCOUNT_KEYS and not re.fullmatch(ACCOUNT_ID, shown):
        return "is not an account ID (12 digits)"
    if canonical in ORGANIZATION_KEYS and not re.fullmatch(ORGANIZATION_ID, shown):
        return "is not an organization ID (o-...)"
    if types == {"ARN"}:
        return _arn_problem(shown)
    return None


def _arn_problem(shown: str) -> str | None:
    """An ARN, a wildcard, or a reference; a reference inside an ARN (<AWS::Partition>) stands for one part."""
    if shown == "*" or re.fullmatch(_REFERENCE, shown):
        return None
    known = re.sub(_REFERENCE, "x", shown)
    if _ARN.fullmatch(known) or (known.startswith("arn:") and any(w in known for w in _WILDCARDS)):
        return None
    return "is not an ARN"


def _is_function(value: Any) -> bool:
    """A CloudFormation reference or function (Ref, Fn::GetAtt, Fn::Join, ...)."""
    return (
        isinstance(value, dict)
        and len(value) == 1
        and (next(iter(value)) == "Ref" or next(iter(value)).startswith("Fn::"))
    )


def _is_network(shown: str) -> bool:
    try:
        ipaddress.ip_network(shown, strict=False)
    except ValueError:
        return False
    return True


def _is_base64(shown: str) -> bool:
    try:
        base64.b64decode(shown, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True
