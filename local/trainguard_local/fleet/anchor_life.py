"""An anchor (anchors.py) and what it decides in a job's life: the life itself, launch after launch until the
work is done, is the one every strategy plays (life.py); an anchor answers its questions with SageMaker's
RetryStrategy, AWS Batch's and a parent's retries, Debugger's StalledTrainingRule and InstancePreferences, and
leaves the rest to the person on call."""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from trainguard_local.fleet.anchor_rules import (
    AWS_BATCH,
    DEBUGGER_RULE,
    SAGEMAKER_RETRY,
    BatchRetries,
    RetryStrategy,
    StalledTrainingRule,
    parent_retries,
    starts_on_an_alternative,
)
from trainguard_local.fleet.life import End, How, JobLife, QuotaWall, Steps, Trained
from trainguard_local.fleet.model import ActionKind, JobOutcome, JobTimeline
from trainguard_local.fleet.person import PersonOnCall, person_rng
from trainguard_local.simulation.clock import SimClock
from trainguard_local.simulation.fault_table import FAULT_TABLE, USER_ERROR_KINDS, Ending, FaultKind
from trainguard_local.simulation.kernel import Kernel, Park, Sleep
from trainguard_local.simulation.trace import Fault, JobSpec, Trace


@dataclass(frozen=True)
class AnchorStrategy:
    name: str
    model_of: str
    sources: tuple[str, ...]
    person: PersonOnCall = field(default_factory=PersonOnCall)
    retry_strategy: RetryStrategy | None = None
    stall_rule: StalledTrainingRule | None = None
    batch: BatchRetries | None = None

    def describe(self) -> dict[str, Any]:
        """What the report says about this strategy: that it is a model, of what, from which sources."""
        parameters: dict[str, Any] = self.person.parameters()
        if self.retry_strategy is not None:
            parameters["maximum_retry_attempts"] = self.retry_strategy.maximum_retry_attempts
        if self.stall_rule is not None:
            parameters["threshold_seconds"] = self.stall_rule.threshold_seconds
        if self.batch is not None:
            parameters["retry_attempts"] = self.batch.attempts
            parameters["retried_on"] = sorted(kind.value for kind in self.batch.retried_kinds)
        return {"model": True, "model_of": self.model_of, "sources": list(self.sources), "parameters": parameters}

    def run(self, trace: Trace) -> list[JobOutcome]:
        """Every job's life (life.py) on one kernel; the jobs share nothing, so their order does not matter."""
        kernel = Kernel(SimClock())
        timelines = []
        for job in trace.jobs:
            tl = JobTimeline(job, self.name)
            rng = person_rng(trace.seed, job.name)
            life = JobLife(job, trace.fault_of(job.name), tl, kernel, self.person, rng, AnchorAnswers(self, job))
            kernel.spawn(life.process, job.submitted_at, acting=job.name)
            timelines.append(tl)
        kernel.run()
        return [tl.outcome() for tl in timelines]


class AnchorAnswers:
    """What an anchor decides in one job's life: SageMaker's RetryStrategy, AWS Batch's and the parent's retries,
    Debugger's StalledTrainingRule, InstancePreferences at launch; the person for the rest."""

    def __init__(self, anchor: AnchorStrategy, job: JobSpec) -> None:
        self.anchor, self.job = anchor, job
        self.sagemaker_retries = 0  # of the current SageMaker job
        self.batch_attempts = 1

    def launched(self, life: JobLife, new_job: bool) -> None:
        if new_job:
            self.sagemaker_retries = 0

    def finds_capacity(self, life: JobLife) -> bool:
        return starts_on_an_alternative(self.job, life.capacity_fault)

    def started(self, life: JobLife) -> None:
        """Nothing to drive: the timeline is the whole job."""

    def train(self, life: JobLife, progress: float, fault: Fault | None) -> Generator[Sleep | Park, Any, Trained]:
        return Trained.REACHED if (yield from life.train_until(progress)) else Trained.MAX_RUNTIME

    def sync_stopped(self, life: JobLife, fault: Fault) -> Generator[Sleep | Park, Any, bool]:
        """Nobody notices that its checkpoints stopped reaching S3: the job trains on."""
        yield from ()
        return False

    def silence(self, life: JobLife, fault: Fault) -> Generator[Sleep | Park, Any, bool]:
        """A healthy silence: the Debugger rule stops the job when it lasts past its threshold (a wrong stop)."""
        tl, rule = life.tl, self.anchor.stall_rule
        if rule is None or not rule.can_stop(self.job) or fault.silent_minutes * 60 <= rule.threshold_seconds:
            return False  # the silence passes, training goes on
        if not (yield from life.train_until(tl.progress + rule.threshold_hours)):
            yield from life.stopped_at_max_runtime()
            return True
        tl.detect(fault.kind, tl.now - rule.threshold_hours, DEBUGGER_RULE)
        tl.act(ActionKind.STOP, DEBUGGER_RULE, right=False, note="a healthy job, silent for a while")
        tl.lose_work_since_checkpoint(no_checkpoint_after=fault.at_work_hours)  # none is written while silent
        yield from life.person_relaunches(None, tl.now)
        return True

    def hang(self, life: JobLife, fault: Fault) -> Steps:
        tl, rule = life.tl, self.anchor.stall_rule
        struck = tl.now
        if FAULT_TABLE[fault.kind].ending is Ending.FAILS_AFTER_HANG:
            # An NCCL timeout strikes when its collective hangs, and fails at the timeout. Kept as it was: a hang
            # that MaxRuntime cuts short still "fails" (hang_until's answer is not read), so a retry may follow.
            yield from life.hang_until(tl.now + fault.hung_minutes / 60)
            yield from life.fails(fault, struck)
            return
        tl.struck(fault.kind, struck)
        response = life.person.response_hours(life.rng)  # drawn at the strike, even when the rule fires first
        rule_fires = struck + rule.threshold_hours if rule is not None and rule.can_stop(self.job) else math.inf
        if rule_fires < struck + response and (yield from life.hang_until(rule_fires)):
            tl.detect(fault.kind, struck, DEBUGGER_RULE)
            tl.act(ActionKind.STOP, DEBUGGER_RULE)
            tl.lose_work_since_checkpoint()
            yield from life.person_relaunches(None, tl.now, response=response)
            return
        yield from life.hang_left_to_the_person(fault.kind, struck, response)

    def finding(self, life: JobLife, fault: Fault) -> Generator[Sleep | Park, Any, bool]:
        """Nobody notices a slowdown (nothing fails, nothing is silent; Debugger's rules do not time steps): the
        launch trains on at its pace to its end. The person notices a NaN loss a response time after it, as they
        notice a hang (person.py). Debugger's loss rules are not modelled."""
        if fault.kind is FaultKind.DEGRADED_HOST:
            return False
        yield from life.diverged_left_to_the_person(fault, life.person.response_hours(life.rng))
        return True

    def ends(self, life: JobLife, how: How) -> None:
        """Nothing to write: the timeline keeps the newest checkpoint."""

    def after_end(self, life: JobLife, end: End) -> Steps:
        assert end.kind is not None or end.how is How.MAX_RUNTIME
        if end.how is How.QUOTA_REFUSED:  # the user's first launch: they meet the wall (no anchor requests quotas)
            assert end.fault is not None
            life.quota_wall = person_meets(end.fault)
            yield from life.person_relaunches(end.kind, life.tl.now)
            return
        if end.how is How.FAILED:
            assert end.fault is not None
            yield from self._after_failure(life, end.fault, end.struck)
            return
        if end.kind is FaultKind.CAPACITY_ERROR and (yield from self._retried_automatically(life, end)):
            return
        yield from life.person_relaunches(end.kind, life.tl.now)  # spot, MaxRuntime, capacity left to the person

    def _after_failure(self, life: JobLife, fault: Fault, struck: float) -> Steps:
        tl, retry = life.tl, self.anchor.retry_strategy
        if (
            retry is not None
            and retry.retries(fault.kind)
            and self.sagemaker_retries < retry.maximum_retry_attempts
            and tl.runtime_left > self.job.startup_minutes / 60
        ):
            self.sagemaker_retries += 1
            tl.detect(fault.kind, struck, SAGEMAKER_RETRY)
            tl.act(ActionKind.RELAUNCH, SAGEMAKER_RETRY, note="RetryStrategy: the same job starts again")
            life.next_is_new_job = False
            return
        if fault.kind is FaultKind.QUOTA_WALL:  # the person meets it (no anchor requests quotas)
            life.quota_wall = person_meets(fault)
        elif (yield from self._retried_automatically(life, End(How.FAILED, fault.kind, struck))):
            return
        yield from life.person_relaunches(fault.kind, tl.now, struck_at=struck, fix=fault.kind in USER_ERROR_KINDS)

    def _retried_automatically(self, life: JobLife, end: End) -> Generator[Sleep | Park, Any, bool]:
        """AWS Batch (the strategy) or the job's parent starts a new job by itself; True when one did."""
        batch, kind = self.anchor.batch, end.kind
        assert kind is not None
        if batch is not None and kind is FaultKind.CAPACITY_ERROR:
            actor = AWS_BATCH  # "capacity-based retries don't consume your configured retry attempts"
        elif batch is not None and kind in batch.retried_kinds and self.batch_attempts < batch.attempts:
            self.batch_attempts += 1
            actor = AWS_BATCH
        elif parent_retries(self.job, kind):
            actor = self.job.owner
        else:
            return False
        yield from life.parent_relaunches(kind, end.struck, actor)
        return True


def person_meets(wall: Fault) -> QuotaWall:
    """The trace's quota wall, as the person meets it: their launch refused, their request, its approval."""
    return QuotaWall(wall.quota_name, wall.quota_approval_hours, wall.launch_refusal or "", "after the quota increase")
