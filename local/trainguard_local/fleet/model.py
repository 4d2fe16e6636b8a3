"""One job's life on a virtual clock, in hours, and the record a strategy returns for it.

Event-driven: a strategy model moves a `JobTimeline` from event to event (launch, train to a
progress, hang until, wait until), never minute by minute. The rules:
- progress advances only while `training`, one hour of progress per hour, or 1/factor of an hour on a degraded
  host (issue 28): the rest of the hour is wasted, `slowed_hours`;
- a checkpoint is written at every multiple of `checkpoint_every_minutes` of progress; a failure or a
  stop loses the work since the newest one, and a relaunch resumes from it;
- every launch spends the job's `startup_minutes` in `starting` before training runs;
- instances are billed in `starting`, `training` and `hung`; never while queued or waiting. These
  billed states also count against MaxRuntimeInSeconds, per SageMaker job (SageMaker's own retries
  share one job's MaxRuntime; a relaunch is a new job with its own).

The gaps between a job's end and its next launch are `waiting_for_person` (a person must act),
`waiting_for_quota` (an increase request is open), `failed` or `stopped` (an automatic mechanism
waits: a backoff, the relaunch after a stop). `queued` is a job with no instances: a launch that
capacity refuses, a spot job Interrupted until MaxWait.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.trace import JobSpec, Trace

_EPSILON = 1e-9  # hours; float slack when progress lands on a checkpoint


class State(StrEnum):
    QUEUED = "queued"
    STARTING = "starting"
    TRAINING = "training"
    HUNG = "hung"
    FAILED = "failed"
    STOPPED = "stopped"
    WAITING_FOR_PERSON = "waiting_for_person"
    WAITING_FOR_QUOTA = "waiting_for_quota"
    COMPLETED = "completed"


BILLED_STATES = frozenset({State.STARTING, State.TRAINING, State.HUNG})
TRAINGUARD = "trainguard"  # the actor of trainguard's detections and actions in a timeline
TRAINGUARD_WITH_LEAVE = "trainguard_with_leave"  # trainguard where every owner gave it leave to act on findings
GUARDS = frozenset({TRAINGUARD, TRAINGUARD_WITH_LEAVE})  # strategies that run trainguard; the rest are anchors


class ActionKind(StrEnum):
    STOP = "stop"
    RELAUNCH = "relaunch"
    QUOTA_REQUEST = "quota_request"
    NOTIFY = "notify"


@dataclass(frozen=True)
class Segment:
    start: float
    end: float
    state: State
    attempt: int  # 0 for the first launch, then one more per launch (SageMaker's own retries included)

    @property
    def hours(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class AfterFault:
    """Something that came `at` (hours on the trace clock) after a fault struck: a detection, a recovery."""

    fault_kind: FaultKind
    struck_at: float  # when the fault showed: a failed or stopped job, a hang's start, a refused launch, a NaN line
    at: float

    @property
    def minutes(self) -> float:
        """How long after the fault struck."""
        return (self.at - self.struck_at) * 60


@dataclass(frozen=True)
class Recovery(AfterFault):
    """Training runs again, `at`."""


@dataclass(frozen=True)
class Detection(AfterFault):
    """`detector` saw the fault, `at`."""

    detector: str  # "person", "sagemaker_retry", "debugger_rule", "trainguard", ...


@dataclass(frozen=True)
class Action:
    kind: ActionKind
    at: float
    target: str  # what it acts on: a launch (`attempt_name`), a quota name; (kind, target) twice is a duplicate
    actor: str
    right: bool  # False: a stop of a healthy job, or a relaunch of a user's error
    succeeded: bool = True  # False: a relaunch refused (quota, capacity)
    note: str = ""


@dataclass(frozen=True)
class JobOutcome:
    strategy: str
    job: JobSpec
    segments: tuple[Segment, ...]
    detections: tuple[Detection, ...]
    actions: tuple[Action, ...]
    recoveries: tuple[Recovery, ...]
    kept_progress_hours: float
    lost_work_hours: float  # at every failure or stop, the work since the newest checkpoint
    hung_hours: float  # billed, no progress
    billed_instance_hours: float
    completed_at: float | None  # None: the work was never done
    slowed_hours: float = 0.0  # billed, the share of the time a degraded host made no progress in (1 - 1/factor)
    findings: tuple[tuple[str, bool], ...] = ()  # a guard's notices of a slowdown or a divergence: (kind, right)

    @property
    def wasted_hours(self) -> float:
        return self.hung_hours + self.lost_work_hours + self.slowed_hours

    @property
    def wasted_gpu_hours(self) -> float:
        return self.wasted_hours * self.job.gpus

    @property
    def wasted_dollars(self) -> float:
        return self.wasted_hours * self.job.instance_count * self.job.price_per_instance_hour

    @property
    def completion_delay_hours(self) -> float | None:
        if self.completed_at is None:
            return None
        return max(0.0, self.completed_at - self.job.fault_free_completion_at)


class Strategy(Protocol):
    """What the report compares: the anchors and trainguard. `name` read-only (the anchors are frozen)."""

    @property
    def name(self) -> str: ...

    def run(self, trace: Trace) -> list[JobOutcome]: ...


def newest_checkpoint(progress_hours: float, every_minutes: float) -> float:
    """The progress of the newest checkpoint at `progress_hours` (0 when none was written yet)."""
    every = every_minutes / 60
    return math.floor(progress_hours / every + _EPSILON) * every


def attempt_name(job_name: str, attempt: int) -> str:
    return f"{job_name}/attempt-{attempt}"


class JobTimeline:
    """The mutable builder a strategy model writes one job's life into; `outcome()` freezes it."""

    def __init__(self, job: JobSpec, strategy: str) -> None:
        self.job, self.strategy = job, strategy
        self.now = job.submitted_at
        self.progress = 0.0  # of the running launch
        self.kept = 0.0  # the newest checkpoint's progress
        self.sync_stopped_after = math.inf  # the running launch's checkpoints stopped reaching S3 after this progress
        self.attempt = -1
        self.runtime_used = 0.0  # billed hours of the current SageMaker job, against MaxRuntime
        self.lost_work = 0.0
        self.hung = 0.0
        self.pace_factor = 1.0  # the running launch's steps take this many times as long (a degraded host)
        self.slowed = 0.0
        self.completed_at: float | None = None
        self._segments: list[Segment] = []
        self._detections: list[Detection] = []
        self._actions: list[Action] = []
        self._recoveries: list[Recovery] = []
        self._findings: list[tuple[str, bool]] = []
        self._awaiting_recovery: list[tuple[FaultKind, float]] = []

    @property
    def current(self) -> str:
        return attempt_name(self.job.name, self.attempt)

    @property
    def runtime_left(self) -> float:
        return self.job.max_runtime_hours - self.runtime_used

    def launch(self, *, new_job: bool) -> None:
        """A new launch from the newest checkpoint: a new SageMaker job, or SageMaker's own retry of one."""
        self.attempt += 1
        self.progress = self.kept
        self.sync_stopped_after = math.inf  # a new launch's checkpoint sync works again
        self.pace_factor = 1.0  # and it runs on new instances
        if new_job:
            self.runtime_used = 0.0

    def spend(self, state: State, hours: float) -> None:
        if hours <= _EPSILON:
            return
        self._segments.append(Segment(self.now, self.now + hours, state, self.attempt))
        self.now += hours
        if state in BILLED_STATES:
            self.runtime_used += hours
        if state is State.HUNG:
            self.hung += hours

    def wait_until(self, state: State, at: float) -> None:
        self.spend(state, at - self.now)

    def start(self) -> None:
        """The launch's startup; then training runs again, which ends every recovery under way."""
        self.spend(State.STARTING, self.job.startup_minutes / 60)
        self._recoveries += [Recovery(kind, struck, self.now) for kind, struck in self._awaiting_recovery]
        self._awaiting_recovery.clear()

    def hours_to(self, progress: float) -> float:
        """The hours of training it takes the running launch to reach `progress`, at its pace."""
        return (progress - self.progress) * self.pace_factor

    def train_to(self, progress: float) -> bool:
        """Train until `progress`; False when MaxRuntime stops the job first."""
        self.train_for(self.hours_to(progress))
        return self.progress >= progress - _EPSILON

    def train_for(self, hours: float) -> None:
        """Train for `hours`, or until MaxRuntime stops the job first."""
        hours = max(min(hours, max(self.runtime_left, 0.0)), 0.0)
        self.spend(State.TRAINING, hours)
        self.progress += hours / self.pace_factor
        self.slowed += hours * (1 - 1 / self.pace_factor)

    def hang_until(self, at: float) -> bool:
        """Hang, billed, until `at`; False when MaxRuntime stops the job first."""
        hours = min(at - self.now, max(self.runtime_left, 0.0))
        self.spend(State.HUNG, hours)
        return self.now >= at - _EPSILON

    def lose_work_since_checkpoint(self, *, no_checkpoint_after: float = math.inf) -> None:
        """The launch ended: its instances are gone, the work since the newest checkpoint with them.
        `no_checkpoint_after`: the progress after which none was written (a silent load writes none)."""
        last = min(self.progress, no_checkpoint_after, self.sync_stopped_after)
        written = newest_checkpoint(last, self.job.checkpoint_every_minutes)
        self.kept = max(self.kept, written)
        self.lost_work += self.progress - self.kept
        self.progress = self.kept

    def struck(self, kind: FaultKind, at: float) -> None:
        """A fault showed at `at`; its recovery ends when training runs again."""
        self._awaiting_recovery.append((kind, at))

    def detect(self, kind: FaultKind, struck_at: float, detector: str) -> None:
        self._detections.append(Detection(kind, struck_at, self.now, detector))

    def act(
        self,
        kind: ActionKind,
        actor: str,
        *,
        target: str | None = None,
        right: bool = True,
        succeeded: bool = True,
        note: str = "",
    ) -> None:
        self._actions.append(Action(kind, self.now, target or self.current, actor, right, succeeded, note))

    def found(self, kind: str, *, right: bool) -> None:
        """A guard told of a finding of `kind` ("slowdown", "diverged"); `right`: the launch had that fault."""
        self._findings.append((kind, right))

    def complete(self) -> None:
        self.completed_at = self.now

    def outcome(self) -> JobOutcome:
        billed = sum(s.hours for s in self._segments if s.state in BILLED_STATES)
        return JobOutcome(
            strategy=self.strategy,
            job=self.job,
            segments=tuple(self._segments),
            detections=tuple(self._detections),
            actions=tuple(self._actions),
            recoveries=tuple(self._recoveries),
            kept_progress_hours=self.kept if self.completed_at is None else self.job.work_hours,
            lost_work_hours=self.lost_work,
            hung_hours=self.hung,
            slowed_hours=self.slowed,
            findings=tuple(self._findings),
            billed_instance_hours=billed * self.job.instance_count,
            completed_at=self.completed_at,
        )
