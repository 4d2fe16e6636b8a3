"""What the chaos suite's users do that the benchmark's do not. The tags they put on their jobs: a mix that takes
each path of the product's opt-in (domain/policy.py): 10% of jobs not opted in (`trainguard:enabled=false`: the
fleet's launches carry the tag, an owner's tag overrides it), 5% of the others in dry run
(`trainguard:actions=notify`), and `trainguard:max-retries` absent (the default), 2 or 1, so that lineages reach
their limit. And where they meet a quota wall: every other wall of the trace (the first included) stands before the
job's first launch, so that the user's own CreateTrainingJob is refused (CloudTrail's path to failed-launches); the
others meet a relaunch (job-events' path)."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.trace import Trace

OPTED_IN_SHARE, DRY_RUN_SHARE = 0.9, 0.05
MAX_RETRIES_CHOICES, MAX_RETRIES_WEIGHTS = ("", "2", "1"), (60, 25, 15)


@dataclass(frozen=True)
class UserChoice:
    enabled: bool = True
    dry_run: bool = False
    max_retries: str = ""  # '' : the deployment's default

    def tags(self) -> dict[str, str]:
        tags = {"trainguard:enabled": "true" if self.enabled else "false"}
        if self.dry_run:
            tags["trainguard:actions"] = "notify"
        if self.max_retries:
            tags["trainguard:max-retries"] = self.max_retries
        return tags


def draw_user_choice(rng: random.Random) -> UserChoice:
    enabled = rng.random() < OPTED_IN_SHARE
    dry_run = enabled and rng.random() < DRY_RUN_SHARE
    max_retries = rng.choices(MAX_RETRIES_CHOICES, weights=MAX_RETRIES_WEIGHTS)[0]
    return UserChoice(enabled, dry_run, max_retries)


def with_user_tags(trace: Trace) -> Trace:
    """The trace's jobs, each with its user's choice as tags (drawn from the trace's seed, a stream of its own)."""
    rng = random.Random(f"{trace.seed}/user-tags")
    jobs = tuple(
        replace(spec, owner_tags=(*spec.owner_tags, *draw_user_choice(rng).tags().items())) for spec in trace.jobs
    )
    return replace(trace, jobs=jobs)


def with_walls_at_first_launch(trace: Trace) -> Trace:
    """Every other quota wall of the trace, the first included, moved to work 0: it stands before the job's first
    launch (fleet/life.py: the user's CreateTrainingJob is refused, no job is created)."""
    submitted = {spec.name: spec.submitted_at for spec in trace.jobs}
    walls = [fault for fault in trace.faults if fault.kind is FaultKind.QUOTA_WALL]
    moved = {id(fault) for fault in walls[::2]}
    faults = tuple(
        replace(fault, at_work_hours=0.0, strikes_at=submitted[fault.job_name]) if id(fault) in moved else fault
        for fault in trace.faults
    )
    return replace(trace, faults=faults)
