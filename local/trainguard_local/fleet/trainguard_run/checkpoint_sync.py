"""A trace job whose checkpoint sync stops (checkpoint_sync_stopped) under trainguard: the job trains on,
its checkpoints stop reaching S3, and a hardware failure strikes later (later_faults.sync_failure).

The stall prober reads each watched job's checkpoint prefix once every 15 minutes, in a minute of its own
(domain/checkpoint_health.py). Here it runs at those minutes of this job (the deployment runs it every
minute; the other minutes read nothing of this job), after the job's checkpoints up to the stop are written
where its sync put them, each stamped when it was written. When trainguard warns, the person on call acts a
response time later, as for every other incident (person.py): they stop the job and relaunch it from its
newest checkpoint in S3, which starts the sync again. If the failure strikes first, the warning came too
late: the job loses everything since the last checkpoint that reached S3, as under no guard.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any

from trainguard.domain.checkpoint_health import CHECK_EVERY_MINUTES, checked_now
from trainguard_local.fleet.life import Trained
from trainguard_local.fleet.model import TRAINGUARD
from trainguard_local.fleet.trainguard_run.endings import person_relaunches, person_stops
from trainguard_local.fleet.trainguard_run.life_state import LifeState
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.kernel import Park, Sleep
from trainguard_local.simulation.trace import Fault

WARNING_SUBJECT = "checkpoints have stopped reaching S3"


def watch_checkpoints(life: LifeState, fault: Fault) -> Generator[Sleep | Park, Any, Trained]:
    """From the sync's stop (the timeline knows it, fleet/life.py) to trainguard's warning and the person's
    restart (ENDED), or to the failure, the job's next fault (REACHED: the job trains on to it), or MaxRuntime."""
    tl = life.tl
    stopped_at = tl.now
    failure = fault.fails_at_work_hours
    while not _warned(life):
        check = _next_check(life)
        if tl.progress + (check - tl.now) >= failure:
            return Trained.REACHED
        if not (yield from life.job_life.train_until(tl.progress + check - tl.now)):
            return Trained.MAX_RUNTIME
        write_checkpoints(life)
        life.logs.deliver_until(tl.now)
        from trainguard.handlers import stall_prober

        life.world.call("stall_prober", life.name, stall_prober.handle, {})
    tl.detect(FaultKind.CHECKPOINT_SYNC_STOPPED, stopped_at, TRAINGUARD)
    response = life.settings.person.response_hours(life.rng)
    if tl.progress + response >= failure:
        return Trained.REACHED
    if not (yield from life.job_life.train_until(tl.progress + response)):
        return Trained.MAX_RUNTIME
    person_stops(life, note="on trainguard's warning: checkpoints had stopped reaching S3")
    life.flush_guard_calls()
    tl.lose_work_since_checkpoint()
    yield from person_relaunches(life, None, tl.now, struck_at=stopped_at, response=0.0)
    return Trained.ENDED


def write_checkpoints(life: LifeState) -> None:
    """Every checkpoint the running launch has written to S3 so far (none after its sync stopped)."""
    tl, job = life.tl, life.job
    every = job.checkpoint_every_minutes / 60
    last = min(tl.progress, tl.sync_stopped_after)
    k = math.floor(tl.kept / every + 1e-9) + 1
    while k * every <= last + 1e-9:
        life.world.fleet.write_progress_checkpoint(job, k * every, tl.now - (tl.progress - k * every))
        k += 1


def _next_check(life: LifeState) -> float:
    """The next minute (trace hours) at which the prober reads this job's checkpoints."""
    minute = math.floor(life.tl.now * 60 + 1e-6) + 1  # a clock a hair before a minute is at that minute
    base = life.world.clock.base
    while not checked_now(life.name, (base.minute + minute) % 60):
        minute += 1
    assert minute - math.floor(life.tl.now * 60) <= CHECK_EVERY_MINUTES + 1
    return minute / 60


def _warned(life: LifeState) -> bool:
    return any(life.name in n.subject and WARNING_SUBJECT in n.subject for n in life.world.usage.notifications)
