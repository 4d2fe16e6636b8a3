"""What a job's fallback tags ask for, and what the deployment's bounds leave of it (SECURITY.md, "What trainguard
may launch"); fallbacks.py plans the launch from what is left.

The bounds: only types in the setting launchable_instance_types (empty, the default: no type change and no move to
on-demand at all), never a type whose accelerator count trainguard does not know, never more instances than the
job's own, and never more than MAX_GROWTH times its accelerators.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trainguard.domain.instance_types import accelerators_per_host
from trainguard.domain.model import instance_types_in, instances_of
from trainguard.domain.policy import TagKeys, TagProblem

MAX_ALTERNATIVES = 4  # the job's own type + 4 = InstancePreferenceList's maximum of 5 (botocore)
MAX_ON_DEMAND_AFTER = 10
MAX_GROWTH = 2  # an alternative may have at most this many times the job's own accelerators
_ALTERNATIVE = re.compile(r"(?P<type>ml\.[a-z0-9]+(?:-[a-z0-9]+)?\.[a-z0-9]+)(?::(?P<count>[0-9]{1,4}))?")


@dataclass(frozen=True)
class Alternative:
    instance_type: str
    instance_count: int | None  # None: the job's own count

    def count_for(self, own_count: int) -> int:
        return self.instance_count if self.instance_count is not None else own_count

    def describe(self, own_count: int) -> str:
        return f"{self.count_for(own_count)} x {self.instance_type}"


@dataclass(frozen=True)
class FallbackOptions:
    alternatives: tuple[Alternative, ...] = ()
    on_demand_after: int | None = None  # None: never move a spot job to on-demand
    problems: tuple[TagProblem, ...] = ()
    # What the tags asked for and the deployment's bounds refused, one sentence each (within_bounds).
    not_followed: tuple[str, ...] = ()


def read_fallback_options(tags: Mapping[str, str], keys: TagKeys) -> FallbackOptions:
    """The fallbacks a job's tags allow. Never raises: a value that cannot be read allows nothing and is reported."""
    problems: list[TagProblem] = []
    alternatives: tuple[Alternative, ...] = ()
    raw = tags.get(keys.fallback_types)
    if raw is not None:
        parsed = _parse_alternatives(raw)
        if parsed is None:
            problems.append(TagProblem(keys.fallback_types, raw, "no instance-type fallback"))
        else:
            alternatives = parsed
    on_demand_after = None
    raw = tags.get(keys.on_demand_after)
    if raw is not None:
        text = raw.strip()
        if re.fullmatch(r"[0-9]{1,2}", text) and 1 <= int(text) <= MAX_ON_DEMAND_AFTER:
            on_demand_after = int(text)
        else:
            problems.append(TagProblem(keys.on_demand_after, raw, "spot stays spot"))
    return FallbackOptions(alternatives, on_demand_after, tuple(problems))


def _parse_alternatives(raw: str) -> tuple[Alternative, ...] | None:
    items = [item for item in re.split(r"[\s+]+", raw.strip()) if item]
    if not items or len(items) > MAX_ALTERNATIVES:
        return None
    found: list[Alternative] = []
    for item in items:
        match = _ALTERNATIVE.fullmatch(item)
        if match is None:
            return None
        count = int(match["count"]) if match["count"] else None
        if count is not None and count < 1:
            return None
        if all(a.instance_type != match["type"] for a in found):
            found.append(Alternative(match["type"], count))
    return tuple(found)


NO_LAUNCHABLE_TYPES = (
    "the deployment allows no instance-type change and no move to on-demand (setting launchable_instance_types is "
    "empty), so trainguard relaunches only the shape the job was launched with"
)


NO_LINEAGE_START = (
    "trainguard cannot tell what this lineage's first job was launched with (its name is a relaunch's, and its "
    "tags or that job do not agree), so it changes no type and makes no move to on-demand"
)


@dataclass(frozen=True)
class LaunchBounds:
    """What a fallback may grow to: the deployer's `launchable` types (setting launchable_instance_types), and the
    ResourceConfig the lineage's first job was launched with by its owner (None: it cannot be told), which the
    growth is measured against, so that relaunch after relaunch cannot compound."""

    launchable: tuple[str, ...]
    lineage_start: Mapping[str, Any] | None

    @classmethod
    def of_a_first_launch(cls, launchable: tuple[str, ...], request: Mapping[str, Any]) -> LaunchBounds:
        """The bounds of a launch that starts its lineage (a user's own launch)."""
        return cls(launchable, request.get("ResourceConfig") or {})


def within_bounds(options: FallbackOptions, request: Mapping[str, Any], bounds: LaunchBounds) -> FallbackOptions:
    """The options the deployment's bounds leave: alternatives among the launchable types, of a known accelerator
    count, no more instances than the lineage's first job and no more than MAX_GROWTH times its accelerators (none
    when that job cannot be told); a move to on-demand only when the request's own types are launchable.
    `not_followed` says what was dropped."""
    launchable = bounds.launchable
    if not options.alternatives and options.on_demand_after is None:
        return options
    if not launchable:
        return FallbackOptions((), None, options.problems, (NO_LAUNCHABLE_TYPES,))
    if bounds.lineage_start is None:
        return FallbackOptions((), None, options.problems, (NO_LINEAGE_START,))
    own_type, own_count = instances_of(bounds.lineage_start)
    own_accelerators = accelerators_per_host(own_type)
    kept, dropped = [], []
    for alternative in options.alternatives:
        why_not = _why_not_alternative(alternative, own_type, own_count, own_accelerators, launchable)
        if why_not:
            dropped.append(f"{alternative.describe(own_count)}: {why_not}")
        else:
            kept.append(alternative)
    on_demand_after = options.on_demand_after
    outside = types_outside(request.get("ResourceConfig"), launchable)
    if on_demand_after is not None and (outside or not own_type):
        on_demand_after = None
        dropped.append(f"no move to on-demand: {outside or 'the job'} is not in launchable_instance_types")
    return FallbackOptions(tuple(kept), on_demand_after, options.problems, tuple(dropped))


def types_outside(resource_config: object, launchable: tuple[str, ...]) -> str:
    """The request's instance types that the deployment's bound leaves out, comma-separated ('' when none, or when
    no bound is set: then trainguard launches only the shape the owner launched, whatever its type)."""
    if not launchable:
        return ""
    return ", ".join(t for t in instance_types_in(resource_config) if t not in launchable)


def _why_not_alternative(
    alternative: Alternative, own_type: str, own_count: int, own_accelerators: int | None, launchable: tuple[str, ...]
) -> str:
    if alternative.instance_type not in launchable:
        return "not in the deployment's launchable_instance_types"
    theirs = accelerators_per_host(alternative.instance_type)
    if theirs is None or own_accelerators is None:
        unknown = alternative.instance_type if theirs is None else own_type or "the job's own type"
        return f"trainguard does not know how many accelerators {unknown} has, so it cannot bound the launch"
    count = alternative.count_for(own_count)
    if count > own_count:
        return f"more instances than the lineage's first job had ({own_count})"
    if count * theirs > MAX_GROWTH * own_count * own_accelerators:
        return (
            f"{count * theirs} accelerators, more than {MAX_GROWTH} x the {own_count * own_accelerators} the "
            "lineage's first job had"
        )
    return ""
