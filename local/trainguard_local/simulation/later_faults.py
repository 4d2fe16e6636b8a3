"""The faults drawn after the others, each kind from a stream of its own among the jobs without another fault, so that
the draws before them give the same trace: a checkpoint sync that stops (and the hardware failure that strikes
later), and issue 27's livelocks and hangs in an announced phase. The shares are assumptions."""

from __future__ import annotations

import random
from dataclasses import replace

from trainguard_local.simulation.catalogue import FAILURE_TEXTS
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.job_spec import Fault, JobSpec
from trainguard_local.simulation.rhythm import phases

PROGRESS_FAULT_KINDS = (FaultKind.LIVELOCK, FaultKind.HANG_IN_PHASE)
# Of the jobs, a livelock, and as many hangs in an announced phase (an assumption), at least one of each.
PROGRESS_FAULT_SHARE = 0.05
SYNC_STOPPED_SHARE = 0.04  # of the jobs without another fault (assumption), at least one
SYNC_STOPPED_SPAN = (0.1, 0.5)  # the sync stops at this share of the work (assumption)
SYNC_FAILURE_AFTER = (0.2, 1.0)  # the failure strikes this share of the rest of the work later (assumption)
FAULT_PROGRESS_SPAN = (0.05, 0.95)  # a fault strikes between 5% and 95% of the work (assumption)


def sync_failure(fault: Fault) -> Fault:
    """The hardware failure that strikes a job whose checkpoint sync stopped (at its own progress)."""
    return replace(fault, kind=FaultKind.HARDWARE_FAULT, at_work_hours=fault.fails_at_work_hours)


def draw_sync_stops(rng: random.Random, specs: tuple[JobSpec, ...], faulty: set[str]) -> tuple[Fault, ...]:
    """Checkpoint sync stopped on a share of the jobs without another fault: at a point of their work, and a
    hardware failure a while later."""
    healthy = [job for job in specs if job.name not in faulty]
    chosen = rng.sample(healthy, min(len(healthy), max(1, round(SYNC_STOPPED_SHARE * len(specs)))))
    faults = []
    for job in chosen:
        stops = round(rng.uniform(*SYNC_STOPPED_SPAN) * job.work_hours, 4)
        fails = round(stops + rng.uniform(*SYNC_FAILURE_AFTER) * (job.work_hours - stops) * 0.95, 4)
        reason = rng.choice(FAILURE_TEXTS[FaultKind.HARDWARE_FAULT.value][1])
        strikes = job.submitted_at + job.startup_minutes / 60 + stops
        faults.append(
            Fault(job.name, FaultKind.CHECKPOINT_SYNC_STOPPED, stops, strikes, reason, fails_at_work_hours=fails)
        )
    return tuple(faults)


def draw_progress_faults(rng: random.Random, specs: tuple[JobSpec, ...], faulty: set[str]) -> tuple[Fault, ...]:
    """Livelocks and hangs in an announced phase on a share of the jobs without another fault: a livelock from a
    point of the work, a hang in a phase at the start of one of the job's phases (a save; rhythm.py)."""
    healthy = [job for job in specs if job.name not in faulty]
    count = min(len(healthy) // len(PROGRESS_FAULT_KINDS), max(1, round(PROGRESS_FAULT_SHARE * len(specs))))
    chosen = rng.sample(healthy, count * len(PROGRESS_FAULT_KINDS))
    faults = []
    for index, job in enumerate(chosen):
        kind = PROGRESS_FAULT_KINDS[index % len(PROGRESS_FAULT_KINDS)]
        at = round(rng.uniform(*FAULT_PROGRESS_SPAN) * job.work_hours, 4)
        if kind is FaultKind.HANG_IN_PHASE:
            found = phases(job.rhythm, job.checkpoint_every_minutes, at, job.work_hours)
            if not found:
                continue  # no phase after that point: the job's work ends first
            at = found[0].at_progress
        faults.append(Fault(job.name, kind, at, job.submitted_at + job.startup_minutes / 60 + at, None))
    return tuple(faults)
