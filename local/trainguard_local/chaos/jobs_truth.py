"""The record of each job of the replay, the truth the audit judges trainguard by, and the fault kinds it
groups from the fault table."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from trainguard_local.simulation.activity import LaunchActivity
from trainguard_local.simulation.fault_table import FAULT_TABLE, Ending, FaultKind

_FAILS = (Ending.FAILS, Ending.FAILS_AFTER_HANG)
_ENDS = (*_FAILS, Ending.INTERRUPTED, Ending.REFUSED_AT_LAUNCH)  # the launch ends by itself
# The kinds whose end calls for a relaunch, and those of them (failures) that may strike the relaunch again.
RELAUNCHING = frozenset(kind for kind, row in FAULT_TABLE.items() if row.ending in _ENDS and row.relaunch_recovers)
REPEATING = frozenset(kind for kind in RELAUNCHING if FAULT_TABLE[kind].ending in _FAILS)
HEALTHY = "healthy"


@dataclass
class JobTruth:
    name: str
    root: str
    attempt: int  # 0: the user's launch; n: trainguard's n-th relaunch (or its launch after a quota wall)
    kind: str  # the FaultKind value this job meets, or HEALTHY
    instance_type: str
    hosts: int
    opted_in: bool
    stops_allowed: bool  # opted in, not in dry run, and not a parent's job: relaunched, stopped when hung, its wall met
    max_retries: int
    checkpoint_every_minutes: float
    failure_reason: str = ""
    created_at: datetime | None = None
    training_since: datetime | None = None
    activity: LaunchActivity | None = None  # from training on: its lines, its GPUs, whether it is hung
    stop_requested_at: datetime | None = None
    stopped_by: str = ""  # "trainguard", "person" or "spot"
    end_status: str = ""
    retry_of: str = ""
    launched: bool = True  # False for a user's launch refused by a quota
    owned: bool = False  # a parent launched it (domain/ownership.py): never relaunched, whatever its tags
    # A parent's job, opted in, not in dry run, with the setting stop_stalled_parent_jobs on: its verified hang is
    # stopped like any other (issue 27), and its end is still never relaunched.
    parent_stops_allowed: bool = False

    @property
    def hang_stops_allowed(self) -> bool:
        """Whether trainguard may stop this job's verified hang."""
        return self.stops_allowed or self.parent_stops_allowed

    @property
    def ending(self) -> Ending:
        return FAULT_TABLE[FaultKind(self.kind)].ending if self.kind != HEALTHY else Ending.TRAINS_ON

    @property
    def hung(self) -> bool:
        """A fault hung it at some point (the fault table's `hung`)."""
        return self.activity is not None and any(FAULT_TABLE[s.kind].hung for s in self.activity.silences)
