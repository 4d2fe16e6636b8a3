"""Quota walls: read a ResourceLimitExceeded message, and size the increase the blocked launch needs.

The message names the quota, its limit, the usage and the request's delta (docs/aws-facts.md, "Errors of
CreateTrainingJob itself"); two wordings are known:

  current: The account-level service limit 'ml.p4d.24xlarge for training job usage' is 0 Instances,
           with current utilization of 0 Instances and a request delta of 1 Instances. Please use
           AWS Service Quotas to request an increase for this quota.
  older:   The account-level service limit for training-job/ml.p2.xlarge is 0 Instances, with current
           utilization of 0 Instances and a request delta of 2 Instances. Please contact AWS support to
           request an increase for this limit.   (the SDK's first months, aws/sagemaker-python-sdk#35)

Between them (2018-2024) the quoted name came with "Please contact AWS support to request an increase
for this limit"; reports quote it line-wrapped anywhere and, from HTML reports, with &#39; for the quotes
(tests/fixtures/failure_reasons_over_the_years.json, each text with its source).

Only a message AWS returned to a launch (trainguard's own CreateTrainingJob, or CloudTrail's record of the user's)
may file a request, and only for a quota of that launch: its own instance types (on-demand, spot, warm pool) or
the account's instance counts (`launch_demand`); a FailureReason never does (classification.classify_text). The
desired value is the usage the message states plus the launch's own instances: what the blocked launch needs, not a
multiple of the limit (Cloud Custodian's 1.2 x limit leaves a quota of 0 at 0), nor a delta read from the text. It
is capped by a ceiling from the settings, found by the quota's normalised name or its code, and the plan says when
the cap bit.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from trainguard.domain.wording import format_value

# Quoted names; the older wording's "<job kind>/<instance type>" is turned into today's names.
_USAGE_AND_DELTA = (
    r"(?:\s*,\s*with\s+current\s+utilization\s+of\s+(?P<usage>[\d.,]+)\s*[A-Za-z]*"
    r"\s+and\s+a\s+request\s+delta\s+of\s+(?P<delta>[\d.,]+))?"
)
_CURRENT = re.compile(
    r"service\s+limit\s+'(?P<name>[^']{1,200})'\s+is\s+(?P<limit>[\d.,]+)\s*(?P<unit>[A-Za-z]*)" + _USAGE_AND_DELTA,
    re.IGNORECASE,
)
_OLDER = re.compile(
    r"service\s+limit\s+for\s+(?P<kind>[a-z-]{1,40})/(?P<type>ml\.[a-z0-9.-]{1,40})\s+is\s+"
    r"(?P<limit>[\d.,]+)\s*(?P<unit>[A-Za-z]*)" + _USAGE_AND_DELTA,
    re.IGNORECASE,
)
_NOT_A_QUOTA = re.compile(r"is\s+not\s+available\s+in\s+this\s+region", re.IGNORECASE)
_KIND_NAMES = {
    "training-job": "for training job usage",
    "processing-job": "for processing job usage",
    "transform-job": "for transform job usage",
    "endpoint": "for endpoint usage",
}


@dataclass(frozen=True)
class QuotaDemand:
    """What a ResourceLimitExceeded message says about the quota that blocked a launch."""

    quota_name: str  # as AWS names it in Service Quotas, e.g. "ml.p4d.24xlarge for training job usage"
    limit: float
    usage: float | None = None
    delta: float | None = None
    unit: str = ""

    @property
    def needed(self) -> float | None:
        """usage + delta: the value at which the blocked launch fits. None if the message lacks them."""
        if self.usage is None or self.delta is None:
            return None
        return self.usage + self.delta


@dataclass(frozen=True)
class QuotaRequestPlan:
    quota_name: str
    desired_value: float
    ceiling_applied: bool
    reason: str

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class NoQuotaRequest:
    """No increase can help, or none is needed; `reason` says which."""

    reason: str


def normalize_quota_name(name: str) -> str:
    """Quota names compared loosely: whitespace collapsed (texts arrive line-wrapped), case ignored."""
    return " ".join(name.split()).lower()


def read_quota_error(text: str) -> QuotaDemand | None:
    """The quota a ResourceLimitExceeded text names, or None when the text names none (or names a
    region problem that no quota can fix)."""
    flat = " ".join(html.unescape(text).split())
    if _NOT_A_QUOTA.search(flat):
        return None
    found = _CURRENT.search(flat)
    if found:
        limit = _number(found["limit"])
        if limit is None:
            return None
        return QuotaDemand(
            quota_name=found["name"].strip(),
            limit=limit,
            usage=_number(found["usage"]),
            delta=_number(found["delta"]),
            unit=found["unit"],
        )
    older = _OLDER.search(flat)
    if older and older["kind"].lower() in _KIND_NAMES:
        limit = _number(older["limit"])
        if limit is None:
            return None
        name = f"{older['type'].lower()} {_KIND_NAMES[older['kind'].lower()]}"
        return QuotaDemand(
            quota_name=name,
            limit=limit,
            usage=_number(older["usage"]),
            delta=_number(older["delta"]),
            unit=older["unit"],
        )
    return None


# The account's instance counts (Service Quotas names, docs/aws-facts.md): what the launch needs of each.
_ACROSS_ALL_JOBS = "number of instances across all training jobs"  # usage + the launch's instances
_PER_JOB = "maximum number of instances per training job"  # the launch's instances alone
# A quota of the launch's own type, whichever of them AWS names (the stand-in, for one, names the on-demand quota for
# a spot launch): each is sized by the launch's own instances of that type.
_PER_TYPE_KINDS = ("for training job usage", "for spot training job usage", "for training warm pool usage")


def launch_demand(demand: QuotaDemand, request: Mapping[str, Any]) -> QuotaDemand | NoQuotaRequest:
    """The demand as the blocked launch's own request sizes it, or why no request may be filed: a quota that is
    neither one of the launch's instance types nor an instance count of the account is not this launch's to
    raise, whatever the message names."""
    name = normalize_quota_name(demand.quota_name)
    counts, total = _instances_by_type(request.get("ResourceConfig"))
    usage = demand.usage if demand.usage is not None else demand.limit
    if name == _ACROSS_ALL_JOBS and total:
        return QuotaDemand(demand.quota_name, demand.limit, usage, float(total), demand.unit)
    if name == _PER_JOB and total:
        return QuotaDemand(demand.quota_name, demand.limit, 0.0, float(total), demand.unit)
    for instance_type, count in counts.items():
        if name in (f"{instance_type} {kind}" for kind in _PER_TYPE_KINDS):
            return QuotaDemand(demand.quota_name, demand.limit, usage, float(count), demand.unit)
    return NoQuotaRequest(
        f"'{demand.quota_name}' is not a quota of this launch ({', '.join(counts) or 'no instance type'}) nor the "
        "account's instance count, so trainguard requests nothing for it"
    )


def _instances_by_type(resource_config: object) -> tuple[dict[str, int], int]:
    """Instances per type a ResourceConfig asks for (lower-cased names), and the instances the launch runs: the
    groups add up; each preference counts on its own (SageMaker checks the quota of every listed type,
    fallbacks.without_the_short_type) and the launch runs on one of them."""
    if not isinstance(resource_config, Mapping):
        return {}, 0
    groups, preferences = resource_config.get("InstanceGroups"), resource_config.get("InstancePreferences")
    entries = groups if isinstance(groups, list) and groups else preferences if isinstance(preferences, list) else []
    counts: dict[str, int] = {}
    for entry in entries or [resource_config]:
        kind = entry.get("InstanceType") if isinstance(entry, Mapping) else None
        count = entry.get("InstanceCount", resource_config.get("InstanceCount")) if isinstance(entry, Mapping) else 0
        if isinstance(kind, str) and kind and type(count) is int and count > 0:
            added = counts.get(kind.lower(), 0) + count
            counts[kind.lower()] = added if entries is groups else max(count, counts.get(kind.lower(), 0))
    if not counts:
        return {}, 0
    return counts, sum(counts.values()) if entries is groups and groups else max(counts.values())


def ceiling_for(ceilings: Mapping[str, float], quota_name: str, quota_code: str, default_ceiling: float) -> float:
    """The deployer's ceiling for a quota, keyed by its name (compared as normalize_quota_name does) or its code."""
    wanted = {normalize_quota_name(quota_name), normalize_quota_name(quota_code)} - {""}
    for key, ceiling in ceilings.items():
        if normalize_quota_name(key) in wanted:
            return ceiling
    return default_ceiling


def plan_quota_request(
    demand: QuotaDemand,
    *,
    current_value: float | None,
    launch_instance_count: int | None,
    ceilings: Mapping[str, float],
    default_ceiling: float,
    quota_code: str = "",
) -> QuotaRequestPlan | NoQuotaRequest:
    """How much to ask for. `current_value` comes from GetServiceQuota (None if unknown);
    `launch_instance_count` sizes the older wording, which gives no usage or delta."""
    current = demand.limit if current_value is None else current_value
    needed = demand.needed
    how = f"{instances(demand.usage or 0)} in use plus {instances(demand.delta or 0)} for this launch"
    if needed is None:
        if launch_instance_count is None:
            return NoQuotaRequest(
                f"the message gives the limit of '{demand.quota_name}', {instances(demand.limit)}, "
                "but not the usage or the launch's size, so trainguard cannot size a request"
            )
        needed = demand.limit + launch_instance_count
        how = f"the limit plus the launch's {instances(launch_instance_count)}, as the message gives no usage"
    needed = math.ceil(needed)
    if needed <= current:
        return NoQuotaRequest(
            f"'{demand.quota_name}' is already {instances(current)}, enough for this launch, which needs "
            f"{instances(needed)}. The wall was usage by other jobs, which passes as they finish"
        )
    ceiling = ceiling_for(ceilings, demand.quota_name, quota_code, default_ceiling)
    if ceiling <= current:
        return NoQuotaRequest(
            f"'{demand.quota_name}' is {instances(current)}, at or above trainguard's ceiling of "
            f"{instances(ceiling)} for it. A person must decide whether to ask for {instances(needed)}"
        )
    desired = min(needed, ceiling)
    capped = desired < needed
    reason = f"the launch needs {instances(needed)}: {how}. The quota is {instances(current)}"
    if capped:
        reason += f". trainguard's ceiling for this quota is {instances(ceiling)}, so it asks for that much only"
    return QuotaRequestPlan(demand.quota_name, float(desired), capped, reason)


def _number(text: str | None) -> float | None:
    if not text:
        return None
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def instances(value: float) -> str:
    """A value of an instance quota, with its unit: trainguard files requests for instance counts only
    (launch_demand), which Service Quotas and the ResourceLimitExceeded message count in Instances."""
    return f"{format_value(value)} {'instance' if value == 1 else 'instances'}"


@dataclass(frozen=True)
class WaitingLaunch:
    """A launch a quota blocked, kept until the quota is raised (or the wait expires)."""

    job_name: str  # the name the launch will create
    quota_name: str
    request: dict[str, object]  # the CreateTrainingJob request, ready to send
    origin: str  # "relaunch" (trainguard's own retry) or "user-launch" (seen through CloudTrail)
    blocked_job: str  # the failed job a relaunch continues, or the user's launch itself
    since: datetime
    give_up_at: datetime
    lineage_root: str = ""
    attempt: int = 0


class WaitVerdict(StrEnum):
    LAUNCH = "launch"  # the request was approved, or there is none open: try the launch now
    WAIT = "wait"  # the request is still open
    GIVE_UP = "give-up"  # the request was refused or closed
    EXPIRE = "expire"  # waited longer than the settings allow


def judge_waiting_launch(waiting: WaitingLaunch, request_status: str | None, now: datetime) -> WaitVerdict:
    """What the periodic check does with one waiting launch, given its quota request's status
    (None when trainguard filed no request for that quota, or it is no longer known)."""
    if request_status in ("DENIED", "NOT_APPROVED", "CASE_CLOSED", "INVALID_REQUEST"):
        return WaitVerdict.GIVE_UP
    if now >= waiting.give_up_at:
        return WaitVerdict.EXPIRE
    if request_status in ("PENDING", "CASE_OPENED"):
        return WaitVerdict.WAIT
    return WaitVerdict.LAUNCH
