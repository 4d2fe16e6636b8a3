"""One trace job's life under trainguard: a process on the kernel that drives the job through the
simulated SageMaker, lets the production handlers decide, and writes what happened into the fleet
model's `JobTimeline`.

The job's side follows the trace, the fault table (simulation/fault_table.py) and the model's rules
(model.py), as the anchors do: a launch starts for `startup_minutes`, then trains; its one fault strikes
at its progress, as its row says; a failure loses the work since the newest checkpoint. What trainguard
does about it is not modelled: it is whatever the handlers do with the events, alarms and schedules the
stand-in gives them (endings.py). Where trainguard does not relaunch, the person on call does, with the
same draws as in the anchors (person.py). How each ending reaches trainguard:
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

import math
from collections.abc import Generator
from typing import Any

from trainguard.domain.log_rhythm import FLOOR_MINUTES
from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard_local.fleet.anchor_rules import CAPACITY_REFUSAL_MINUTES
from trainguard_local.fleet.model import State, newest_checkpoint
from trainguard_local.fleet.trainguard_run.checkpoint_sync import RUNTIME_ENDED, watch_checkpoints
from trainguard_local.fleet.trainguard_run.endings import after_end, hang_left_to_the_person
from trainguard_local.fleet.trainguard_run.guard_actions import TRAINGUARD
from trainguard_local.fleet.trainguard_run.life_state import Life, LifeState
from trainguard_local.fleet.trainguard_run.schedules import StallWindow, StopNews
from trainguard_local.fleet.trainguard_run.stall_windows import LEAD_MINUTES, open_stall_window
from trainguard_local.simulation.catalogue import FAILURE_TEXTS
from trainguard_local.simulation.fault_table import FAULT_TABLE, SILENT_KINDS, Ending, FaultKind
from trainguard_local.simulation.kernel import Park, Sleep
from trainguard_local.simulation.rhythm import phases
from trainguard_local.simulation.trace import Fault, sync_failure
from trainguard_local.stand_in.sagemaker_control_plane import InvalidTransition

_MAX_LAUNCHES = 100
PHASE_MARGIN_MINUTES = 2.0  # a phase this much shorter than the limit gets a window all the same (minute ticks)
Step = Generator[Sleep | Park, Any, str]


def failure_text(kind: FaultKind, fault: Fault) -> str:
    """The fault's FailureReason: the trace's, or the catalogue's first text of its kind (hand-made faults)."""
    return fault.failure_reason or FAILURE_TEXTS[str(FAULT_TABLE[kind].failure_texts)][1][0]


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
        for _ in range(_MAX_LAUNCHES):
            self.tl.launch(new_job=True)
            self.name = name
            name = yield from self._run_launch()
            if self.tl.completed_at is not None:
                return
        raise RuntimeError(f"{self.job.name}: no completion after {_MAX_LAUNCHES} launches")

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
        self._drive(self.world.plane.start_training)
        while True:
            fault = self.fault
            target = fault.at_work_hours if fault else self.job.work_hours
            windowed = fault is not None and fault.kind in SILENT_KINDS
            through = yield from self._through_phases(
                max(target - LEAD_MINUTES / 60, tl.progress) if windowed else target
            )
            if through is RUNTIME_ENDED:
                return (yield from self._stopped_at_max_runtime())
            if through is not None:
                return through  # stopped in a healthy phase: the next launch
            row = FAULT_TABLE[fault.kind] if fault is not None else None
            if fault is not None and row is not None and row.ending is Ending.TRAINS_ON and not row.silent:
                self.fault = sync_failure(fault)  # its checkpoints stop reaching S3; a hardware failure strikes later
                restarted = yield from watch_checkpoints(self, fault)
                if restarted == RUNTIME_ENDED:
                    return (yield from self._stopped_at_max_runtime())
                if restarted:
                    return restarted  # the person restarted the job on trainguard's warning
                continue  # its hardware failure strikes later (self.fault)
            window: StallWindow | None = None
            if fault is not None and fault.kind in SILENT_KINDS:
                if not (yield from self.train_until(max(target - LEAD_MINUTES / 60, tl.progress))):
                    return (yield from self._stopped_at_max_runtime())
                window = open_stall_window(self, fault, tl.now + (target - tl.progress))
            if not (yield from self.train_until(target)):
                if window is not None:
                    self.ticker.close(window.job_name)
                return (yield from self._stopped_at_max_runtime())
            if fault is None:
                self._drive(self.world.plane.complete)
                tl.complete()
                return ""
            self.fault = None
            struck = yield from self._strike(fault, window)
            if struck is not None:
                return struck
            # a healthy silence passed: training goes on

    def _strike(self, fault: Fault, window: StallWindow | None) -> Generator[Sleep | Park, Any, str | None]:
        """The fault strikes, as its row of the fault table says: the next launch's name, or None when the job
        trains on (a healthy silence passed)."""
        ending = FAULT_TABLE[fault.kind].ending
        if ending is Ending.TRAINS_ON:
            assert window is not None
            return (yield from self._silent_but_healthy(fault, window))
        if ending in (Ending.HANGS, Ending.FAILS_AFTER_HANG):
            assert window is not None
            return (yield from self._hangs(fault, window))
        if ending is Ending.INTERRUPTED:
            return (yield from self._spot_interruption(fault))
        return (yield from self._fails(fault, self.tl.now))

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
            self.phase_windows += 1
            stopped = yield from self._silent_but_healthy(silence, open_stall_window(self, silence, tl.now))
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

    # ---- faults -----------------------------------------------------------------------------------

    def _refused_for_capacity(self) -> Step:
        tl = self.tl
        yield Sleep(tl.now + CAPACITY_REFUSAL_MINUTES / 60)
        tl.wait_until(State.QUEUED, self.kernel.now)
        if self.capacity_refusals == self.capacity_refusals_in_fault:  # the recovery runs from the first
            tl.struck(FaultKind.CAPACITY_ERROR, tl.now)
        self.capacity_refusals -= 1
        self.end_kind[self.name] = FaultKind.CAPACITY_ERROR
        end = self._end(self.world.plane.fail, CAPACITY_TEXT)
        return (yield from after_end(self, end, FaultKind.CAPACITY_ERROR, tl.now, State.FAILED))

    def _fails(self, fault: Fault, struck: float) -> Step:
        tl = self.tl
        self._checkpoint()
        tl.lose_work_since_checkpoint()
        tl.struck(fault.kind, struck)
        self.end_kind[self.name] = fault.kind
        if fault.kind is FaultKind.QUOTA_WALL:
            quota = self.world.fleet.quota_wall(self.job, self.job.name, fault.quota_approval_hours)
            self.quota_wall = (quota, fault.quota_approval_hours)
            for kind, _ in self.job.fallback_types:  # the listed alternatives the trace gave no room now
                if kind not in fault.alternatives_with_quota_room:
                    self.world.plane.short_alternatives.add((self.job.name, kind))
        end = self._end(self.world.plane.fail, failure_text(fault.kind, fault))
        return (yield from after_end(self, end, fault.kind, struck, State.FAILED))

    def _spot_interruption(self, fault: Fault) -> Step:
        tl = self.tl
        self._checkpoint()
        tl.lose_work_since_checkpoint()  # the instances are reclaimed
        self._drive(self.world.plane.interrupt_spot)
        yield Sleep(tl.now + fault.spot_wait_hours)
        tl.wait_until(State.QUEUED, self.kernel.now)  # Interrupted, until MaxWait
        tl.struck(fault.kind, tl.now)
        self.end_kind[self.name] = fault.kind
        end = self._end(self.world.plane.exceed_max_wait)
        return (yield from after_end(self, end, fault.kind, tl.now, State.STOPPED))

    def _hangs(self, fault: Fault, window: StallWindow) -> Step:
        tl, kind = self.tl, fault.kind
        struck = tl.now
        self.hung.add(self.name)
        self._checkpoint()
        nccl = FAULT_TABLE[kind].ending is Ending.FAILS_AFTER_HANG  # the watchdog fails it at its timeout
        if not nccl:
            tl.struck(kind, struck)
        window_end = window.last_tick / 60 if not nccl else tl.now + fault.hung_minutes / 60
        runtime_end = tl.now + max(tl.runtime_left, 0.0)
        news = yield Park(min(window_end, runtime_end))
        self.ticker.close(window.job_name)
        tl.hang_until(self.kernel.now)
        if isinstance(news, StopNews):  # trainguard stopped it
            if nccl:
                tl.struck(kind, struck)
            tl.detect(kind, struck, TRAINGUARD)
            self.flush_guard_calls()
            tl.lose_work_since_checkpoint()
            end = self._end_of(news.delivered)
            return (yield from after_end(self, end, None, struck, State.STOPPED))
        if nccl and self.kernel.now < runtime_end - 1e-9:  # the watchdog fails the job
            return (yield from self._fails(fault, struck))
        if nccl:
            tl.struck(kind, struck)
        return (yield from hang_left_to_the_person(self, kind, struck, runtime_end))

    def _silent_but_healthy(self, fault: Fault, window: StallWindow) -> Generator[Sleep | Park, Any, str | None]:
        """The job trains on, silent; None when the silence passed, else the next launch's name."""
        tl = self.tl
        started = tl.now
        job_end = tl.now + (self.job.work_hours - tl.progress)
        runtime_end = tl.now + max(tl.runtime_left, 0.0)
        news = yield Park(min(window.last_tick / 60, job_end, runtime_end))
        self.ticker.close(window.job_name)
        tl.train_to(tl.progress + (self.kernel.now - tl.now))
        if not isinstance(news, StopNews):
            return None
        tl.detect(fault.kind, started, TRAINGUARD)
        self.flush_guard_calls()
        self._checkpoint(no_checkpoint_after=fault.at_work_hours)
        tl.lose_work_since_checkpoint(no_checkpoint_after=fault.at_work_hours)  # none is written while silent
        end = self._end_of(news.delivered)
        return (yield from after_end(self, end, None, started, State.STOPPED))

    def _stopped_at_max_runtime(self) -> Step:
        self._checkpoint()
        self.tl.lose_work_since_checkpoint()
        self.end_kind[self.name] = None
        end = self._end(self.world.plane.exceed_max_runtime)
        return (yield from after_end(self, end, None, self.tl.now, State.STOPPED))

    # ---- the stand-in ------------------------------------------------------------------------------

    def _drive(self, move: Any, *args: Any) -> None:
        try:
            move(self.name, *args)
        except InvalidTransition as err:
            self.notes.append(f"{self.name}: {err}")
        self.world.pump()

    def _end(self, move: Any, *args: Any) -> Outcome | None:
        """End the launch on SageMaker's side; trainguard's outcome for its Failed or Stopped event."""
        try:
            move(self.name, *args)
        except InvalidTransition as err:
            self.notes.append(f"{self.name}: {err}")
        return self._end_of(self.world.pump())

    def _end_of(self, delivered: list[tuple[dict[str, Any], Outcome | None]]) -> Outcome | None:
        for event, outcome in delivered:
            detail = event["detail"]
            if (
                detail["TrainingJobName"] == self.name
                and detail["TrainingJobStatus"] in ("Failed", "Stopped")
                and outcome is not None
                and outcome.kind is not OutcomeKind.ALREADY_HANDLED
            ):
                return outcome
        return None

    def _checkpoint(self, no_checkpoint_after: float = math.inf) -> None:
        """Write the newest checkpoint of the running launch to S3 (where the job's own sync puts it)."""
        every = self.job.checkpoint_every_minutes
        newest = newest_checkpoint(min(self.tl.progress, no_checkpoint_after, self.tl.sync_stopped_after), every)
        if newest > self.tl.kept:
            written_at = self.tl.now - (self.tl.progress - newest)
            self.world.fleet.write_progress_checkpoint(self.job, newest, written_at)
