"""trainguard's answers in one trace job's life (fleet/life.py, the life every strategy plays): the life drives
the job through the simulated SageMaker, lets the production handlers decide, and writes what happened into
the fleet model's `JobTimeline`.

The job's side follows the trace, the fault table (simulation/fault_table.py) and the model's rules
(model.py), as in the anchors. What trainguard does about it is not modelled: it is whatever the handlers do
with the events, alarms and schedules the stand-in gives them (endings.py). Where trainguard does not
relaunch, the job's parent or the person on call does, as in the anchors. How each ending reaches trainguard:
- fails: `plane.fail` with the trace's FailureReason; the Failed event goes to `job_events.handle`;
- refused at launch (capacity): Starting without instances for CAPACITY_REFUSAL_MINUTES, then failed,
  while the trace's repeats last; a delayed relaunch fires when trainguard's schedule says;
- a quota wall: the relaunch is refused with ResourceLimitExceeded while the trace's wall stands; Service
  Quotas approves an increase `quota_approval_hours` after it is asked; the quota check runs on schedule; a wall at
  work 0 refuses the user's first CreateTrainingJob (no job, no event: CloudTrail's record, when the stack's
  optional rule is deployed, goes to `failed_launches.handle`);
- silent kinds (hangs, an NCCL timeout, a healthy silence): a stall window (stall_windows.py, schedules.py)
  in which the alarms, the prober and the stall handler decide (strikes.py);
- interrupted (spot): Interrupted, unbilled, for the trace's wait, then Stopped/MaxWaitTimeExceeded;
- a checkpoint sync that stops: the prober reads the job's prefix at its minutes (checkpoint_sync.py).
"""

from __future__ import annotations

from collections.abc import Generator
from functools import partial
from typing import Any

from trainguard.domain.log_rhythm import FLOOR_MINUTES
from trainguard.domain.progress_limits import PROGRESS_FLOOR_MINUTES
from trainguard_local.fleet.life import End, How, JobLife, QuotaWall, Steps, Trained, stops_checkpoint_sync
from trainguard_local.fleet.model import State
from trainguard_local.fleet.trainguard_run.checkpoint_sync import watch_checkpoints
from trainguard_local.fleet.trainguard_run.endings import after_end
from trainguard_local.fleet.trainguard_run.finding_windows import watch_finding
from trainguard_local.fleet.trainguard_run.life_state import LifeState
from trainguard_local.fleet.trainguard_run.schedules import StallWindow, StopNews
from trainguard_local.fleet.trainguard_run.stall_windows import LEAD_MINUTES, open_stall_window
from trainguard_local.fleet.trainguard_run.strikes import (
    failure_text,
    hangs,
    silent_but_healthy,
    stopped_before_the_fault,
)
from trainguard_local.simulation.catalogue import FAILURE_TEXTS
from trainguard_local.simulation.fault_table import SILENT_KINDS, FaultKind
from trainguard_local.simulation.kernel import Park, Sleep
from trainguard_local.simulation.rhythm import phases
from trainguard_local.simulation.trace import Fault

PHASE_MARGIN_MINUTES = 2.0  # a phase this much shorter than the limit gets a window all the same (minute ticks)
CAPACITY_TEXT = FAILURE_TEXTS["capacity_error"][1][0]
Training = Generator[Sleep | Park, Any, Trained]


class TrainguardAnswers(LifeState):
    window: StallWindow | None = None  # the running launch's window for its silent fault

    def with_fault(self, fault: Fault | None) -> TrainguardAnswers:
        """This state, answering the job's life with its trace's fault."""
        self.job_life = JobLife(self.job, fault, self.tl, self.kernel, self.settings.person, self.rng, self)
        self.process = self.job_life.process
        return self

    def launched(self, life: JobLife, new_job: bool) -> None:
        self.refused_launch = ""
        if not self.next_name:
            if life.first_launch_refusal is not None:  # the trace's wall stands before the user's launch
                self._walled(life, life.first_launch_refusal)
            self.launch(self.job.name, "user")  # the user's own launch
        self.name = self.next_name

    def finds_capacity(self, life: JobLife) -> bool:
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
        fault = life.capacity_fault
        if fault is not None and any(kind in fault.alternatives_with_capacity for kind in asked):
            return True
        return self.job.spot and described.get("EnableManagedSpotTraining") is not True

    def started(self, life: JobLife) -> None:
        self.training_since = self.tl.now
        self.logs.start_launch(self.tl.now, self.tl.progress)
        self.world.evidence[self.name] = partial(self.show_evidence, self.name)
        self.drive(self.world.plane.start_training)

    def train(self, life: JobLife, progress: float, fault: Fault | None) -> Training:
        """Train through the job's phases; a silent fault's window opens LEAD_MINUTES before its silence."""
        tl = self.tl
        windowed = fault is not None and fault.kind in SILENT_KINDS
        through = yield from self._through_phases(
            max(progress - LEAD_MINUTES / 60, tl.progress) if windowed else progress
        )
        if through is not Trained.REACHED or (fault is not None and stops_checkpoint_sync(fault.kind)):
            return through
        self.window = None
        if fault is not None and windowed:
            if not (yield from life.train_until(max(progress - LEAD_MINUTES / 60, tl.progress))):
                return Trained.MAX_RUNTIME
            # A fault due inside a silent phase strikes as the phase ends: its silence cannot begin in the past.
            self.window = open_stall_window(self, fault, tl.now + max(0.0, progress - tl.progress))
            return (yield from self._lead_to(progress))
        if not (yield from life.train_until(progress)):
            return Trained.MAX_RUNTIME
        if fault is None:
            self.drive(self.world.plane.complete)
        return Trained.REACHED

    def _lead_to(self, progress: float) -> Training:
        """Train through the window's lead to the fault's strike, parked on the window: trainguard may stop the job
        in those minutes (a job that reports progress is judged within minutes), a wrong stop: ENDED."""
        tl = self.tl
        assert self.window is not None
        news = yield Park(tl.now + min(tl.hours_to(progress), max(tl.runtime_left, 0.0)))
        tl.train_for(self.kernel.now - tl.now)
        if isinstance(news, StopNews):
            yield from stopped_before_the_fault(self, news)
            return Trained.ENDED
        if tl.progress < progress - 1e-9:
            self.ticker.close(self.window.job_name)
            return Trained.MAX_RUNTIME
        return Trained.REACHED

    def _through_phases(self, until: float) -> Training:
        """Train to progress `until` through the job's silent phases (simulation/rhythm.py). A phase long enough
        to reach the limit trainguard holds for the job then (read from its ledger: the limit cannot move while
        no line comes; for a job that reports progress, its step limit or its phase's allowance) gets a stall
        window, like a healthy silence of the trace's own, up to `until` at the most (a fault whose moment falls in a
        phase strikes there, as in the anchors); the others cannot fire an alarm. ENDED: trainguard stopped the job
        in a phase (a wrong stop)."""
        tl, job = self.tl, self.job
        for phase in phases(job.rhythm, job.checkpoint_every_minutes, tl.progress, until):
            if phase.minutes < min(FLOOR_MINUTES, PROGRESS_FLOOR_MINUTES) - PHASE_MARGIN_MINUTES:
                continue  # shorter than any limit
            if not (yield from self.job_life.train_until(phase.at_progress)):
                return Trained.MAX_RUNTIME
            self.logs.deliver_until(tl.now)
            # Read at the phase's end: the prober's metric only grows through a silence, but for a job judged by
            # its steps that does not promise its phases, it turns to the log-silence rules partway (progress_limits).
            left = self.guard_minutes_left(tl.now + phase.minutes / 60)
            if left is None or left > PHASE_MARGIN_MINUTES:
                continue
            silence = Fault(
                job.name, FaultKind.SLOW_BUT_HEALTHY, phase.at_progress, tl.now, None, silent_minutes=phase.minutes
            )
            window = open_stall_window(self, silence, tl.now)
            if (yield from silent_but_healthy(self, silence, window, until=until)):
                return Trained.ENDED
        if not (yield from self.job_life.train_until(until)):
            return Trained.MAX_RUNTIME
        return Trained.REACHED

    def sync_stopped(self, life: JobLife, fault: Fault) -> Generator[Sleep | Park, Any, bool]:
        watched = yield from watch_checkpoints(self, fault)
        if watched is Trained.MAX_RUNTIME:
            yield from life.stopped_at_max_runtime()
        return watched is not Trained.REACHED

    def silence(self, life: JobLife, fault: Fault) -> Generator[Sleep | Park, Any, bool]:
        assert self.window is not None
        return (yield from silent_but_healthy(self, fault, self.window))

    def hang(self, life: JobLife, fault: Fault) -> Steps:
        assert self.window is not None
        yield from hangs(self, fault, self.window)

    def finding(self, life: JobLife, fault: Fault) -> Generator[Sleep | Park, Any, bool]:
        return (yield from watch_finding(self, fault))

    def ends(self, life: JobLife, how: How) -> None:
        """The launch's newest checkpoint reaches S3 (where the job's own sync puts it) before its instances go."""
        self.write_checkpoint()
        if how is How.INTERRUPTED:
            self.drive(self.world.plane.interrupt_spot)

    def after_end(self, life: JobLife, end: End) -> Steps:
        """The launch ends on SageMaker's side; trainguard answers its Failed or Stopped event (endings.py)."""
        plane = self.world.plane
        if end.how is How.QUOTA_REFUSED:  # the user's CreateTrainingJob, refused in `launched`: no job, no event
            outcome, waiting = self.answer_to_end(), State.WAITING_FOR_QUOTA  # failed-launches' word, if it came
            yield from after_end(self, outcome, end.kind, end.struck, waiting)
            return
        self.end_kind[self.name] = end.kind
        if end.how is How.REFUSED:
            outcome, waiting = self.end_launch(plane.fail, CAPACITY_TEXT), State.FAILED
        elif end.how is How.FAILED:
            assert end.fault is not None and end.kind is not None
            if end.kind is FaultKind.QUOTA_WALL:
                self._walled(life, end.fault)
            outcome, waiting = self.end_launch(plane.fail, failure_text(end.kind, end.fault)), State.FAILED
        elif end.how is How.INTERRUPTED:
            outcome, waiting = self.end_launch(plane.exceed_max_wait), State.STOPPED
        else:
            outcome, waiting = self.end_launch(plane.exceed_max_runtime), State.STOPPED
        yield from after_end(self, outcome, end.kind, end.struck, waiting)

    def _walled(self, life: JobLife, fault: Fault) -> None:
        """The trace's quota wall stands on the stand-in: the job's quota, and the listed alternatives the
        trace gave no room."""
        quota = self.world.fleet.quota_wall(self.job, self.job.name, fault.quota_approval_hours)
        life.quota_wall = QuotaWall(quota, fault.quota_approval_hours, "ResourceLimitExceeded", None)
        for kind, _ in self.job.fallback_types:
            if kind not in fault.alternatives_with_quota_room:
                self.world.plane.leave_no_room(self.job.name, kind)
