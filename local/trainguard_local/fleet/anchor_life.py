"""One job under one anchor (anchors.py): launch after launch until the work is done, on the fleet model's
timeline (model.py), each fault played as its row of the fault table says."""

from __future__ import annotations

import math
import random
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from trainguard_local.fleet.anchor_rules import (
    AWS_BATCH,
    CAPACITY_REFUSAL_MINUTES,
    DEBUGGER_RULE,
    PARENT_RETRY_MINUTES,
    SAGEMAKER_RETRY,
    BatchRetries,
    RetryStrategy,
    StalledTrainingRule,
    parent_retries,
    starts_on_an_alternative,
)
from trainguard_local.fleet.life import End, How, JobLife, QuotaWall, Steps
from trainguard_local.fleet.model import ActionKind, JobOutcome, JobTimeline, State
from trainguard_local.fleet.person import PERSON, PersonOnCall, person_rng
from trainguard_local.simulation.clock import SimClock
from trainguard_local.simulation.fault_table import FAULT_TABLE, USER_ERROR_KINDS, Ending, FaultKind
from trainguard_local.simulation.kernel import Kernel, Park, Sleep
from trainguard_local.simulation.trace import Fault, JobSpec, Trace, sync_failure

_MAX_LAUNCHES = 100  # a guard against a model that never ends


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
        parameters: dict[str, Any] = {
            "person_median_response_hours": self.person.median_response_hours,
            "person_response_sigma": self.person.response_sigma,
            "person_longest_response_hours": self.person.longest_response_hours,
            "person_fix_hours": self.person.fix_hours,
        }
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

    def train(self, life: JobLife, progress: float, fault: Fault | None) -> Generator[Sleep | Park, Any, bool]:
        return (yield from life.train_until(progress))

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

    def after_end(self, life: JobLife, end: End) -> Steps:
        assert end.kind is not None or end.how is How.MAX_RUNTIME
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
            wall = QuotaWall(
                fault.quota_name, fault.quota_approval_hours, fault.launch_refusal or "", "after the quota increase"
            )
            life.quota_wall = wall
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


class _JobLife:
    """One job under one anchor: launch after launch until the work is done."""

    def __init__(self, anchor: AnchorStrategy, job: JobSpec, fault: Fault | None, rng: random.Random) -> None:
        self.anchor, self.job, self.rng = anchor, job, rng
        self.tl = JobTimeline(job, anchor.name)
        capacity = fault is not None and fault.kind is FaultKind.CAPACITY_ERROR
        self.capacity_refusals = self.capacity_refusals_in_fault = fault.repeats + 1 if fault and capacity else 0
        if starts_on_an_alternative(job, fault):
            self.capacity_refusals = self.capacity_refusals_in_fault = 0
        self.fault = None if capacity else fault  # pending until it strikes
        self.sagemaker_retries = 0
        self.batch_attempts = 1
        self.next_is_new_job = True

    def run(self) -> JobOutcome:
        for _ in range(_MAX_LAUNCHES):
            self.tl.launch(new_job=self.next_is_new_job)
            if self.next_is_new_job:
                self.sagemaker_retries = 0
            self.next_is_new_job = True
            self._run_launch()
            if self.tl.completed_at is not None:
                return self.tl.outcome()
        raise RuntimeError(f"{self.job.name}: no completion after {_MAX_LAUNCHES} launches")

    def _run_launch(self) -> None:
        tl = self.tl
        if self.capacity_refusals:
            self._refused_for_capacity()
            return
        tl.start()
        while True:
            fault = self.fault
            if not tl.train_to(fault.at_work_hours if fault else self.job.work_hours):
                self._stopped_at_max_runtime()
                return
            if fault is None:
                tl.complete()
                return
            self.fault = None
            if self._strike(fault):
                return

    def _strike(self, fault: Fault) -> bool:
        """The fault strikes, as its row of the fault table says; True when the launch ended."""
        row = FAULT_TABLE[fault.kind]
        if row.ending is Ending.TRAINS_ON and not row.silent:
            # Nobody notices that its checkpoints stopped reaching S3: the job trains on, and its hardware failure
            # strikes later (a fault of its own).
            self.tl.sync_stopped_after = fault.at_work_hours
            self.fault = sync_failure(fault)
            return False
        if row.ending is Ending.TRAINS_ON:
            return self._silent_but_healthy(fault)
        if row.ending is Ending.HANGS:
            self._hangs(fault.kind)
        elif row.ending is Ending.INTERRUPTED:
            self.tl.lose_work_since_checkpoint()  # the instances are reclaimed
            self.tl.wait_until(State.QUEUED, self.tl.now + fault.spot_wait_hours)  # Interrupted, until MaxWait
            self.tl.struck(fault.kind, self.tl.now)
            self._person_relaunches(fault.kind, self.tl.now)
        else:
            struck = self.tl.now  # an NCCL timeout strikes when its collective hangs, and fails at the timeout
            self.tl.hang_until(self.tl.now + fault.hung_minutes / 60)
            self._fails(fault, struck)
        return True

    def _refused_for_capacity(self) -> None:
        tl = self.tl
        tl.wait_until(State.QUEUED, tl.now + CAPACITY_REFUSAL_MINUTES / 60)
        if self.capacity_refusals == self.capacity_refusals_in_fault:  # the fault's recovery runs from the first
            tl.struck(FaultKind.CAPACITY_ERROR, tl.now)
        self.capacity_refusals -= 1
        if not self._retried_automatically(FaultKind.CAPACITY_ERROR, tl.now):
            self._person_relaunches(FaultKind.CAPACITY_ERROR, tl.now)

    def _retried_automatically(self, kind: FaultKind, struck: float) -> bool:
        """AWS Batch (the strategy) or the job's parent starts a new job by itself; True when one did."""
        batch, tl = self.anchor.batch, self.tl
        if batch is not None and kind is FaultKind.CAPACITY_ERROR:
            actor = AWS_BATCH  # "capacity-based retries don't consume your configured retry attempts"
        elif batch is not None and kind in batch.retried_kinds and self.batch_attempts < batch.attempts:
            self.batch_attempts += 1
            actor = AWS_BATCH
        elif parent_retries(self.job, kind):
            actor = self.job.owner
        else:
            return False
        tl.wait_until(State.FAILED, tl.now + PARENT_RETRY_MINUTES / 60)
        tl.detect(kind, struck, actor)
        tl.act(ActionKind.RELAUNCH, actor, note="a new job, by its own retry rules")
        return True

    def _fails(self, fault: Fault, struck: float) -> None:
        tl, retry = self.tl, self.anchor.retry_strategy
        tl.lose_work_since_checkpoint()
        tl.struck(fault.kind, struck)
        if (
            retry is not None
            and retry.retries(fault.kind)
            and self.sagemaker_retries < retry.maximum_retry_attempts
            and tl.runtime_left > self.job.startup_minutes / 60
        ):
            self.sagemaker_retries += 1
            tl.detect(fault.kind, struck, SAGEMAKER_RETRY)
            tl.act(ActionKind.RELAUNCH, SAGEMAKER_RETRY, note="RetryStrategy: the same job starts again")
            self.next_is_new_job = False
        elif fault.kind is FaultKind.QUOTA_WALL:
            self._quota_wall(fault, struck)
        elif self._retried_automatically(fault.kind, struck):
            pass
        else:
            self._person_relaunches(fault.kind, tl.now, struck_at=struck, fix=fault.kind in USER_ERROR_KINDS)

    def _hangs(self, kind: FaultKind) -> None:
        tl, rule = self.tl, self.anchor.stall_rule
        struck = tl.now
        tl.struck(kind, struck)
        response = self.anchor.person.response_hours(self.rng)
        rule_fires = struck + rule.threshold_hours if rule is not None and rule.can_stop(self.job) else math.inf
        if rule_fires < struck + response and tl.hang_until(rule_fires):
            tl.detect(kind, struck, DEBUGGER_RULE)
            tl.act(ActionKind.STOP, DEBUGGER_RULE)
            tl.lose_work_since_checkpoint()
            self._person_relaunches(None, tl.now, response=response)
            return
        if tl.hang_until(struck + response):
            tl.act(ActionKind.STOP, PERSON)
        tl.lose_work_since_checkpoint()  # stopped by the person, or by MaxRuntime before
        self._person_relaunches(kind, struck, response=response)

    def _silent_but_healthy(self, fault: Fault) -> bool:
        tl, rule = self.tl, self.anchor.stall_rule
        if rule is None or not rule.can_stop(self.job) or fault.silent_minutes * 60 <= rule.threshold_seconds:
            return False  # the silence passes, training goes on
        if not tl.train_to(tl.progress + rule.threshold_hours):
            self._stopped_at_max_runtime()
            return True
        tl.detect(fault.kind, tl.now - rule.threshold_hours, DEBUGGER_RULE)
        tl.act(ActionKind.STOP, DEBUGGER_RULE, right=False, note="a healthy job, silent for a while")
        tl.lose_work_since_checkpoint(no_checkpoint_after=fault.at_work_hours)  # none is written while silent
        self._person_relaunches(None, tl.now)
        return True

    def _quota_wall(self, fault: Fault, struck: float) -> None:
        tl, person = self.tl, self.anchor.person
        tl.wait_until(State.WAITING_FOR_PERSON, tl.now + person.response_hours(self.rng))
        tl.detect(fault.kind, struck, PERSON)
        tl.act(ActionKind.RELAUNCH, PERSON, succeeded=False, note=fault.launch_refusal or "")
        tl.act(ActionKind.QUOTA_REQUEST, PERSON, target=fault.quota_name)
        tl.wait_until(State.WAITING_FOR_QUOTA, tl.now + fault.quota_approval_hours)
        tl.wait_until(State.WAITING_FOR_PERSON, tl.now + person.response_hours(self.rng))
        tl.act(ActionKind.RELAUNCH, PERSON, note="after the quota increase")

    def _stopped_at_max_runtime(self) -> None:
        self.tl.lose_work_since_checkpoint()
        self._person_relaunches(None, self.tl.now)

    def _person_relaunches(
        self,
        kind: FaultKind | None,
        since: float,
        *,
        struck_at: float | None = None,
        fix: bool = False,
        response: float | None = None,
    ) -> None:
        """The person notices, a response time after `since`, what happened then, and relaunches. `kind`:
        the fault they detect (struck at `struck_at`, default `since`); None when it was detected before."""
        tl, person = self.tl, self.anchor.person
        response = person.response_hours(self.rng) if response is None else response
        tl.wait_until(State.WAITING_FOR_PERSON, since + response)
        if kind is not None:
            tl.detect(kind, since if struck_at is None else struck_at, PERSON)
        if fix:
            tl.wait_until(State.WAITING_FOR_PERSON, tl.now + person.fix_hours)
        tl.act(ActionKind.RELAUNCH, PERSON, note="after a fix" if fix else "from the newest checkpoint")
