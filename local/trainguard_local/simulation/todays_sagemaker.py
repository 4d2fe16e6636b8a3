"""Today's SageMaker in the trace: each job's parent, its owner's fallback tags, and which alternatives have room.

These draws come from a stream of their own (trace.py's generate_trace), so that the trace's earlier draws give
the same jobs and faults as before they were added. Every share is an assumption, kept conservative: most teams
list no fallback, and an alternative is often short too.
"""

from __future__ import annotations

import math
import random
from typing import Protocol, TypedDict

from trainguard_local.simulation.fault_table import FaultKind

PARENT_SHARES = {"pipelines": 0.06, "aws_batch": 0.04}  # jobs a pipeline's step or a Batch queue launched
PARENT_RETRY_SHARE = 0.5  # of those, owners who configured the parent's retry of internal and capacity errors
FALLBACK_SHARE = 0.25  # jobs whose owner lists alternatives (trainguard:fallback-types)
PREFERENCES_SHARE = 0.3  # of on-demand jobs with alternatives, those launched with InstancePreferences themselves
ON_DEMAND_AFTER_SHARE = 0.4  # spot jobs tagged trainguard:on-demand-after=1
ALTERNATIVE_CAPACITY_CHANCE = 0.5  # an alternative has capacity when the job's own type has none
ALTERNATIVE_QUOTA_ROOM_CHANCE = 0.3  # an alternative's quota has room when the job's own type is walled
# Alternatives a team would list for a type, with the instance count that gives about the same compute: within
# the catalogue's types, a host of the next generation for half the hosts (assumption).
ALTERNATIVES: dict[str, tuple[tuple[str, float], ...]] = {
    "ml.p4d.24xlarge": (("ml.p5.48xlarge", 0.5),),
    "ml.p5.48xlarge": (("ml.p4d.24xlarge", 2.0),),
    "ml.p3.16xlarge": (("ml.p4d.24xlarge", 0.5),),
    "ml.g5.48xlarge": (("ml.p4d.24xlarge", 0.5),),
    "ml.g5.12xlarge": (("ml.g5.48xlarge", 0.25),),
    "ml.g5.xlarge": (("ml.g4dn.xlarge", 1.0),),
    "ml.g4dn.xlarge": (("ml.g5.xlarge", 1.0),),
}


class ParentAndFallbacks(TypedDict):
    """The JobSpec fields today's SageMaker sets (trace.py): the name too, as AWS Batch prefixes it."""

    name: str
    owner: str
    owner_retries: bool
    fallback_types: tuple[tuple[str, int], ...]
    launched_with_preferences: bool
    on_demand_after: int | None


class LaunchedJob(Protocol):
    """What the draws read of a trace's job (trace.py's JobSpec)."""

    @property
    def name(self) -> str: ...
    @property
    def instance_type(self) -> str: ...
    @property
    def instance_count(self) -> int: ...
    @property
    def spot(self) -> bool: ...


def draw_parent_and_fallbacks(rng: random.Random, job: LaunchedJob) -> ParentAndFallbacks:
    """Its parent, its fallback tags and whether it was launched with InstancePreferences."""
    owners, shares = [*PARENT_SHARES, ""], [*PARENT_SHARES.values(), 1.0 - sum(PARENT_SHARES.values())]
    owner = rng.choices(owners, weights=shares)[0]
    owner_retries = bool(owner) and rng.random() < PARENT_RETRY_SHARE
    fallbacks: tuple[tuple[str, int], ...] = ()
    if rng.random() < FALLBACK_SHARE:
        fallbacks = tuple(
            (kind, max(1, math.ceil(job.instance_count * ratio))) for kind, ratio in ALTERNATIVES[job.instance_type]
        )
    preferences = bool(fallbacks) and not job.spot and rng.random() < PREFERENCES_SHARE
    on_demand_after = 1 if job.spot and rng.random() < ON_DEMAND_AFTER_SHARE else None
    return ParentAndFallbacks(
        # AWS Batch names every training job it launches AWSBatch<name> (its service-linked role may create no other).
        name=f"AWSBatch{job.name}" if owner == "aws_batch" else job.name,
        owner=owner,
        owner_retries=owner_retries,
        fallback_types=fallbacks,
        launched_with_preferences=preferences,
        on_demand_after=on_demand_after,
    )


class AlternativesWithRoom(TypedDict, total=False):
    """The Fault fields of the listed alternatives that have room when the job's own type has none (trace.py)."""

    alternatives_with_capacity: tuple[str, ...]  # at a capacity error
    alternatives_with_quota_room: tuple[str, ...]  # at a quota wall


def draw_alternatives(
    rng: random.Random, kind: FaultKind, fallback_types: tuple[tuple[str, int], ...]
) -> AlternativesWithRoom:
    """Which listed alternatives have capacity (a capacity error) or quota room (a quota wall) at the time; nothing
    for another kind of fault or a job that lists no alternative."""
    if not fallback_types:
        return AlternativesWithRoom()
    if kind is FaultKind.CAPACITY_ERROR:
        return AlternativesWithRoom(
            alternatives_with_capacity=_with_room(rng, fallback_types, ALTERNATIVE_CAPACITY_CHANCE)
        )
    if kind is FaultKind.QUOTA_WALL:
        return AlternativesWithRoom(
            alternatives_with_quota_room=_with_room(rng, fallback_types, ALTERNATIVE_QUOTA_ROOM_CHANCE)
        )
    return AlternativesWithRoom()


def _with_room(rng: random.Random, fallback_types: tuple[tuple[str, int], ...], chance: float) -> tuple[str, ...]:
    return tuple(alternative for alternative, _ in fallback_types if rng.random() < chance)
