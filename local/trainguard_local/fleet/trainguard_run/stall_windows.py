"""A job's stall window (see schedules.py): opened a few minutes before its logs fall silent, with its
hosts' GPUUtilization written for the whole window, so that the alarms and the prober can judge it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from trainguard.domain.instance_types import gpus_per_host
from trainguard.domain.progress_settings import ProgressSettings
from trainguard.domain.stall_alarms import plan_stall_alarms
from trainguard.domain.stalls import silence_clock_start
from trainguard_local.fleet.trainguard_run.life_state import LifeState
from trainguard_local.fleet.trainguard_run.schedules import StallWindow, minute_index
from trainguard_local.simulation.fault_table import FAULT_TABLE, WORKING_PER_GPU, FaultKind
from trainguard_local.simulation.rhythm import phases
from trainguard_local.simulation.trace import Fault

LEAD_MINUTES = 3  # a window opens this long before the silence: the job's recent lines reach the ledger
AFTER_SILENCE_MINUTES = 3  # a healthy silence's window stays open this long after the logs resume
HANG_MARGIN_MINUTES = 15  # past the latest threshold crossing, for a hang's window
PHASE_FACTOR = 2.0  # a hang in a phase: its window covers twice the phase's length (the product's margin is 50%)


def open_stall_window(life: LifeState, fault: Fault, quiet_from_hours: float) -> StallWindow:
    """Open the fault's stall window, and write its hosts' GPUUtilization for the whole window."""
    th, clock = life.settings.thresholds, life.world.clock
    quiet_from = clock.at_hours(quiet_from_hours)
    life.logs.deliver_until(clock.hours_of(clock.now))  # the job's lines so far: its rhythm, as the guard learns it
    life.logs.write_newest_delivered(life.verdict_look_back_minutes())
    if fault.kind is FaultKind.SLOW_BUT_HEALTHY:
        life.logs.silence(fault.kind, quiet_from_hours, fault.silent_minutes)
        quiet_until = quiet_from + timedelta(minutes=fault.silent_minutes)
        last = quiet_until + timedelta(minutes=AFTER_SILENCE_MINUTES)
    elif fault.kind is FaultKind.NCCL_TIMEOUT:
        life.logs.silence(fault.kind, quiet_from_hours)
        quiet_until = None
        last = quiet_from + timedelta(minutes=fault.hung_minutes + 1)
    else:
        life.logs.silence(fault.kind, quiet_from_hours)
        quiet_until = None
        # The latest the alarms can fire: from where the product counts the silence, the job's own limit (its
        # rhythm may have raised it) or the alarms' fixed thresholds, whichever is longest.
        counted_from = silence_clock_start(clock.at_hours(life.training_since), quiet_from, th)
        last = counted_from + timedelta(minutes=max(th.stall_minutes, th.gpu_idle_minutes) + HANG_MARGIN_MINUTES)
        left = life.guard_minutes_left(quiet_from_hours) or 0.0
        if fault.kind is FaultKind.HANG_IN_PHASE:  # the phase it hangs in has not been announced yet
            left = max(left, ProgressSettings().phase_minutes, PHASE_FACTOR * phase_minutes(life, quiet_from_hours))
        last = max(last, quiet_from + timedelta(minutes=left + LEAD_MINUTES + HANG_MARGIN_MINUTES))
    hosts = life.job.instance_count
    names = plan_stall_alarms(life.name, life.job.instance_type, hosts, th).all_names
    window = StallWindow(
        job_name=life.name,
        last_tick=minute_index(life.world, last),
        life=life.process,
        evaluator=life.world.evaluator(names),
        deliver=lambda moment: life.logs.deliver_until(clock.hours_of(moment), write=True),
    )
    gpu = HostsGpu(life, quiet_gpu(life, fault, quiet_from_hours), quiet_from, quiet_until)

    def later_deadline(now: datetime) -> int | None:
        last = guard_deadline_tick(life, now)
        if last is not None:
            gpu.write(window.last_tick + 1, last)
        return last

    if fault.kind not in (FaultKind.SLOW_BUT_HEALTHY, FaultKind.NCCL_TIMEOUT):  # a hang's window, to its guard's end
        window.later_deadline = later_deadline
    start = max(clock.at_hours(life.training_since), quiet_from - timedelta(minutes=th.gpu_idle_minutes + 5))
    gpu.write(minute_index(life.world, start), window.last_tick)
    life.ticker.open(window)
    return window


@dataclass(frozen=True)
class HostsGpu:
    """A windowed launch's hosts' GPUUtilization: `quiet_per_gpu` while the fault keeps it quiet, working otherwise."""

    life: LifeState
    quiet_per_gpu: float
    quiet_from: datetime
    quiet_until: datetime | None

    def write(self, first: int, last: int) -> None:
        """Write the minutes `first` to `last` (minute indexes) of every host."""
        life, clock = self.life, self.life.world.clock
        gpus = gpus_per_host(life.job.instance_type) or 1
        values = []
        for minute in range(first, last + 1):
            moment = clock.base + timedelta(minutes=minute, seconds=30)
            silent = moment >= self.quiet_from and (self.quiet_until is None or moment < self.quiet_until)
            values.append((moment, (self.quiet_per_gpu if silent else WORKING_PER_GPU) * gpus))
        life.world.fleet.put_gpu_utilization(life.name, life.job.instance_count, values)
        life.logs.gpus_written_to = max(life.logs.gpus_written_to, last)  # show_until writes after them


def guard_deadline_tick(life: LifeState, now: datetime) -> int | None:
    """The tick HANG_MARGIN_MINUTES after the guard's deadline for the hung launch, as its ledger stands `now`
    (None: trainguard does not watch it). A line the job logged as the hang struck moves that deadline after the
    window opened: a deadline just passed still gets its margin, for the alarm's evaluation periods."""
    left = life.guard_minutes_left(life.world.clock.hours_of(now))
    if left is None:
        return None
    return minute_index(life.world, now + timedelta(minutes=max(left, -HANG_MARGIN_MINUTES) + HANG_MARGIN_MINUTES))


def phase_minutes(life: LifeState, at: float) -> float:
    """The length of the job's phase that starts at `at` (trace hours; 0: none does)."""
    job, progress = life.job, life.tl.progress + (at - life.tl.now)
    found = phases(job.rhythm, job.checkpoint_every_minutes, progress - 1e-6, progress + 1e-6)
    return found[0].minutes if found else 0.0


def quiet_gpu(life: LifeState, fault: Fault, quiet_from_hours: float) -> float:
    """GPUUtilization per GPU while the job is silent (simulation/fault_table.py)."""
    first_load = abs(quiet_from_hours - life.training_since) < 1e-6
    return FAULT_TABLE[fault.kind].gpu_per_gpu(first_load=first_load)
