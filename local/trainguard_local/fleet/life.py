"""One trace job's life on the kernel (simulation/kernel.py), launch after launch until its work is done, in
every strategy: the steps they share, written once, and a strategy's own answers (`LifeAnswers`) where they
differ. The fleet model's `JobTimeline` (model.py) records it.

Shared: a capacity error refuses launches while the trace's repeats last; a launch starts, trains to its
fault's progress (or to the end of the work) and strikes as the fault's row of the fault table says; a failure
loses the work since the newest checkpoint; a spot job waits Interrupted until MaxWait; MaxRuntime stops a
launch that runs out of it; a person on call relaunches a response time later (person.py), after a fix for a
user's error and after a quota increase when a quota wall stands; a parent's retry starts a new job a minute
later. Time moves one way only: the life sleeps on the kernel to a moment, then the timeline spends up to it.
"""

from __future__ import annotations

import random
from collections.abc import Generator
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from trainguard_local.fleet.model import ActionKind, JobTimeline, State
from trainguard_local.fleet.person import PERSON, PersonOnCall
from trainguard_local.simulation.fault_table import FAULT_TABLE, Ending, FaultKind
from trainguard_local.simulation.job_spec import Fault, JobSpec
from trainguard_local.simulation.kernel import Kernel, Park, Sleep
from trainguard_local.simulation.later_faults import sync_failure

MAX_LAUNCHES = 100  # a guard against a model that never ends
CAPACITY_REFUSAL_MINUTES = 5.0  # a launch refused for capacity fails after this long, without instances (assumption)
PARENT_RETRY_MINUTES = 1.0  # a parent's retry starts the new job this long after the failure (assumption)
Steps = Generator[Sleep | Park, Any, None]


class How(Enum):
    """How a launch ended."""

    REFUSED = "refused for capacity, without instances"
    QUOTA_REFUSED = "refused by a quota at CreateTrainingJob: no job was created"
    FAILED = "failed"
    INTERRUPTED = "Interrupted until MaxWait, then stopped"
    MAX_RUNTIME = "stopped at MaxRuntime"


class Trained(Enum):
    """How a launch's training to a progress ended."""

    REACHED = "reached it"
    MAX_RUNTIME = "stopped by MaxRuntime first"
    ENDED = "ended on the way, its end played by the strategy (a stop in a healthy silent phase)"


@dataclass(frozen=True)
class End:
    how: How
    kind: FaultKind | None  # the fault it came from (None: MaxRuntime)
    struck: float  # when the fault showed
    fault: Fault | None = None  # the trace's fault, for a failure


@dataclass(frozen=True)
class QuotaWall:
    """A quota wall that stands: the person's relaunch is refused until they have had the quota raised."""

    quota: str | None  # None: the relaunch's own name
    approval_hours: float
    refusal: str  # the refused relaunch's note
    relaunch: str | None  # the relaunch's note after the increase (None: the note it has without the wall)


def stops_checkpoint_sync(kind: FaultKind) -> bool:
    """A fault after which the job trains on, not silent, and its checkpoints stop reaching S3."""
    row = FAULT_TABLE[kind]
    return row.ending is Ending.TRAINS_ON and not row.silent


class LifeAnswers(Protocol):
    """What a strategy decides in a job's life, one object per job (it holds the strategy's per-job state)."""

    def launched(self, life: JobLife, new_job: bool) -> None: ...

    def finds_capacity(self, life: JobLife) -> bool: ...

    def started(self, life: JobLife) -> None: ...

    def train(self, life: JobLife, progress: float, fault: Fault | None) -> Generator[Sleep | Park, Any, Trained]: ...

    def sync_stopped(self, life: JobLife, fault: Fault) -> Generator[Sleep | Park, Any, bool]: ...

    def silence(self, life: JobLife, fault: Fault) -> Generator[Sleep | Park, Any, bool]: ...

    def hang(self, life: JobLife, fault: Fault) -> Steps: ...

    def finding(self, life: JobLife, fault: Fault) -> Generator[Sleep | Park, Any, bool]: ...

    def ends(self, life: JobLife, how: How) -> None: ...

    def after_end(self, life: JobLife, end: End) -> Steps: ...


class JobLife:
    """One job under one strategy: `process` is its process on the kernel."""

    def __init__(
        self,
        job: JobSpec,
        fault: Fault | None,
        tl: JobTimeline,
        kernel: Kernel,
        person: PersonOnCall,
        rng: random.Random,
        answers: LifeAnswers,
    ) -> None:
        self.job, self.tl, self.kernel, self.person, self.rng, self.answers = job, tl, kernel, person, rng, answers
        capacity = fault is not None and fault.kind is FaultKind.CAPACITY_ERROR
        self.capacity_fault = fault if capacity else None
        self.capacity_refusals = self.capacity_refusals_in_fault = fault.repeats + 1 if fault and capacity else 0
        # a quota wall at work 0 stands before the first launch: its CreateTrainingJob is refused
        walled = fault is not None and fault.kind is FaultKind.QUOTA_WALL and fault.at_work_hours == 0.0
        self.first_launch_refusal = fault if walled else None
        self.fault = None if capacity or walled else fault  # pending until it strikes
        self.next_is_new_job = True  # False: SageMaker's own retry of the same job
        self.quota_wall: QuotaWall | None = None
        self.process = self._run()

    def _run(self) -> Steps:
        for _ in range(MAX_LAUNCHES):
            new_job, self.next_is_new_job = self.next_is_new_job, True
            self.tl.launch(new_job=new_job)
            self.answers.launched(self, new_job)
            yield from self._run_launch()
            if self.tl.completed_at is not None:
                return
        raise RuntimeError(f"{self.job.name}: no completion after {MAX_LAUNCHES} launches")

    def _run_launch(self) -> Steps:
        tl = self.tl
        if (refusal := self.first_launch_refusal) is not None:
            self.first_launch_refusal = None
            tl.struck(refusal.kind, tl.now)
            yield from self.answers.after_end(self, End(How.QUOTA_REFUSED, refusal.kind, tl.now, refusal))
            return
        if self.capacity_refusals and self.answers.finds_capacity(self):
            self.capacity_refusals = 0
        if self.capacity_refusals:
            yield from self._refused_for_capacity()
            return
        yield Sleep(tl.now + self.job.startup_minutes / 60)
        tl.start()
        self.answers.started(self)
        while True:
            fault = self.fault
            trained = yield from self.answers.train(self, fault.at_work_hours if fault else self.job.work_hours, fault)
            if trained is Trained.MAX_RUNTIME:
                yield from self.stopped_at_max_runtime()
            if trained is not Trained.REACHED:
                return
            if fault is None:
                tl.complete()
                return
            self.fault = None
            if (yield from self._strike(fault)):
                return

    def _strike(self, fault: Fault) -> Generator[Sleep | Park, Any, bool]:
        """The fault strikes, as its row of the fault table says; True when the launch ended."""
        row = FAULT_TABLE[fault.kind]
        if stops_checkpoint_sync(fault.kind):
            self.tl.sync_stopped_after = fault.at_work_hours
            self.fault = sync_failure(fault)  # its hardware failure strikes later (a fault of its own)
            return (yield from self.answers.sync_stopped(self, fault))
        if row.ending is Ending.TRAINS_ON:
            return (yield from self.answers.silence(self, fault))
        if row.ending in (Ending.SLOWS, Ending.DIVERGES):
            self.tl.struck(fault.kind, self.tl.now)  # recovered when a launch trains again, at its pace
            if row.ending is Ending.SLOWS:
                self.tl.pace_factor = fault.slowdown_factor
            return (yield from self.answers.finding(self, fault))
        if row.ending in (Ending.HANGS, Ending.FAILS_AFTER_HANG):
            yield from self.answers.hang(self, fault)
        elif row.ending is Ending.INTERRUPTED:
            yield from self._spot_interruption(fault)
        else:
            yield from self.fails(fault, self.tl.now)
        return True

    # ---- time on the kernel and the timeline --------------------------------------------------------------

    def wait(self, state: State, at: float) -> Steps:
        """Wait in `state` until `at`: the kernel resumes the life then (or now, if that has passed), and the
        timeline spends to the very float it was given, as the anchors' arithmetic always did."""
        yield Sleep(at)
        self.tl.wait_until(state, at)

    def train_until(self, progress: float) -> Generator[Sleep | Park, Any, bool]:
        """Train to `progress` (hours of work), or until MaxRuntime stops the launch first (False)."""
        yield from self._billed_for(self.tl.hours_to(progress))
        return self.tl.train_to(progress)

    def hang_until(self, at: float) -> Generator[Sleep | Park, Any, bool]:
        """Hang, billed, until `at`, or until MaxRuntime stops the launch first (False)."""
        yield from self._billed_for(at - self.tl.now)
        return self.tl.hang_until(at)

    def _billed_for(self, hours: float) -> Steps:
        """Sleep through `hours` of the launch's billed time, or to MaxRuntime if that comes first (the sum the
        timeline's train_to and hang_until make too)."""
        hours = min(hours, max(self.tl.runtime_left, 0.0))
        if hours > 0:
            yield Sleep(self.tl.now + hours)

    # ---- the launch's end ---------------------------------------------------------------------------------

    def _refused_for_capacity(self) -> Steps:
        tl = self.tl
        yield from self.wait(State.QUEUED, tl.now + CAPACITY_REFUSAL_MINUTES / 60)
        if self.capacity_refusals == self.capacity_refusals_in_fault:  # the fault's recovery runs from the first
            tl.struck(FaultKind.CAPACITY_ERROR, tl.now)
        self.capacity_refusals -= 1
        yield from self.answers.after_end(self, End(How.REFUSED, FaultKind.CAPACITY_ERROR, tl.now))

    def fails(self, fault: Fault, struck: float) -> Steps:
        self.answers.ends(self, How.FAILED)
        self.tl.lose_work_since_checkpoint()
        self.tl.struck(fault.kind, struck)
        yield from self.answers.after_end(self, End(How.FAILED, fault.kind, struck, fault))

    def _spot_interruption(self, fault: Fault) -> Steps:
        tl = self.tl
        self.answers.ends(self, How.INTERRUPTED)
        tl.lose_work_since_checkpoint()  # the instances are reclaimed
        yield from self.wait(State.QUEUED, tl.now + fault.spot_wait_hours)  # Interrupted, until MaxWait
        tl.struck(fault.kind, tl.now)
        yield from self.answers.after_end(self, End(How.INTERRUPTED, fault.kind, tl.now))

    def stopped_at_max_runtime(self) -> Steps:
        self.answers.ends(self, How.MAX_RUNTIME)
        self.tl.lose_work_since_checkpoint()
        yield from self.answers.after_end(self, End(How.MAX_RUNTIME, None, self.tl.now))

    # ---- who relaunches -----------------------------------------------------------------------------------

    def parent_relaunches(self, kind: FaultKind, struck: float, actor: str, *, since: float | None = None) -> Steps:
        """The job's parent (a pipeline's retry policy, a Batch queue) starts a new job by itself, a minute after
        `since` (default: the timeline's now)."""
        since = self.tl.now if since is None else since
        yield from self.wait(State.FAILED, since + PARENT_RETRY_MINUTES / 60)
        self.tl.detect(kind, struck, actor)
        self.tl.act(ActionKind.RELAUNCH, actor, note="a new job, by its own retry rules")

    def hang_left_to_the_person(self, kind: FaultKind, struck: float, response: float) -> Steps:
        """The hang bills until the person stops it, a response time after it struck, or until MaxRuntime does
        if sooner; then the person relaunches."""
        if (yield from self.hang_until(struck + response)):
            self.tl.act(ActionKind.STOP, PERSON)
        self.tl.lose_work_since_checkpoint()  # stopped by the person, or by MaxRuntime before
        yield from self.person_relaunches(kind, struck, response=response)

    def diverged_left_to_the_person(self, fault: Fault, response: float) -> Steps:
        """The run trains on, its loss NaN, until the person stops it a response time after it diverged, unless its
        work runs out first (it completes, worthless) or MaxRuntime stops it; they fix it and relaunch from the
        newest checkpoint written before the divergence."""
        tl, struck = self.tl, self.tl.now
        noticed = struck + response
        target = min(self.job.work_hours, tl.progress + (noticed - tl.now) / tl.pace_factor)
        if (yield from self.train_until(target)) and target < self.job.work_hours - 1e-9:
            tl.act(ActionKind.STOP, PERSON, note="its loss is NaN")
        tl.lose_work_since_checkpoint(no_checkpoint_after=fault.at_work_hours)
        yield from self.person_relaunches(fault.kind, struck, fix=True, response=max(noticed, tl.now) - struck)

    def person_relaunches(
        self,
        kind: FaultKind | None,
        since: float,
        *,
        struck_at: float | None = None,
        fix: bool = False,
        response: float | None = None,
    ) -> Steps:
        """The person notices, a response time after `since`, what happened then (the fault `kind`, struck at
        `struck_at`, default `since`; None when they were told or it was detected before), fixes a user's
        error, meets a standing quota wall, and relaunches from the newest checkpoint."""
        tl = self.tl
        response = self.person.response_hours(self.rng) if response is None else response
        yield from self.wait(State.WAITING_FOR_PERSON, since + response)
        if kind is not None:
            tl.detect(kind, since if struck_at is None else struck_at, PERSON)
        if fix:
            yield from self.wait(State.WAITING_FOR_PERSON, tl.now + self.person.fix_hours)
        note = "after a fix" if fix else "from the newest checkpoint"
        if self.quota_wall is not None:
            wall, self.quota_wall = self.quota_wall, None
            tl.act(ActionKind.RELAUNCH, PERSON, succeeded=False, note=wall.refusal)
            tl.act(ActionKind.QUOTA_REQUEST, PERSON, target=wall.quota)
            yield from self.wait(State.WAITING_FOR_QUOTA, tl.now + wall.approval_hours)
            yield from self.wait(State.WAITING_FOR_PERSON, tl.now + self.person.response_hours(self.rng))
            note = wall.relaunch or note
        tl.act(ActionKind.RELAUNCH, PERSON, note=note)
