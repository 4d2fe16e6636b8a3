"""The faults drawn after the others, each kind from a stream of its own among the jobs without another fault, so that
the draws before them give the same trace: a checkpoint sync that stops (and the hardware failure that strikes
later), issue 27's livelocks and hangs in an announced phase, and issue 28's degraded hosts and diverged runs. The
shares and ranges are assumptions; where a source says something of them, it is named."""

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
# Issue 28. Meta's Llama 3 405B run lost about half of its 419 interruptions in 54 days to faulty GPUs and their
# memory (The Llama 3 Herd of Models, 2024, table 5); how many first degrade, and how often a run diverges, nobody
# publishes: the shares are assumptions, at least one of each.
FINDING_FAULT_SHARES = {FaultKind.DEGRADED_HOST: 0.05, FaultKind.DIVERGED: 0.03}
SLOWDOWN_FACTORS = (1.2, 3.0)  # uniform; the measurement on an H200: 2.2 times
HOST_BOUND_SHARE = 0.3  # of degraded hosts, those that wait on their own input (their GPU reads low: fault_table.py)


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


def draw_finding_faults(rng: random.Random, specs: tuple[JobSpec, ...], faulty: set[str]) -> tuple[Fault, ...]:
    """Degraded hosts and diverged runs on a share of the jobs without another fault, each from a point of the work:
    a host slower by a drawn factor (one of the job's hosts, if it waits on its input) and a loss NaN from then on."""
    faults: list[Fault] = []
    for kind, share in FINDING_FAULT_SHARES.items():
        healthy = [job for job in specs if job.name not in faulty | {f.job_name for f in faults}]
        for job in rng.sample(healthy, min(len(healthy), max(1, round(share * len(specs))))):
            at = round(rng.uniform(*FAULT_PROGRESS_SPAN) * job.work_hours, 4)
            fault = Fault(job.name, kind, at, job.submitted_at + job.startup_minutes / 60 + at, None)
            if kind is FaultKind.DEGRADED_HOST:
                host = rng.randrange(job.instance_count) if rng.random() < HOST_BOUND_SHARE else None
                fault = replace(fault, slowdown_factor=round(rng.uniform(*SLOWDOWN_FACTORS), 3), slow_host=host)
            faults.append(fault)
    return tuple(faults)
