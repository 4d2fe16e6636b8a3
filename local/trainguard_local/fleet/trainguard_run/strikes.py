"""How a silent fault strikes a running launch under trainguard: a hang (an NCCL timeout's included) or a
healthy silence waits in its stall window (stall_windows.py) for the guard's stop, or for the window's end.
The other endings are the steps every strategy shares (fleet/life.py)."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from trainguard_local.fleet.life import Steps
from trainguard_local.fleet.model import TRAINGUARD, State
from trainguard_local.fleet.trainguard_run.endings import after_end, hang_left_to_the_person
from trainguard_local.fleet.trainguard_run.life_state import LifeState
from trainguard_local.fleet.trainguard_run.schedules import StallWindow, StopNews
from trainguard_local.simulation.catalogue import FAILURE_TEXTS
from trainguard_local.simulation.fault_table import FAULT_TABLE, Ending, FaultKind
from trainguard_local.simulation.kernel import Park, Sleep
from trainguard_local.simulation.trace import Fault


def failure_text(kind: FaultKind, fault: Fault) -> str:
    """The fault's FailureReason: the trace's, or the catalogue's first text of its kind (hand-made faults)."""
    return fault.failure_reason or FAILURE_TEXTS[str(FAULT_TABLE[kind].failure_texts)][1][0]


def hangs(life: LifeState, fault: Fault, window: StallWindow) -> Steps:
    """The launch hangs in its window until trainguard stops it, the NCCL watchdog fails it, or the window ends
    (then the person stops it, or MaxRuntime does)."""
    tl, kind = life.tl, fault.kind
    struck = tl.now
    life.hung.add(life.name)
    life.write_checkpoint()
    nccl = FAULT_TABLE[kind].ending is Ending.FAILS_AFTER_HANG  # the watchdog fails it at its timeout
    if not nccl:
        tl.struck(kind, struck)
    window_end = window.closes_at if not nccl else tl.now + fault.hung_minutes / 60
    runtime_end = tl.now + max(tl.runtime_left, 0.0)
    news = yield Park(min(window_end, runtime_end))
    while not nccl and not isinstance(news, StopNews) and life.ticker.holds(window) and life.kernel.now < runtime_end:
        news = yield Park(min(window.closes_at, runtime_end))  # the window waits for the guard's later deadline
    life.ticker.close(window.job_name)
    tl.hang_until(life.kernel.now)
    if isinstance(news, StopNews):  # trainguard stopped it
        if nccl:
            tl.struck(kind, struck)
        tl.detect(kind, struck, TRAINGUARD)
        life.flush_guard_calls()
        tl.lose_work_since_checkpoint()
        yield from after_end(life, life.answer_to_end(), None, struck, State.STOPPED)
        return
    if nccl and life.kernel.now < runtime_end - 1e-9:  # the watchdog fails the job
        yield from life.job_life.fails(fault, struck)
        return
    if nccl:
        tl.struck(kind, struck)
    yield from hang_left_to_the_person(life, kind, struck, runtime_end)


def silent_but_healthy(
    life: LifeState, fault: Fault, window: StallWindow, *, until: float | None = None
) -> Generator[Sleep | Park, Any, bool]:
    """The job trains on, silent; True when trainguard stopped it (a wrong stop), False when the silence passed or
    the job reached progress `until` in it (hours of work: where its fault strikes, silent phase or not)."""
    tl = life.tl
    started = tl.now
    job_end = tl.now + tl.hours_to(life.job.work_hours if until is None else min(until, life.job.work_hours))
    runtime_end = tl.now + max(tl.runtime_left, 0.0)
    news = yield Park(min(window.closes_at, job_end, runtime_end))
    life.ticker.close(window.job_name)
    tl.train_for(life.kernel.now - tl.now)
    if not isinstance(news, StopNews):
        return False
    tl.detect(fault.kind, started, TRAINGUARD)
    life.flush_guard_calls()
    life.write_checkpoint(no_checkpoint_after=fault.at_work_hours)
    tl.lose_work_since_checkpoint(no_checkpoint_after=fault.at_work_hours)  # none is written while silent
    yield from after_end(life, life.answer_to_end(), None, started, State.STOPPED)
    return True


def stopped_before_the_fault(life: LifeState, news: StopNews) -> Steps:
    """trainguard stopped the launch in the minutes before its fault struck, while it trained: a wrong stop."""
    life.flush_guard_calls()
    life.write_checkpoint()
    life.tl.lose_work_since_checkpoint()
    yield from after_end(life, life.answer_to_end(), None, life.tl.now, State.STOPPED)
