"""Which running jobs the stall prober looks at to find an opted-in job that nobody watches: a job tagged while it
was already Training (`trainguard opt-in`, or a tag added by hand) sends no state change, so without this it
would go unwatched until it ends.

Each cycle the prober lists the InProgress jobs (ListTrainingJobs gives each one's SecondaryStatus) and reads the
tags of those Training and not watched, at most CHECKS_PER_CYCLE of them: an account with many unguarded jobs
costs the same few calls a minute, and a job waits at most ceil(unwatched / CHECKS_PER_CYCLE) cycles. The order
rotates with the cycle, so every candidate is read in turn. Opted in: the job-events function's own path starts
the watch (workflows/stall_watch.py: described again, then put, never added), at most STARTS_PER_CYCLE a cycle,
so a cycle stays well inside the prober's minute even when each start puts a large job's alarms.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

CHECKS_PER_CYCLE = 20  # ListTags calls a cycle at most
STARTS_PER_CYCLE = 5  # watches started a cycle at most (each: DescribeTrainingJob, ListTags, its alarms)


@dataclass(frozen=True)
class ListedJob:
    """One InProgress job as ListTrainingJobs lists it (TrainingJobSummary)."""

    name: str
    arn: str
    secondary_status: str


@dataclass(frozen=True)
class DiscoveryPlan:
    to_check: list[ListedJob]
    candidates: int  # Training, InProgress and not watched
    reason: str


def plan_discovery(listed: Iterable[ListedJob], watched: set[str], now: datetime) -> DiscoveryPlan:
    """The jobs whose tags this cycle reads: Training and not watched, CHECKS_PER_CYCLE at most, from an offset
    that moves each minute so that all of them are read in turn."""
    candidates = sorted(
        (job for job in listed if job.secondary_status == "Training" and job.name not in watched),
        key=lambda job: job.name,
    )
    if len(candidates) <= CHECKS_PER_CYCLE:
        return DiscoveryPlan(candidates, len(candidates), f"all {len(candidates)} unwatched Training jobs")
    cycle = int(now.timestamp() // 60)
    start = (cycle * CHECKS_PER_CYCLE) % len(candidates)
    turn = (candidates[start:] + candidates[:start])[:CHECKS_PER_CYCLE]
    cycles = -(-len(candidates) // CHECKS_PER_CYCLE)
    reason = (
        f"{CHECKS_PER_CYCLE} of {len(candidates)} unwatched Training jobs, from the {start + 1}th: each is read "
        f"within {cycles} cycles"
    )
    return DiscoveryPlan(turn, len(candidates), reason)
