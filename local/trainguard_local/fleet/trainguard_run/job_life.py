"""One trace job's life under trainguard: a process on the kernel that drives the job through the
simulated SageMaker, lets the production handlers decide, and writes what happened into the fleet
model's `JobTimeline`.

The job's side follows the trace, the fault table (simulation/fault_table.py) and the model's rules
(model.py), as the anchors do: a launch starts for `startup_minutes`, then trains; its one fault strikes
at its progress, as its row says; a failure loses the work since the newest checkpoint. What trainguard
does about it is not modelled: it is whatever the handlers do with the events, alarms and schedules the
stand-in gives them (endings.py). Where trainguard does not relaunch, the person on call does, with the
same draws as in the anchors (person.py). How each ending reaches trainguard (the strikes in strikes.py):
- fails: `plane.fail` with the trace's FailureReason; the Failed event goes to `job_events.handle`;
- refused at launch (capacity): Starting without instances for CAPACITY_REFUSAL_MINUTES, then failed,
  while the trace's repeats last; a delayed relaunch fires when trainguard's schedule says;
- a quota wall: the relaunch is refused with ResourceLimitExceeded while the trace's wall stands; Service
  Quotas approves an increase `quota_approval_hours` after it is asked; the quota check runs on schedule;
- silent kinds (hangs, an NCCL timeout, a healthy silence): a stall window (stall_windows.py, schedules.py)
  in which the alarms, the prober and the stall handler decide;
- interrupted (spot): Interrupted, unbilled, for the trace's wait, then Stopped/MaxWaitTimeExceeded.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from trainguard.domain.log_rhythm import FLOOR_MINUTES
from trainguard_local.fleet.anchor_rules import CAPACITY_REFUSAL_MINUTES
from trainguard_local.fleet.life import MAX_LAUNCHES
from trainguard_local.fleet.model import State
from trainguard_local.fleet.trainguard_run.checkpoint_sync import RUNTIME_ENDED, watch_checkpoints
from trainguard_local.fleet.trainguard_run.endings import Step, after_end
from trainguard_local.fleet.trainguard_run.life_state import Life, LifeState
from trainguard_local.fleet.trainguard_run.schedules import StallWindow
from trainguard_local.fleet.trainguard_run.stall_windows import LEAD_MINUTES, open_stall_window
from trainguard_local.fleet.trainguard_run.strikes import silent_but_healthy, stopped_at_max_runtime, strike
from trainguard_local.simulation.catalogue import FAILURE_TEXTS
from trainguard_local.simulation.fault_table import FAULT_TABLE, SILENT_KINDS, Ending, FaultKind
from trainguard_local.simulation.kernel import Park, Sleep
from trainguard_local.simulation.rhythm import phases
from trainguard_local.simulation.trace import Fault, sync_failure

PHASE_MARGIN_MINUTES = 2.0  # a phase this much shorter than the limit gets a window all the same (minute ticks)
CAPACITY_TEXT = FAILURE_TEXTS["capacity_error"][1][0]


class JobLife(LifeState):
    def with_fault(self, fault: Fault | None) -> JobLife:
        """This life with its trace's fault (a capacity error refuses launches; any other strikes once)."""
        capacity = fault is not None and fault.kind is FaultKind.CAPACITY_ERROR
        self.capacity_refusals = self.capacity_refusals_in_fault = fault.repeats + 1 if fault and capacity else 0
        self.capacity_fault = fault if capacity else None
        self.fault = None if capacity else fault  # pending until it strikes
        self.process = self.run()
        return self

    # ---- the lineage ------------------------------------------------------------------------------

    def run(self) -> Life:
        name = self.launch(self.job.name, "user")
        for _ in range(MAX_LAUNCHES):
            self.tl.launch(new_job=True)
            self.name = name
            name = yield from self._run_launch()
            if self.tl.completed_at is not None:
                return
        raise RuntimeError(f"{self.job.name}: no completion after {MAX_LAUNCHES} launches")

    def _run_launch(self) -> Step:
        """Run the launch `self.name` (created now) to its end; the next launch's name ('' when done)."""
        tl = self.tl
        if self.capacity_refusals and self._finds_capacity():
            self.capacity_refusals = 0
        if self.capacity_refusals:
            return (yield from self._refused_for_capacity())
        yield Sleep(tl.now + self.job.startup_minutes / 60)
        tl.start()
        self.training_since = tl.now
        self.logs.start_launch(tl.now, tl.progress)
        self.drive(self.world.plane.start_training)
        while True:
            fault = self.fault
            target = fault.at_work_hours if fault else self.job.work_hours
            windowed = fault is not None and fault.kind in SILENT_KINDS
            through = yield from self._through_phases(
                max(target - LEAD_MINUTES / 60, tl.progress) if windowed else target
            )
            if through is RUNTIME_ENDED:
                return (yield from stopped_at_max_runtime(self))
            if through is not None:
                return through  # stopped in a healthy phase: the next launch
            row = FAULT_TABLE[fault.kind] if fault is not None else None
            if fault is not None and row is not None and row.ending is Ending.TRAINS_ON and not row.silent:
                self.fault = sync_failure(fault)  # its checkpoints stop reaching S3; a hardware failure strikes later
                restarted = yield from watch_checkpoints(self, fault)
                if restarted == RUNTIME_ENDED:
                    return (yield from stopped_at_max_runtime(self))
                if restarted:
                    return restarted  # the person restarted the job on trainguard's warning
                continue  # its hardware failure strikes later (self.fault)
            window: StallWindow | None = None
            if fault is not None and fault.kind in SILENT_KINDS:
                if not (yield from self.train_until(max(target - LEAD_MINUTES / 60, tl.progress))):
                    return (yield from stopped_at_max_runtime(self))
                window = open_stall_window(self, fault, tl.now + (target - tl.progress))
            if not (yield from self.train_until(target)):
                if window is not None:
                    self.ticker.close(window.job_name)
                return (yield from stopped_at_max_runtime(self))
            if fault is None:
                self.drive(self.world.plane.complete)
                tl.complete()
                return ""
            self.fault = None
            struck = yield from strike(self, fault, window)
            if struck is not None:
                return struck
            # a healthy silence passed: training goes on

    def _through_phases(self, until: float) -> Generator[Sleep | Park, Any, str | None]:
        """Train to progress `until` through the job's silent phases (simulation/rhythm.py). A phase long enough
        to reach the log-silence limit trainguard holds for the job then (read from its ledger: the limit
        cannot move while no line comes) gets a stall window, like a healthy silence of the trace's own;
        the others cannot fire an alarm. None: trained to `until`; RUNTIME_ENDED; or the next launch's name,
        when trainguard stopped the job in a phase (a wrong stop)."""
        tl, job = self.tl, self.job
        for phase in phases(job.rhythm, job.checkpoint_every_minutes, tl.progress, until):
            if phase.minutes < FLOOR_MINUTES - PHASE_MARGIN_MINUTES:
                continue  # shorter than any limit
            if not (yield from self.train_until(phase.at_progress)):
                return RUNTIME_ENDED
            self.logs.deliver_until(tl.now)
            limit = self.guard_limit_minutes()
            if limit is None or phase.minutes < limit - PHASE_MARGIN_MINUTES:
                continue
            silence = Fault(
                job.name, FaultKind.SLOW_BUT_HEALTHY, phase.at_progress, tl.now, None, silent_minutes=phase.minutes
            )
            stopped = yield from silent_but_healthy(self, silence, open_stall_window(self, silence, tl.now))
            if stopped is not None:
                return stopped
        if not (yield from self.train_until(until)):
            return RUNTIME_ENDED
        return None

    def _finds_capacity(self) -> bool:
        """The launch asks for what has capacity although the job's own type has none: a listed alternative
        the trace gave capacity (as its type, or among its InstancePreferences, where SageMaker picks the first
        with capacity), or on-demand instances for a spot job (assumption: the shortage is spot's)."""
        try:
            described = self.world.plane.describe(self.name)
        except Exception:  # the launch was refused: nothing runs
            return False
        resource = described.get("ResourceConfig", {})
        asked = [p.get("InstanceType") for p in resource.get("InstancePreferences") or []] or [
            resource.get("InstanceType")
        ]
        fault = self.capacity_fault
        if fault is not None and any(kind in fault.alternatives_with_capacity for kind in asked):
            return True
        return self.job.spot and described.get("EnableManagedSpotTraining") is not True

    # ---- a capacity error: launches refused -------------------------------------------------------------

    def _refused_for_capacity(self) -> Step:
        tl = self.tl
        yield Sleep(tl.now + CAPACITY_REFUSAL_MINUTES / 60)
        tl.wait_until(State.QUEUED, self.kernel.now)
        if self.capacity_refusals == self.capacity_refusals_in_fault:  # the recovery runs from the first
            tl.struck(FaultKind.CAPACITY_ERROR, tl.now)
        self.capacity_refusals -= 1
        self.end_kind[self.name] = FaultKind.CAPACITY_ERROR
        end = self.end_launch(self.world.plane.fail, CAPACITY_TEXT)
        return (yield from after_end(self, end, FaultKind.CAPACITY_ERROR, tl.now, State.FAILED))
