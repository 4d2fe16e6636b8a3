"""How a trace fault strikes a running launch under trainguard, as its row of the fault table says: the steps of
the job's process (job_life.py) from the strike to the launch's end, each returning the next launch's name."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from trainguard_local.fleet.model import State
from trainguard_local.fleet.trainguard_run.endings import Step, after_end, hang_left_to_the_person
from trainguard_local.fleet.trainguard_run.guard_actions import TRAINGUARD
from trainguard_local.fleet.trainguard_run.life_state import LifeState
from trainguard_local.fleet.trainguard_run.schedules import StallWindow, StopNews
from trainguard_local.simulation.catalogue import FAILURE_TEXTS
from trainguard_local.simulation.fault_table import FAULT_TABLE, Ending, FaultKind
from trainguard_local.simulation.kernel import Park, Sleep
from trainguard_local.simulation.trace import Fault


def failure_text(kind: FaultKind, fault: Fault) -> str:
    """The fault's FailureReason: the trace's, or the catalogue's first text of its kind (hand-made faults)."""
    return fault.failure_reason or FAILURE_TEXTS[str(FAULT_TABLE[kind].failure_texts)][1][0]


def strike(life: LifeState, fault: Fault, window: StallWindow | None) -> Generator[Sleep | Park, Any, str | None]:
    """The fault strikes, as its row of the fault table says: the next launch's name, or None when the job
    trains on (a healthy silence passed)."""
    ending = FAULT_TABLE[fault.kind].ending
    if ending is Ending.TRAINS_ON:
        assert window is not None
        return (yield from silent_but_healthy(life, fault, window))
    if ending in (Ending.HANGS, Ending.FAILS_AFTER_HANG):
        assert window is not None
        return (yield from _hangs(life, fault, window))
    if ending is Ending.INTERRUPTED:
        return (yield from _spot_interruption(life, fault))
    return (yield from _fails(life, fault, life.tl.now))


def _fails(life: LifeState, fault: Fault, struck: float) -> Step:
    tl = life.tl
    life.write_checkpoint()
    tl.lose_work_since_checkpoint()
    tl.struck(fault.kind, struck)
    life.end_kind[life.name] = fault.kind
    if fault.kind is FaultKind.QUOTA_WALL:
        quota = life.world.fleet.quota_wall(life.job, life.job.name, fault.quota_approval_hours)
        life.quota_wall = (quota, fault.quota_approval_hours)
        for kind, _ in life.job.fallback_types:  # the listed alternatives the trace gave no room now
            if kind not in fault.alternatives_with_quota_room:
                life.world.plane.short_alternatives.add((life.job.name, kind))
    end = life.end_launch(life.world.plane.fail, failure_text(fault.kind, fault))
    return (yield from after_end(life, end, fault.kind, struck, State.FAILED))


def _spot_interruption(life: LifeState, fault: Fault) -> Step:
    tl = life.tl
    life.write_checkpoint()
    tl.lose_work_since_checkpoint()  # the instances are reclaimed
    life.drive(life.world.plane.interrupt_spot)
    yield Sleep(tl.now + fault.spot_wait_hours)
    tl.wait_until(State.QUEUED, life.kernel.now)  # Interrupted, until MaxWait
    tl.struck(fault.kind, tl.now)
    life.end_kind[life.name] = fault.kind
    end = life.end_launch(life.world.plane.exceed_max_wait)
    return (yield from after_end(life, end, fault.kind, tl.now, State.STOPPED))


def _hangs(life: LifeState, fault: Fault, window: StallWindow) -> Step:
    tl, kind = life.tl, fault.kind
    struck = tl.now
    life.hung.add(life.name)
    life.write_checkpoint()
    nccl = FAULT_TABLE[kind].ending is Ending.FAILS_AFTER_HANG  # the watchdog fails it at its timeout
    if not nccl:
        tl.struck(kind, struck)
    window_end = window.last_tick / 60 if not nccl else tl.now + fault.hung_minutes / 60
    runtime_end = tl.now + max(tl.runtime_left, 0.0)
    news = yield Park(min(window_end, runtime_end))
    life.ticker.close(window.job_name)
    tl.hang_until(life.kernel.now)
    if isinstance(news, StopNews):  # trainguard stopped it
        if nccl:
            tl.struck(kind, struck)
        tl.detect(kind, struck, TRAINGUARD)
        life.flush_guard_calls()
        tl.lose_work_since_checkpoint()
        end = life.outcome_of(news.delivered)
        return (yield from after_end(life, end, None, struck, State.STOPPED))
    if nccl and life.kernel.now < runtime_end - 1e-9:  # the watchdog fails the job
        return (yield from _fails(life, fault, struck))
    if nccl:
        tl.struck(kind, struck)
    return (yield from hang_left_to_the_person(life, kind, struck, runtime_end))


def silent_but_healthy(life: LifeState, fault: Fault, window: StallWindow) -> Generator[Sleep | Park, Any, str | None]:
    """The job trains on, silent; None when the silence passed, else the next launch's name."""
    tl = life.tl
    started = tl.now
    job_end = tl.now + (life.job.work_hours - tl.progress)
    runtime_end = tl.now + max(tl.runtime_left, 0.0)
    news = yield Park(min(window.last_tick / 60, job_end, runtime_end))
    life.ticker.close(window.job_name)
    tl.train_to(tl.progress + (life.kernel.now - tl.now))
    if not isinstance(news, StopNews):
        return None
    tl.detect(fault.kind, started, TRAINGUARD)
    life.flush_guard_calls()
    life.write_checkpoint(no_checkpoint_after=fault.at_work_hours)
    tl.lose_work_since_checkpoint(no_checkpoint_after=fault.at_work_hours)  # none is written while silent
    end = life.outcome_of(news.delivered)
    return (yield from after_end(life, end, None, started, State.STOPPED))


def stopped_at_max_runtime(life: LifeState) -> Step:
    life.write_checkpoint()
    life.tl.lose_work_since_checkpoint()
    life.end_kind[life.name] = None
    end = life.end_launch(life.world.plane.exceed_max_runtime)
    return (yield from after_end(life, end, None, life.tl.now, State.STOPPED))
