"""The trainguard strategy's schedules on the simulation's kernel (simulation/kernel.py): the minute ticks of
CloudWatch and the stall prober while some job may stall, and the quota check's schedule.

Minute ticks. CloudWatch evaluates alarms every minute and the prober runs every minute; doing that for
72 hours x hundreds of jobs would be most of the run. So ticks run only while at least one job is in a
*stall window*: from a few minutes before its logs fall silent (a hang, an NCCL hang, a healthy silent
phase) until it is stopped, its silence ends, or the latest moment an alarm could fire has passed. At
each tick: the windowed jobs that still log write a line (CloudWatch Logs, and the subscription's
delivery to `log_activity.handle`), the prober runs (`stall_prober.handle`), each windowed job's alarms
are evaluated (`LocalAlarmEvaluator`, its alarms only), and every ALARM change that the stack's rule
matches goes to `stall_alarms.handle`. A stop is settled at once (Stopping -> Stopped) and the job's
events go to `job_events.handle`. Outside windows no alarm is evaluated: a job that trains and logs
keeps its alarms in OK, and the signals of a hang only grow, so an alarm that has not fired by the
window's end (or that fired and was judged "not a stall" after the grace) would send nothing later.
The first tick of a window only warms up (log line, prober): the silence metric published before it
was computed from the ledger as it stood, without the job's recent lines, and is not evaluated.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from trainguard_local.fleet.trainguard_run.guard_actions import relaunch_of
from trainguard_local.fleet.trainguard_run.world import FleetWorld
from trainguard_local.simulation.kernel import Kernel, Process, Sleep
from trainguard_local.stand_in.alarm_evaluator import LocalAlarmEvaluator
from trainguard_local.stand_in.stack_resources import SCHEDULE_GROUP

AFTER_LAST_TICK_HOURS = 1e-6


@dataclass(frozen=True)
class StopNews:
    """What a windowed job's life learns when the world shows the job stopped (Stopping, then Stopped): trainguard
    stopped it, on a stall or on a finding; its events followed (life_state.answer_to_end reads what came next)."""


@dataclass
class StallWindow:
    job_name: str  # the SageMaker job
    last_tick: int  # minute index after which the window closes by itself
    life: Process
    evaluator: LocalAlarmEvaluator | None  # the job's alarms (None: a finding window evaluates none)
    deliver: Callable[[datetime], None]  # the job's own lines up to a moment (job_logs.py)
    ticks: int = 0
    # A hang's window, at its last tick: the tick the guard's own deadline now falls on, when it is later (None: no
    # later one). Asked once: a deadline still ahead of a hung job (an announced phase's allowance, set when the
    # window opened before the phase was announced) is kept, one that moves with every line is not followed.
    later_deadline: Callable[[datetime], int | None] | None = None
    # A finding window's (finding_windows.py): what the prober's cycle did to the job, as news for its life (None:
    # nothing yet).
    probe_news: Callable[[], object | None] | None = None

    @property
    def closes_at(self) -> float:
        """When a life parked on the window stops waiting (kernel hours): just after its last tick, so that a stop
        at that tick wakes it first (the kernel resumes events of one moment in the order they were scheduled,
        and the life's deadline was scheduled before the tick's)."""
        return self.last_tick / 60 + AFTER_LAST_TICK_HOURS


def minute_index(world: FleetWorld, moment: datetime) -> int:
    """Whole minutes since the clock's origin, rounded up (the first tick at or after `moment`)."""
    return math.ceil((moment - world.clock.base).total_seconds() / 60 - 1e-9)


class Ticker:
    """The minute ticks of the stall windows (see the module's docstring)."""

    PRUNE_EVERY = 15  # ticks

    def __init__(self, kernel: Kernel, world: FleetWorld, look_back_minutes: int) -> None:
        self.kernel = kernel
        self.world = world
        self.windows: dict[str, StallWindow] = {}
        self.look_back = timedelta(minutes=look_back_minutes)
        self.ticks = 0
        self._running = False

    def open(self, window: StallWindow) -> None:
        self.windows[window.job_name] = window
        if not self._running:
            self._running = True
            first = minute_index(self.world, self.world.clock.now)
            self.kernel.spawn(self._run(first), first / 60)

    def holds(self, window: StallWindow) -> bool:
        """Whether `window` is still open, past the moment its life parked for (StallWindow.later_deadline)."""
        return self.windows.get(window.job_name) is window and window.closes_at > self.kernel.now

    def close(self, job_name: str) -> None:
        self.windows.pop(job_name, None)

    def _run(self, minute: int) -> Process:
        from trainguard.handlers import stall_prober

        while self.windows:
            now = self.world.clock.base + timedelta(minutes=minute)
            self.world.clock.now = now
            self.ticks += 1
            for window in list(self.windows.values()):
                window.deliver(now)
            self.world.call("stall_prober", "", stall_prober.handle, {})
            for window in [w for w in self.windows.values() if w.probe_news is not None]:
                if (news := window.probe_news()) is not None:  # type: ignore[misc]
                    self.close(window.job_name)
                    self.kernel.wake(window.life, news)
            for window in list(self.windows.values()):
                window.ticks += 1
                if window.ticks > 1:  # the first tick warms up (see the module's docstring)
                    self._evaluate(window)
            for name in [n for n, w in self.windows.items() if w.last_tick <= minute]:
                if not self._extended(self.windows[name], now):
                    self.close(name)
            if self.ticks % self.PRUNE_EVERY == 0:
                self.world.fleet.prune_metrics(now - self.look_back)
            minute += 1
            yield Sleep(minute / 60)
        self._running = False

    def _extended(self, window: StallWindow, now: datetime) -> bool:
        """Whether the window stays open to its guard's later deadline (StallWindow.later_deadline), once."""
        later, window.later_deadline = window.later_deadline, None
        last = later(now) if later is not None else None
        if last is None or last <= window.last_tick:
            return False
        window.last_tick = last
        return True

    def _evaluate(self, window: StallWindow) -> None:
        """The window's alarms, each change delivered; the job's life is woken when the job shows stopped, by an
        alarm's delivery now or by one since the last tick (a delivery that came late)."""
        if window.evaluator is None or self._stopped(window):
            return
        for event in window.evaluator.evaluate_all():
            self.world.deliver_alarm(event)
            if self._stopped(window):
                return

    def _stopped(self, window: StallWindow) -> bool:
        if self.world.plane.describe(window.job_name)["TrainingJobStatus"] != "Stopping":
            return False  # not a verified stall (yet): the job trains on
        self.world.plane.settle(window.job_name)  # trainguard stopped it: the stop takes effect within the minute
        self.world.pump()
        self.close(window.job_name)
        self.kernel.wake(window.life, StopNews())
        return True


class QuotaChecks:
    """The quota check's schedule (every `quota_check_minutes`), run while some launch waits for a quota. A wait ends
    when trainguard's ledger, which held it, no longer does (launched, or given up): the life learns which from the
    world (a CreateTrainingJob in place of the failed job, or none). One the ledger never held waits to its deadline."""

    def __init__(self, kernel: Kernel, world: FleetWorld, every_minutes: int) -> None:
        self.kernel = kernel
        self.world = world
        self.every = every_minutes
        self.waiting: dict[str, Process] = {}  # failed job -> the life that waits for its relaunch
        self.refused: set[str] = set()  # the waiting launches SageMaker refused (no job): launched under their name
        self.held: set[str] = set()  # the failed jobs whose launch the ledger has held waiting
        self.checks = 0
        self._running = False

    def wait(self, failed_job: str, life: Process, *, refused: bool = False) -> None:
        self.waiting[failed_job] = life
        if refused:
            self.refused.add(failed_job)
        if not self._running:
            self._running = True
            minute = minute_index(self.world, self.world.clock.now)
            first = -(-minute // self.every) * self.every
            self.kernel.spawn(self._run(first), first / 60)

    def forget(self, failed_job: str) -> None:
        self.waiting.pop(failed_job, None)

    def _run(self, minute: int) -> Process:
        from trainguard.handlers import quota_watch

        while self.waiting:
            self.world.clock.now = self.world.clock.base + timedelta(minutes=minute)
            self.checks += 1
            self.held |= waiting_launches(self.world)  # a launch this check relaunches was held before it
            self.world.call("quota_watch", "", quota_watch.handle, {"source": "aws.events"})
            still = waiting_launches(self.world)
            ended = [failed for failed in self.waiting if failed in self.held and failed not in still]
            self.held |= still
            if ended:
                self.world.pump()
            for failed in ended:
                refused = failed in self.refused
                self.kernel.wake(self.waiting.pop(failed), relaunch_of(self.world.guard_log, failed, refused=refused))
            minute += self.every
            yield Sleep(minute / 60)
        self._running = False


def waiting_launches(world: FleetWorld) -> set[str]:
    """The launches trainguard's ledger holds waiting for a quota, by the job each would replace."""
    from trainguard.adapters.quota_ledger import QuotaLedger

    return {
        waiting.blocked_job
        for waiting in QuotaLedger(world.world["dynamodb"], world.config.ledger_table_name).waiting()
    }


def one_time_schedule(world: FleetWorld, failed_job: str) -> tuple[datetime, dict[str, Any]] | None:
    """The one-time schedule trainguard created for a delayed relaunch: when it fires, and its input."""
    from trainguard.adapters.scheduler import schedule_name

    scheduler = world.world["scheduler"]
    try:
        found = scheduler.get_schedule(Name=schedule_name(failed_job), GroupName=SCHEDULE_GROUP)
    except scheduler.exceptions.ClientError:
        return None
    expression = str(found["ScheduleExpression"])  # at(2026-01-05T10:20:00)
    at = datetime.fromisoformat(expression[3:-1]).replace(tzinfo=UTC)
    return at, json.loads(found["Target"]["Input"])


def fire_schedule(world: FleetWorld, failed_job: str, payload: dict[str, Any]) -> None:
    """The scheduler invokes the retry launcher with the schedule's input, then deletes the one-time schedule
    (ActionAfterCompletion=DELETE); the launch's events follow."""
    from trainguard.adapters.scheduler import schedule_name
    from trainguard.handlers import retry_launcher

    world.call("retry_launcher", failed_job, retry_launcher.handle, payload)
    world.world["scheduler"].delete_schedule(Name=schedule_name(failed_job), GroupName=SCHEDULE_GROUP)
    world.pump()
