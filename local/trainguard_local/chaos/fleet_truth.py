"""The truth the chaos audit judges trainguard by, read from the fleet's world (docs/design-chaos-on-the-fleet-world.md,
step 6): one row per SageMaker job, from SageMaker's records (status, tags, times), the job's life (the fault that
ended each launch, its activity: was it hung at a minute) and who stopped it (trainguard's StopTrainingJob, the
person's, SageMaker's at MaxWait or MaxRuntime); never from what trainguard says it did."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from trainguard.config import GuardConfig
from trainguard_local.fleet.trainguard_run.life_state import LifeState
from trainguard_local.fleet.trainguard_run.world import FleetWorld
from trainguard_local.simulation.activity import LaunchActivity
from trainguard_local.simulation.fault_table import FAULT_TABLE, Ending, FaultKind
from trainguard_local.simulation.reporting import CONTRACT
from trainguard_local.simulation.trace import JobSpec, Trace

_FAILS = (Ending.FAILS, Ending.FAILS_AFTER_HANG)
_ENDS = (*_FAILS, Ending.INTERRUPTED, Ending.REFUSED_AT_LAUNCH)  # the launch ends by itself
# The kinds whose end calls for a relaunch.
RELAUNCHING = frozenset(kind for kind, row in FAULT_TABLE.items() if row.ending in _ENDS and row.relaunch_recovers)
HEALTHY = "healthy"
# SageMaker's own stops (the job's SecondaryStatus), by who the audit says stopped it.
_STOPPED_BY_SAGEMAKER = {"MaxWaitTimeExceeded": "spot", "MaxRuntimeExceeded": "max-runtime"}


@dataclass
class JobTruth:
    name: str
    root: str
    attempt: int  # 0: a user's or a person's launch; n: trainguard's n-th relaunch of the lineage
    kind: str  # the FaultKind value this job met, or HEALTHY
    opted_in: bool
    stops_allowed: bool  # opted in, not in dry run, and not a parent's job: relaunched, stopped when hung, its wall met
    max_retries: int
    created_at: datetime | None = None
    activity: LaunchActivity | None = None  # from training on: its lines, its GPUs, whether it is hung
    stop_requested_at: datetime | None = None
    stopped_by: str = ""  # "trainguard", "person", "spot" or "max-runtime"
    end_status: str = ""
    retry_of: str = ""
    owned: bool = False  # a parent launched it (domain/ownership.py): never relaunched, whatever its tags
    reports_by_contract: bool = False  # it prints trainguard's progress contract (simulation/reporting.py)
    # A parent's job, opted in, not in dry run, with the setting stop_stalled_parent_jobs on: its verified hang is
    # stopped like any other (issue 27), and its end is still never relaunched.
    parent_stops_allowed: bool = False

    @property
    def hang_stops_allowed(self) -> bool:
        """Whether trainguard may stop this job's verified hang."""
        return self.stops_allowed or self.parent_stops_allowed

    def silent_unannounced_for(self, at: float) -> float:
        """How long (hours) it had been silent at `at` (trace hours) in a pause of its fault's, which no phase line
        announced (a fault's silence never is: simulation/activity.py announces saves and evaluations only); 0: not."""
        silence = self.activity.silence_at(at) if self.activity is not None else None
        return at - silence.start if silence is not None and not silence.talks else 0.0

    @property
    def hung(self) -> bool:
        """A fault hung it at some point (the fault table's `hung`)."""
        return self.activity is not None and any(FAULT_TABLE[s.kind].hung for s in self.activity.silences)


def fleet_rows(world: FleetWorld, lives: Mapping[str, LifeState]) -> dict[str, JobTruth]:
    """A row for every job SageMaker holds, oldest first, by the deployment's settings (`world.config`)."""
    stops = {
        str(call.params.get("TrainingJobName", "")): world.clock.at_hours(call.at)
        for call in reversed(world.guard_log)  # the first successful stop of each job wins
        if call.operation == "StopTrainingJob" and call.succeeded
    }
    rows: dict[str, JobTruth] = {}
    for name in world.plane.job_names():
        described = world.plane.describe(name)
        tags = {
            tag["Key"]: tag["Value"]
            for tag in world.world["sagemaker"].list_tags(ResourceArn=described["TrainingJobArn"])["Tags"]
        }
        life = lives.get(tags.get("fleet:root", ""))
        if life is None:  # every job the world or trainguard launches carries its lineage's root
            world.problems.append(f"{name}: a job of no lineage the world knows (its tags: {sorted(tags)})")
            continue
        rows[name] = _row(name, described, tags, life, world.config, stops.get(name))
    return rows


def _row(
    name: str,
    described: dict[str, Any],
    tags: dict[str, str],
    life: LifeState,
    config: GuardConfig,
    stopped_by_trainguard_at: datetime | None,
) -> JobTruth:
    job = life.job
    opted_in = tags.get("trainguard:enabled") == "true"
    acts = opted_in and tags.get("trainguard:actions") != "notify"
    return JobTruth(
        name=name,
        root=job.name,
        attempt=int(tags.get("trainguard:attempt", "0") or 0),
        kind=_kind_met(name, life),
        opted_in=opted_in,
        stops_allowed=trainguard_acts(tags, job),
        max_retries=int(tags.get("trainguard:max-retries", "") or config.default_max_retries),
        created_at=described.get("CreationTime"),
        activity=life.logs.activities.get(name),
        end_status=str(described["TrainingJobStatus"]),
        retry_of=tags.get("trainguard:retry-of", ""),
        owned=bool(job.owner),
        parent_stops_allowed=acts and bool(job.owner) and config.stop_stalled_parent_jobs,
        reports_by_contract=job.reporting.dialect is CONTRACT,
        stop_requested_at=stopped_by_trainguard_at,
        stopped_by=_stopped_by(name, described, life, stopped_by_trainguard_at is not None),
    )


def _kind_met(name: str, life: LifeState) -> str:
    """The fault that ended the launch, else the one that struck it while it ran (a hang, a healthy silence)."""
    ended = life.end_kind.get(name)
    if ended is not None:
        return ended.value
    activity = life.logs.activities.get(name)
    struck = [silence.kind for silence in activity.silences] if activity is not None else []
    found = [kind for kind in struck if FAULT_TABLE[kind].hung] or struck
    return found[0].value if found else HEALTHY


def trainguard_acts(tags: dict[str, str], job: JobSpec) -> bool:
    """A launch with these tags is trainguard's to act on: opted in, not in dry run, and no parent's."""
    return tags.get("trainguard:enabled") == "true" and tags.get("trainguard:actions") != "notify" and not job.owner


def _stopped_by(name: str, described: dict[str, Any], life: LifeState, trainguard_stopped: bool) -> str:
    if trainguard_stopped:
        return "trainguard"
    if name in life.person_stopped:
        return "person"
    return _STOPPED_BY_SAGEMAKER.get(str(described.get("SecondaryStatus", "")), "")


def quota_walls(trace: Trace) -> dict[str, float]:
    """The trace's walled lineages (their root job) and the hours Service Quotas takes to approve each's increase."""
    return {fault.job_name: fault.quota_approval_hours for fault in trace.faults if fault.kind is FaultKind.QUOTA_WALL}
