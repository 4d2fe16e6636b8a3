"""Fallbacks a job's owner allowed by tag: run now on another instance type, or on on-demand instead of spot,
rather than wait for capacity or for a quota.

Tags (values use spaces or '+' between items; AWS tag values cannot hold commas):
- `trainguard:fallback-types=ml.p5.48xlarge:2+ml.p4d.24xlarge:4`: the alternatives, in order, each with its
  instance count (a p5 host is not a p4d host); `type` alone keeps the job's own count. At most 4, so that the
  job's own type and its alternatives fit in one InstancePreferences list (at most 5, botocore's model).
- `trainguard:on-demand-after=N`: after N spot failures in the lineage (stopped past MaxWaitTimeInSeconds, or
  refused spot capacity), relaunch on on-demand instances.

What each fallback does (`plan_fallback`):
- **capacity error, on-demand job**: relaunch with `ResourceConfig.InstancePreferences` = the job's own type
  first, then the alternatives, so SageMaker launches on "the first instance type in the list that has available
  capacity" (botocore ResourceConfig.InstancePreferences). Preferences exclude spot, instance groups and
  UltraServer placement (the same text), so those jobs never get them.
- **capacity error, spot job**: trainguard walks the list itself: the next alternative after the type the job
  ran on, still spot (the backoff it already has applies once the list is used up).
- **spot to on-demand**: EnableManagedSpotTraining and StoppingCondition.MaxWaitTimeInSeconds are dropped, since
  CreateTrainingJob refuses MaxWait without spot ("Invalid MaxWaitTimeInSeconds. It is only supported when
  EnableManagedSpotTraining is set to true", Kenza-AI/sagify#111); the alternatives come along as preferences.
- **quota wall** (`quota_fallback_request`): while the increase request is pending, the first alternative whose
  quota has room is launched under the same name as the waiting launch, so an approval later finds the job there
  and launches no second copy.

The deployer bounds what a tag may buy (`within_bounds`, SECURITY.md "What trainguard may launch"): only types in the
setting launchable_instance_types (empty, the default: no type change and no move to on-demand at all), never a type
whose accelerator count trainguard does not know, never more instances than the lineage's first job had, and never
more than MAX_GROWTH times its accelerators. A type the user did not list is never tried. The checkpoint prefix and
everything else of the request stay as they were.
Every fallback is a relaunch: it counts against the lineage's max-retries and the hourly budget, and a dry run
only says what it would send.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from trainguard.domain.fallback_options import (
    MAX_ALTERNATIVES,
    Alternative,
    FallbackOptions,
    LaunchBounds,
    within_bounds,
)
from trainguard.domain.instance_prices import on_demand_cost_sentence
from trainguard.domain.model import Category, instances_of


class FallbackKind(StrEnum):
    INSTANCE_PREFERENCES = "instance-preferences"  # SageMaker picks the first listed type with capacity
    NEXT_INSTANCE_TYPE = "next-instance-type"  # trainguard walks the list itself (spot jobs)
    ON_DEMAND = "on-demand"  # spot dropped
    QUOTA_ROOM = "quota-room"  # an alternative whose quota has room, while the increase is pending


@dataclass(frozen=True)
class Fallback:
    kind: FallbackKind
    request: dict[str, Any]
    summary: str  # the sentence for the notification: what changes, and what it costs
    instance_type: str  # what the relaunch asks for first
    instance_count: int


@dataclass(frozen=True)
class JobFacts:
    """What a fallback plan needs to know about the failed job."""

    spot: bool
    spot_failures: int  # in the lineage, this failure included (0 when it was not a spot failure)
    billable_fraction: float | None  # BillableTimeInSeconds / TrainingTimeInSeconds of a spot job (its discount)


def plan_fallback(
    category: Category, request: Mapping[str, Any], job: JobFacts, options: FallbackOptions, bounds: LaunchBounds
) -> Fallback | None:
    """The fallback this failure calls for, or None (then the relaunch is the plain one, with its backoff)."""
    options = within_bounds(options, request, bounds)
    if job.spot and options.on_demand_after is not None and job.spot_failures >= options.on_demand_after:
        return _on_demand(request, job, options)
    if category is not Category.CAPACITY or not options.alternatives:
        return None
    if _preferences_allowed(request) and not job.spot:
        return _with_preferences(request, options, "AWS had no capacity for the job's instance type")
    if job.spot and not _has_groups(request):
        return _next_type(request, options)
    return None


def _preferences_allowed(request: Mapping[str, Any]) -> bool:
    resource = request.get("ResourceConfig") or {}
    return not (
        _has_groups(request) or resource.get("InstancePlacementConfig") or request.get("EnableManagedSpotTraining")
    )


def _has_groups(request: Mapping[str, Any]) -> bool:
    return bool((request.get("ResourceConfig") or {}).get("InstanceGroups"))


def _with_preferences(request: Mapping[str, Any], options: FallbackOptions, why: str) -> Fallback | None:
    result = copy.deepcopy(dict(request))
    resource = result.setdefault("ResourceConfig", {})
    own_type, own_count = instances_of(resource)
    if not own_type or own_count < 1:
        return None
    preferences = list(resource.get("InstancePreferences") or [{"InstanceType": own_type}])
    listed = {p.get("InstanceType") for p in preferences}
    for alternative in options.alternatives:
        if alternative.instance_type not in listed and len(preferences) < MAX_ALTERNATIVES + 1:
            preferences.append({"InstanceType": alternative.instance_type})
            listed.add(alternative.instance_type)
    if len(preferences) < 2:
        return None
    counts = {a.instance_type: a.count_for(own_count) for a in options.alternatives}
    plan = resource.pop("TrainingPlanArn", None)
    counts[own_type] = own_count  # the job's own type at its own count, even when the tag lists it with another
    for preference in preferences:
        preference.setdefault("InstanceCount", counts.get(preference["InstanceType"], own_count))
        if plan and preference["InstanceType"] == own_type and not preference.get("TrainingPlanArns"):
            preference["TrainingPlanArns"] = [plan]  # the plan's instance type is the job's own
    for member in ("InstanceType", "InstanceCount"):
        resource.pop(member, None)
    resource["InstancePreferences"] = preferences
    order = ", then ".join(f"{p['InstanceCount']} x {p['InstanceType']}" for p in preferences)
    summary = (
        f"{why}, so the relaunch lists the alternatives the job's tag allows as InstancePreferences ({order}): "
        "SageMaker launches on the first one with capacity."
    )
    return Fallback(FallbackKind.INSTANCE_PREFERENCES, result, summary, own_type, own_count)


def _next_type(request: Mapping[str, Any], options: FallbackOptions) -> Fallback | None:
    result = copy.deepcopy(dict(request))
    resource = result.setdefault("ResourceConfig", {})
    current, count = instances_of(resource)
    names = [a.instance_type for a in options.alternatives]
    following = names.index(current) + 1 if current in names else 0
    if following >= len(names):
        return None  # the list is used up: the plain relaunch, with its backoff
    alternative = options.alternatives[following]
    new_count = alternative.count_for(count)
    resource["InstanceType"], resource["InstanceCount"] = alternative.instance_type, new_count
    summary = (
        f"AWS had no spot capacity for {count} x {current}, so the relaunch moves to the next alternative the job's "
        f"tag allows: {new_count} x {alternative.instance_type}, still spot."
    )
    return Fallback(FallbackKind.NEXT_INSTANCE_TYPE, result, summary, alternative.instance_type, new_count)


def _on_demand(request: Mapping[str, Any], job: JobFacts, options: FallbackOptions) -> Fallback:
    result = copy.deepcopy(dict(request))
    result.pop("EnableManagedSpotTraining", None)
    stopping = result.get("StoppingCondition")
    if isinstance(stopping, dict):
        stopping.pop("MaxWaitTimeInSeconds", None)
    instance_type, count = instances_of(result.get("ResourceConfig"))
    cost = on_demand_cost_sentence(instance_type, count, job.billable_fraction)
    summary = (
        f"The job has met {job.spot_failures} spot {'failure' if job.spot_failures == 1 else 'failures'}, the number "
        f"its tag allows before on-demand, so the relaunch runs on on-demand instances: {count} x {instance_type}. "
        f"{cost}"
    )
    with_types = (
        _with_preferences(result, options, "It may also use the alternatives its tag lists")
        if (options.alternatives and _preferences_allowed(result))
        else None
    )
    if with_types is not None:
        return Fallback(
            FallbackKind.ON_DEMAND, with_types.request, f"{summary} {with_types.summary}", instance_type, count
        )
    return Fallback(FallbackKind.ON_DEMAND, result, summary, instance_type, count)


def quota_fallback_request(
    request: Mapping[str, Any], options: FallbackOptions, has_room: Mapping[str, bool], bounds: LaunchBounds
) -> tuple[dict[str, Any], Alternative] | None:
    """The request on the first alternative whose quota has room (`has_room` by instance type), or None."""
    options = within_bounds(options, request, bounds)
    resource = request.get("ResourceConfig") or {}
    if _has_groups(request) or resource.get("InstancePreferences"):
        return None
    current, count = instances_of(resource)
    for alternative in options.alternatives:
        if alternative.instance_type != current and has_room.get(alternative.instance_type):
            result = copy.deepcopy(dict(request))
            new_resource = result.setdefault("ResourceConfig", {})
            new_resource["InstanceType"] = alternative.instance_type
            new_resource["InstanceCount"] = alternative.count_for(count)
            new_resource.pop("TrainingPlanArn", None)  # a plan is for its own instance type
            return result, alternative
    return None


def without_the_short_type(request: Mapping[str, Any], quota_name: str) -> dict[str, Any] | None:
    """A preferences request that CreateTrainingJob refused for the quota `quota_name`, without that type: "SageMaker
    AI checks your service quota for every type in the list, not just the one it selects. [...] If any type falls
    short, the request is rejected" (https://docs.aws.amazon.com/sagemaker/latest/dg/train-instance-preferences.html).
    One type left becomes a plain InstanceType request; None when the quota names none of the listed types."""
    resource = request.get("ResourceConfig") or {}
    preferences = resource.get("InstancePreferences") or []
    short = quota_name.split(" for ", 1)[0].strip()
    kept = [p for p in preferences if p.get("InstanceType") != short]
    if not kept or len(kept) == len(preferences):
        return None
    result = copy.deepcopy(dict(request))
    new_resource = result["ResourceConfig"]
    if len(kept) > 1:
        new_resource["InstancePreferences"] = copy.deepcopy(kept)
        return result
    only = kept[0]
    del new_resource["InstancePreferences"]
    new_resource["InstanceType"], new_resource["InstanceCount"] = only["InstanceType"], only["InstanceCount"]
    if only.get("TrainingPlanArns"):
        new_resource["TrainingPlanArn"] = only["TrainingPlanArns"][0]
    return result


def spot_failures_now(category: Category, spot: bool, before: int) -> int:
    """The lineage's spot failures, counting this one if it is one (past MaxWait, or spot capacity refused)."""
    if spot and category in (Category.SPOT_INTERRUPTION, Category.CAPACITY):
        return before + 1
    return before
