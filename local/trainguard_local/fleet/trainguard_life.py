"""One trace job's life under trainguard: a process on the kernel that drives the job through the
simulated SageMaker and lets the production handlers decide, and writes what happened into the fleet
model's `JobTimeline`.

The job's side follows the trace and the model's rules (model.py), as the anchors do: a launch starts for
`startup_minutes`, then trains; its one fault strikes at its progress; a failure loses the work since
the newest checkpoint. What trainguard does about it is not modelled: it is whatever the handlers do
with the events, alarms and schedules the stand-in gives them. Where trainguard does not relaunch, the
person on call does, with the same draws as in the anchors (person.py).

How each fault reaches trainguard:
- internal_error, hardware_fault, user_code_error, out_of_memory: the job fails with the trace's
  FailureReason (`plane.fail`); its Failed event goes to `job_events.handle`.
- capacity_error: the launch waits in Starting for CAPACITY_REFUSAL_MINUTES without instances, then
  fails with the CapacityError text; each relaunch is refused the same way while the trace's repeats
  last. A delayed relaunch fires when trainguard's one-time schedule says (`retry_launcher.handle`).
- nccl_timeout: the job hangs (GPUs busy, logs silent) in a stall window for the trace's minutes,
  then fails with the NCCL text.
- spot_interruption: Training -> Interrupted (`plane.interrupt_spot`), unbilled, for the trace's
  wait; then Stopped/MaxWaitTimeExceeded (`plane.exceed_max_wait`).
- quota_wall: the job fails on a hardware fault while the trace's quota wall stands for its lineage
  (the simulated SageMaker refuses its launches with ResourceLimitExceeded); Service Quotas is
  scripted to approve an increase `quota_approval_hours` after it is asked; the quota check runs on
  its schedule (`quota_watch.handle`).
- hang_idle_gpu, hang_busy_gpu: a stall window (see trainguard_kernel.py): logs silent from the hang,
  GPUs idle (0) or busy; the alarms, the prober and the stall handler decide.
- slow_but_healthy: a stall window while the job trains on, silent for the trace's minutes. During a
  first checkpoint load (a silence from the start of training) the GPUs are idle; during a silent
  phase later on they are busy, since training goes on (a parameter: `healthy_silence_idle_gpu`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Generator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from trainguard.domain.instance_types import gpus_per_host
from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard.domain.stall_alarms import plan_stall_alarms
from trainguard.domain.stalls import StallThresholds
from trainguard_local.fleet.anchors import CAPACITY_REFUSAL_MINUTES
from trainguard_local.fleet.catalogue import FAILURE_TEXTS, QUOTA_WALL_FIRST_FAILURE
from trainguard_local.fleet.model import ActionKind, JobTimeline, State, newest_checkpoint
from trainguard_local.fleet.person import PersonOnCall
from trainguard_local.fleet.trace import HANG_KINDS, USER_ERROR_KINDS, Fault, FaultKind, JobSpec
from trainguard_local.fleet.trainguard_kernel import (
    Kernel,
    Park,
    QuotaChecks,
    Sleep,
    StallWindow,
    StopNews,
    Ticker,
    minute_index,
)
from trainguard_local.fleet.trainguard_world import FleetWorld, GuardCall
from trainguard_local.sagemaker_control_plane import InvalidTransition

TRAINGUARD, PERSON = "trainguard", "person"
WINDOW_KINDS = frozenset({*HANG_KINDS, FaultKind.NCCL_TIMEOUT, FaultKind.SLOW_BUT_HEALTHY})
LEAD_MINUTES = 3  # a window opens this long before the silence: the job's recent lines reach the ledger
AFTER_SILENCE_MINUTES = 3  # a healthy silence's window stays open this long after the logs resume
HANG_MARGIN_MINUTES = 15  # past the latest threshold crossing, for a hang's window
BUSY_GPU_PER_GPU, SPIN_GPU_PER_GPU = 90.0, 100.0  # GPUUtilization per GPU: training; a collective spinning
QUOTA_WAIT_MARGIN_HOURS = 1.0
_MAX_LAUNCHES = 100
Life = Generator[Sleep | Park, Any, None]


@dataclass(frozen=True)
class LifeSettings:
    person: PersonOnCall
    thresholds: StallThresholds
    quota_wait_hours: float
    healthy_silence_idle_gpu: str  # "first_load", "always" or "never"


def failure_text(kind: FaultKind, fault: Fault) -> str:
    """The fault's FailureReason: the trace's, or the catalogue's first text of its kind (hand-made faults)."""
    if fault.failure_reason:
        return fault.failure_reason
    source = QUOTA_WALL_FIRST_FAILURE if kind is FaultKind.QUOTA_WALL else kind.value
    return FAILURE_TEXTS[source][1][0]


CAPACITY_TEXT = FAILURE_TEXTS["capacity_error"][1][0]


class JobLife:
    def __init__(
        self,
        job: JobSpec,
        fault: Fault | None,
        rng: random.Random,
        world: FleetWorld,
        kernel: Kernel,
        ticker: Ticker,
        quota_checks: QuotaChecks,
        settings: LifeSettings,
    ) -> None:
        self.job, self.rng, self.world, self.kernel = job, rng, world, kernel
        self.ticker, self.quota_checks, self.settings = ticker, quota_checks, settings
        self.tl = JobTimeline(job, TRAINGUARD)
        capacity = fault is not None and fault.kind is FaultKind.CAPACITY_ERROR
        self.capacity_refusals = self.capacity_refusals_in_fault = fault.repeats + 1 if fault and capacity else 0
        self.fault = None if capacity else fault  # pending until it strikes
        self.name = ""  # the SageMaker job of the running launch
        self.training_since = 0.0
        self.end_kind: dict[str, FaultKind | None] = {}  # SageMaker job -> the fault its end came from
        self.hung: set[str] = set()  # SageMaker jobs hung when stopped
        self.pending: list[GuardCall] = []  # trainguard's calls on this lineage, not yet in the timeline
        self._refused: dict[str, str] = {}  # failed job -> the error of trainguard's last launch for it
        self.repeated_refusals = 0
        self.person_launches = 0
        self.notes: list[str] = []  # what did not go as the drive expects (a refused launch, a stray state)
        self.modelled: list[str] = []  # where the drive fell back to a model, and why
        self.quota_wall: tuple[str, float] | None = None  # (quota, approval hours): the trace's wall, standing
        self.process: Life = self.run()

    # ---- the lineage ------------------------------------------------------------------------------

    def run(self) -> Life:
        name = self._launch(self.job.name, "user")
        for _ in range(_MAX_LAUNCHES):
            self.tl.launch(new_job=True)
            self.name = name
            name = yield from self._run_launch()
            if self.tl.completed_at is not None:
                return
        raise RuntimeError(f"{self.job.name}: no completion after {_MAX_LAUNCHES} launches")

    def _launch(self, name: str, actor: str) -> str:
        error = self.world.launch(self.job, name, root=self.job.name)
        if error:
            self.notes.append(f"{actor}'s launch of {name} refused: {error}")
        self.world.pump()
        return name

    def _run_launch(self) -> Generator[Sleep | Park, Any, str]:
        """Run the launch `self.name` (created now) to its end; the next launch's name ('' when done)."""
        tl = self.tl
        if self.capacity_refusals:
            return (yield from self._refused_for_capacity())
        yield Sleep(tl.now + self.job.startup_minutes / 60)
        tl.start()
        self.training_since = tl.now
        self._drive(self.world.plane.start_training)
        while True:
            fault = self.fault
            target = fault.at_work_hours if fault else self.job.work_hours
            window: StallWindow | None = None
            if fault is not None and fault.kind in WINDOW_KINDS:
                if not (yield from self._train_to(max(target - LEAD_MINUTES / 60, tl.progress))):
                    return (yield from self._stopped_at_max_runtime())
                window = self._open_window(fault, tl.now + (target - tl.progress))
            if not (yield from self._train_to(target)):
                if window is not None:
                    self.ticker.close(window.job_name)
                return (yield from self._stopped_at_max_runtime())
            if fault is None:
                self._drive(self.world.plane.complete)
                tl.complete()
                return ""
            self.fault = None
            if fault.kind is FaultKind.SLOW_BUT_HEALTHY:
                assert window is not None
                stopped = yield from self._silent_but_healthy(fault, window)
                if stopped is None:
                    continue  # the silence passed, training goes on
                return stopped
            if fault.kind in HANG_KINDS or fault.kind is FaultKind.NCCL_TIMEOUT:
                assert window is not None
                return (yield from self._hangs(fault, window))
            if fault.kind is FaultKind.SPOT_INTERRUPTION:
                return (yield from self._spot_interruption(fault))
            return (yield from self._fails(fault, tl.now))

    def _train_to(self, progress: float) -> Generator[Sleep | Park, Any, bool]:
        tl = self.tl
        hours = min(progress - tl.progress, max(tl.runtime_left, 0.0))
        if hours > 0:
            yield Sleep(tl.now + hours)
        return tl.train_to(progress)

    # ---- faults -----------------------------------------------------------------------------------

    def _refused_for_capacity(self) -> Generator[Sleep | Park, Any, str]:
        tl = self.tl
        yield Sleep(tl.now + CAPACITY_REFUSAL_MINUTES / 60)
        tl.wait_until(State.QUEUED, self.kernel.now)
        if self.capacity_refusals == self.capacity_refusals_in_fault:  # the recovery runs from the first
            tl.struck(FaultKind.CAPACITY_ERROR, tl.now)
        self.capacity_refusals -= 1
        self.end_kind[self.name] = FaultKind.CAPACITY_ERROR
        end = self._end(self.world.plane.fail, CAPACITY_TEXT)
        return (yield from self._after_end(end, FaultKind.CAPACITY_ERROR, tl.now, State.FAILED))

    def _fails(self, fault: Fault, struck: float) -> Generator[Sleep | Park, Any, str]:
        tl = self.tl
        self._checkpoint()
        tl.lose_work_since_checkpoint()
        tl.struck(fault.kind, struck)
        self.end_kind[self.name] = fault.kind
        if fault.kind is FaultKind.QUOTA_WALL:
            quota = self.world.quota_wall(self.job, self.job.name, fault.quota_approval_hours)
            self.quota_wall = (quota, fault.quota_approval_hours)
        end = self._end(self.world.plane.fail, failure_text(fault.kind, fault))
        return (yield from self._after_end(end, fault.kind, struck, State.FAILED))

    def _spot_interruption(self, fault: Fault) -> Generator[Sleep | Park, Any, str]:
        tl = self.tl
        self._checkpoint()
        tl.lose_work_since_checkpoint()  # the instances are reclaimed
        self._drive(self.world.plane.interrupt_spot)
        yield Sleep(tl.now + fault.spot_wait_hours)
        tl.wait_until(State.QUEUED, self.kernel.now)  # Interrupted, until MaxWait
        tl.struck(fault.kind, tl.now)
        self.end_kind[self.name] = fault.kind
        end = self._end(self.world.plane.exceed_max_wait)
        return (yield from self._after_end(end, fault.kind, tl.now, State.STOPPED))

    def _hangs(self, fault: Fault, window: StallWindow) -> Generator[Sleep | Park, Any, str]:
        tl, kind = self.tl, fault.kind
        struck = tl.now
        self.hung.add(self.name)
        self._checkpoint()
        nccl = kind is FaultKind.NCCL_TIMEOUT
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
            self._flush()
            tl.lose_work_since_checkpoint()
            end = self._end_of(news.delivered)
            return (yield from self._after_end(end, None, struck, State.STOPPED))
        if nccl and self.kernel.now < runtime_end - 1e-9:  # the watchdog fails the job
            return (yield from self._fails(fault, struck))
        if nccl:
            tl.struck(kind, struck)
        return (yield from self._hang_left_to_the_person(kind, struck, runtime_end))

    def _hang_left_to_the_person(self, kind: FaultKind, struck: float, runtime_end: float) -> Generator[Any, Any, str]:
        """trainguard did not stop the hang within its window: it bills until the person stops it, or until
        MaxRuntime does if sooner (as in the anchors)."""
        tl = self.tl
        if self.kernel.now < runtime_end - 1e-9:
            self.notes.append(f"{self.name}: hang not stopped by trainguard within its window")
        response = self.settings.person.response_hours(self.rng)
        if struck + response < runtime_end:
            yield Sleep(struck + response)
            tl.hang_until(self.kernel.now)
            self.world.world["sagemaker"].stop_training_job(TrainingJobName=self.name)
            self.world.plane.settle(self.name)
            self.world.pump()
            tl.act(ActionKind.STOP, PERSON)
        else:
            yield Sleep(runtime_end)
            tl.hang_until(self.kernel.now)
            self.world.plane.exceed_max_runtime(self.name)
            self.world.pump()
        self._flush()
        tl.lose_work_since_checkpoint()
        return (yield from self._person_relaunches(kind, struck, struck_at=struck, response=response))

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
        self._flush()
        self._checkpoint(no_checkpoint_after=fault.at_work_hours)
        tl.lose_work_since_checkpoint(no_checkpoint_after=fault.at_work_hours)  # none is written while silent
        end = self._end_of(news.delivered)
        return (yield from self._after_end(end, None, started, State.STOPPED))

    def _stopped_at_max_runtime(self) -> Generator[Sleep | Park, Any, str]:
        self._checkpoint()
        self.tl.lose_work_since_checkpoint()
        self.end_kind[self.name] = None
        end = self._end(self.world.plane.exceed_max_runtime)
        return (yield from self._after_end(end, None, self.tl.now, State.STOPPED))

    # ---- what follows the end of a launch -----------------------------------------------------------

    def _after_end(
        self, end: Outcome | None, kind: FaultKind | None, struck: float, waiting: State
    ) -> Generator[Sleep | Park, Any, str]:
        """trainguard's answer to the launch's end, then what follows it; the next launch's name."""
        tl = self.tl
        told = end is not None and end.kind in (
            OutcomeKind.RELAUNCHED,
            OutcomeKind.RELAUNCH_SCHEDULED,
            OutcomeKind.QUOTA_WALL,
            OutcomeKind.NOTIFIED,
            OutcomeKind.NOT_RELAUNCHED,
        )
        if told and kind is not None:
            tl.detect(kind, struck, TRAINGUARD)
        self._flush()
        if end is not None and end.kind is OutcomeKind.RELAUNCHED:
            return end.new_job_name
        if end is not None and end.kind is OutcomeKind.RELAUNCH_SCHEDULED:
            launched = yield from self._scheduled_relaunch(waiting)
            if launched:
                return launched
        elif end is not None and end.kind is OutcomeKind.QUOTA_WALL:
            launched = yield from self._wait_for_quota()
            if launched:
                return launched
        elif told:
            assert end is not None
            tl.act(ActionKind.NOTIFY, TRAINGUARD, target=self.name, note=end.kind.value)
        fix = kind in USER_ERROR_KINDS
        return (yield from self._person_relaunches(None if told else kind, self.kernel.now, struck_at=struck, fix=fix))

    def _scheduled_relaunch(self, waiting: State) -> Generator[Sleep | Park, Any, str]:
        from trainguard.handlers import retry_launcher

        failed = self.name
        schedule = self.world.schedule_of(failed)
        if schedule is None:
            self.notes.append(f"{failed}: relaunch scheduled, but no schedule found")
            return ""
        at, payload = schedule
        yield Sleep(self.world.clock.hours_of(at))
        self.tl.wait_until(waiting, self.kernel.now)
        fired = self.world.call("retry_launcher", failed, retry_launcher.handle, payload)
        self.world.schedule_fired(failed)
        self.world.pump()
        self._flush()
        if isinstance(fired, Outcome) and fired.kind is OutcomeKind.RELAUNCHED:
            return fired.new_job_name
        self.tl.act(ActionKind.NOTIFY, TRAINGUARD, target=failed, note=fired.kind.value if fired else "error")
        return ""

    def _wait_for_quota(self) -> Generator[Sleep | Park, Any, str]:
        failed = self.name
        self.quota_checks.wait(failed, self.process)
        news = yield Park(self.kernel.now + self.settings.quota_wait_hours + QUOTA_WAIT_MARGIN_HOURS)
        self.quota_checks.forget(failed)
        self.tl.wait_until(State.WAITING_FOR_QUOTA, self.kernel.now)
        self._flush()
        if news is not None and news[0].get("kind") == OutcomeKind.RELAUNCHED.value:
            self.quota_wall = None
            return str(news[0]["new_job_name"])
        self.tl.act(ActionKind.NOTIFY, TRAINGUARD, target=failed, note=str(news[0]["kind"]) if news else "no answer")
        return ""

    def _person_relaunches(
        self,
        kind: FaultKind | None,
        since: float,
        *,
        struck_at: float,
        fix: bool = False,
        response: float | None = None,
    ) -> Generator[Sleep | Park, Any, str]:
        """The person acts a response time after `since` (and the fix of a user's error), then relaunches
        from the newest checkpoint. `kind`: what the person detects then (None: trainguard told them)."""
        tl, person = self.tl, self.settings.person
        response = person.response_hours(self.rng) if response is None else response
        yield Sleep(max(since + response, self.kernel.now))
        tl.wait_until(State.WAITING_FOR_PERSON, self.kernel.now)
        if kind is not None:
            tl.detect(kind, struck_at, PERSON)
        if fix:
            yield Sleep(tl.now + person.fix_hours)
            tl.wait_until(State.WAITING_FOR_PERSON, self.kernel.now)
        if self.quota_wall is not None:
            yield from self._person_meets_the_quota_wall()
        self.person_launches += 1
        tl.act(ActionKind.RELAUNCH, PERSON, note="after a fix" if fix else "from the newest checkpoint")
        return self._launch(f"{self.job.name}-p{self.person_launches}", PERSON)

    def _person_meets_the_quota_wall(self) -> Generator[Sleep | Park, Any, None]:
        """Modelled, as in the anchors (trainguard did not take the quota path): the person's launch is
        refused, they request the quota, wait for it, and come back a response time later."""
        assert self.quota_wall is not None
        quota, approval = self.quota_wall
        self.modelled.append("the person meets the quota wall (refused, request, approval), as in the anchors")
        tl, person = self.tl, self.settings.person
        tl.act(ActionKind.RELAUNCH, PERSON, succeeded=False, note="ResourceLimitExceeded")
        tl.act(ActionKind.QUOTA_REQUEST, PERSON, target=quota)
        yield Sleep(tl.now + approval)
        tl.wait_until(State.WAITING_FOR_QUOTA, self.kernel.now)
        yield Sleep(tl.now + person.response_hours(self.rng))
        tl.wait_until(State.WAITING_FOR_PERSON, self.kernel.now)
        self.world.plane.walls.pop(self.job.name, None)
        self.quota_wall = None

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
        newest = newest_checkpoint(min(self.tl.progress, no_checkpoint_after), every)
        if newest > self.tl.kept:
            written_at = self.tl.now - (self.tl.progress - newest)
            self.world.write_checkpoint(self.job, newest, written_at)

    def _open_window(self, fault: Fault, quiet_from_hours: float) -> StallWindow:
        """Open the fault's stall window, and write its hosts' GPUUtilization for the whole window."""
        th, clock = self.settings.thresholds, self.world.clock
        quiet_from = clock.at_hours(quiet_from_hours)
        grace_end = self.training_since + th.startup_grace_minutes / 60
        if fault.kind is FaultKind.SLOW_BUT_HEALTHY:
            quiet_until = quiet_from + timedelta(minutes=fault.silent_minutes)
            last = quiet_until + timedelta(minutes=AFTER_SILENCE_MINUTES)
        elif fault.kind is FaultKind.NCCL_TIMEOUT:
            quiet_until = None
            last = quiet_from + timedelta(minutes=fault.hung_minutes + 1)
        else:
            quiet_until = None
            crossing = max(quiet_from_hours, grace_end) + max(th.stall_minutes, th.gpu_idle_minutes) / 60
            last = clock.at_hours(crossing) + timedelta(minutes=HANG_MARGIN_MINUTES)
        hosts = self.job.instance_count
        names = plan_stall_alarms(self.name, self.job.instance_type, hosts, th).all_names
        window = StallWindow(
            job_name=self.name,
            hosts=hosts,
            quiet_from=quiet_from,
            quiet_until=quiet_until,
            last_tick=minute_index(self.world, last),
            life=self.process,
            evaluator=self.world.evaluator(names),
        )
        gpus = gpus_per_host(self.job.instance_type) or 1
        quiet = self._quiet_gpu(fault, quiet_from_hours) * gpus
        start = max(clock.at_hours(self.training_since), quiet_from - timedelta(minutes=th.gpu_idle_minutes + 5))
        first = minute_index(self.world, start)
        values = []
        for minute in range(first, window.last_tick + 1):
            moment = clock.base + timedelta(minutes=minute, seconds=30)
            silent = moment >= quiet_from and (quiet_until is None or moment < quiet_until)
            values.append((moment, quiet if silent else BUSY_GPU_PER_GPU * gpus))
        self.world.gpu_datapoints(self.name, hosts, values)
        self.ticker.open(window)
        return window

    def _quiet_gpu(self, fault: Fault, quiet_from_hours: float) -> float:
        """GPUUtilization per GPU while the job is silent."""
        if fault.kind is FaultKind.HANG_IDLE_GPU:
            return 0.0
        if fault.kind is not FaultKind.SLOW_BUT_HEALTHY:
            return SPIN_GPU_PER_GPU
        first_load = abs(quiet_from_hours - self.training_since) < 1e-6
        mode = self.settings.healthy_silence_idle_gpu
        return 0.0 if mode == "always" or (mode == "first_load" and first_load) else BUSY_GPU_PER_GPU

    # ---- trainguard's calls, as actions --------------------------------------------------------------

    def take(self, call: GuardCall) -> None:
        self.pending.append(call)

    def _flush(self) -> None:
        """trainguard's calls on this lineage so far, as actions in the timeline (at their time: the
        timeline has been brought to the present before)."""
        calls, self.pending = self.pending, []
        for call in calls:
            if call.operation == "CreateTrainingJob":
                tags = {t["Key"]: t["Value"] for t in call.params.get("Tags", [])}
                failed = tags.get("trainguard:retry-of", tags.get("trainguard:blocked-launch", ""))
                if not call.succeeded and self._refused.get(failed) == call.error_code:
                    self.repeated_refusals += 1  # the quota check's launch, refused again: one action is enough
                    continue
                self._refused[failed] = call.error_code
                user_error = self.end_kind.get(failed) in USER_ERROR_KINDS
                self.tl.act(
                    ActionKind.RELAUNCH,
                    TRAINGUARD,
                    target=failed,
                    right=not user_error,
                    succeeded=call.succeeded,
                    note=f"{call.error_code}: {call.error_message}"
                    if call.error_code
                    else call.params["TrainingJobName"],
                )
            elif call.operation == "StopTrainingJob":
                name = str(call.params.get("TrainingJobName", ""))
                self.tl.act(
                    ActionKind.STOP,
                    TRAINGUARD,
                    target=name,
                    right=name in self.hung,
                    succeeded=call.succeeded,
                    note="" if name in self.hung else "a healthy job, silent for a while",
                )
            elif call.operation == "RequestServiceQuotaIncrease":
                code = str(call.params.get("QuotaCode", ""))
                names = {r["QuotaCode"]: r["QuotaName"] for r in self.world.quotas.requests()}
                self.tl.act(
                    ActionKind.QUOTA_REQUEST, TRAINGUARD, target=names.get(code, code), succeeded=call.succeeded
                )
