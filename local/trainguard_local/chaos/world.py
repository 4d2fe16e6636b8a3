"""The fleet's side of the replay: the users who launch jobs and SageMaker running them, on the stand-in.

The jobs and their faults come from the fleet trace (simulation/trace.py); every job of a lineage is a
`JobTruth`, the ground truth the audit judges trainguard against. What trainguard does is never modelled:
its relaunches and launches appear here when their state-change events arrive, and are then run.

Simplifications, chosen for a short replay: instance types are mapped to two types the stand-in's account
does not limit (a GPU count like the trace's), at most 8 hosts; a quota-wall job is launched on a type
whose quota is 0 in the stand-in's account; a relaunch trains for 20-60 minutes; a spot job waits at most
an hour before MaxWait.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.kernel import Kernel
from trainguard_local.simulation.trace import Fault, JobSpec
from trainguard_local.stand_in.fleet_side import FleetSide, training_request, with_spot
from trainguard_local.stand_in.local_aws import LocalAWS

STARTUP = timedelta(minutes=10)
CAPACITY_REFUSAL = timedelta(minutes=5)
PERSON_STOPS_HUNG_AFTER = timedelta(hours=2)
SETTLE_STOP = (1, 5)  # minutes from Stopping to Stopped
MAX_HOSTS = 8
WALL_TYPES = ("ml.p4d.24xlarge", "ml.trn1.32xlarge")  # quota 0 in the stand-in's account (stand_in/local_aws.py)
REPEAT_FAILURE_CHANCE = 0.4  # a relaunch of an internal/hardware/NCCL failure fails again the same way
REPEATING = frozenset({FaultKind.INTERNAL_ERROR, FaultKind.HARDWARE_FAULT, FaultKind.NCCL_TIMEOUT})
FAILURE_KINDS = REPEATING | {FaultKind.USER_CODE_ERROR, FaultKind.OUT_OF_MEMORY}
HEALTHY = "healthy"


@dataclass
class JobTruth:
    name: str
    root: str
    attempt: int  # 0: the user's launch; n: trainguard's n-th relaunch (or its launch after a quota wall)
    kind: str  # the FaultKind value this job meets, or HEALTHY
    instance_type: str
    hosts: int
    opted_in: bool
    stops_allowed: bool  # opted in, not in dry run, and not a parent's (a pipeline's, a Batch queue's) job
    max_retries: int
    failure_reason: str = ""
    created_at: datetime | None = None
    training_since: datetime | None = None
    hung_since: datetime | None = None
    silent: tuple[datetime, datetime] | None = None  # a healthy silence (slow but healthy)
    silent_gpus_idle: bool = False
    gpus_idle_when_hung: bool = False
    stop_requested_at: datetime | None = None
    stopped_by: str = ""  # "trainguard", "person" or "spot"
    end_status: str = ""
    retry_of: str = ""
    launched: bool = True  # False for a user's launch refused by a quota
    owned: bool = False  # a parent launched it (domain/ownership.py): never acted on, whatever its tags

    def running_at(self, moment: datetime) -> bool:
        return self.training_since is not None and moment >= self.training_since and not self.end_status


@dataclass
class Fleet:
    jobs: dict[str, JobTruth] = field(default_factory=dict)
    faults: dict[str, Fault] = field(default_factory=dict)  # root -> its trace fault
    walls: dict[str, str] = field(default_factory=dict)  # walled root -> the quota that refused it


class World:
    def __init__(self, aws: LocalAWS, schedule: Kernel, seed: int, config_defaults: Any) -> None:
        self.aws = aws
        self.schedule = schedule
        self.seed = seed
        self.fleet = Fleet()
        self.defaults = config_defaults
        self.side = FleetSide(aws.client)  # the jobs' launches and writes (evidence.py writes their logs and GPUs)
        self._sagemaker = self.side.client("sagemaker")
        self._quota_decided: set[str] = set()
        # evidence.py plans the alarm hints: when a job starts training, and when it hangs
        self.on_training: list[Callable[[JobTruth], None]] = []
        self.on_hang: list[Callable[[JobTruth], None]] = []

    # ---- users launch -----------------------------------------------------------------------------

    def plan_launch(self, spec: JobSpec, fault: Fault | None, at: datetime, guarded: bool = False) -> None:
        """The user launches `spec` at `at`; `guarded`: opted in, with every action and the default limit."""
        if fault is not None:
            self.fleet.faults[spec.name] = fault
        self.schedule.at(at, lambda: self._user_launch(spec, fault, guarded))

    def _user_launch(self, spec: JobSpec, fault: Fault | None, guarded: bool) -> None:
        """The user's CreateTrainingJob, with a checkpoint already under its prefix (a warm start). Tags: 90%
        of jobs opted in, 5% of those in dry run; max-retries absent (the default), 2 or 1."""
        rng = random.Random(f"{self.seed}-{spec.name}")
        enabled = guarded or rng.random() < 0.9
        dry_run = not guarded and enabled and rng.random() < 0.05
        max_retries_tag = "" if guarded else rng.choices(["", "2", "1"], weights=[60, 25, 15])[0]
        tags = {"team": "chaos"}
        if spec.owner == "pipelines":  # a pipeline step's job (an AWS Batch one is named AWSBatch...): trainguard's
            tags["sagemaker:pipeline-execution-arn"] = (
                f"arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/{spec.name}"
            )
        if enabled:
            tags["trainguard:enabled"] = "true"
        if dry_run:
            tags["trainguard:actions"] = "notify"
        if max_retries_tag:
            tags["trainguard:max-retries"] = max_retries_tag
        kind = fault.kind if fault else HEALTHY
        walled = kind == FaultKind.QUOTA_WALL
        instance_type = WALL_TYPES[len(self.fleet.walls) % 2] if walled else _unlimited_type(spec.gpus_per_instance)
        truth = JobTruth(
            name=spec.name,
            root=spec.name,
            attempt=0,
            kind=kind,
            instance_type=instance_type,
            hosts=min(spec.instance_count, MAX_HOSTS),
            opted_in=enabled,
            stops_allowed=enabled and not dry_run and not spec.owner,
            max_retries=int(max_retries_tag or self.defaults.default_max_retries),
            failure_reason=(fault.failure_reason or "") if fault else "",
            owned=bool(spec.owner),
        )
        self.fleet.jobs[spec.name] = truth
        request = training_request(spec.name, instance_type, truth.hosts, tags)
        if spec.spot:
            with_spot(request, extra_wait_seconds=0)
        self.side.write_checkpoint(request["CheckpointConfig"]["S3Uri"], "step-000000/model.pt", b"w")
        if walled:
            self._script_quota_review(instance_type, rng)
        refused = self.side.launch(request)
        if refused:  # the quota wall: CloudTrail tells trainguard
            truth.launched = False
            self.fleet.walls[spec.name] = f"{instance_type} for training job usage"
            if not refused.startswith("ResourceLimitExceeded:"):
                raise RuntimeError(f"{spec.name}: the launch was refused: {refused}")
            return
        truth.created_at = self.schedule.clock()
        self._run(truth, fault, timedelta(hours=spec.work_hours))

    def _script_quota_review(self, instance_type: str, rng: random.Random) -> None:
        quota = f"{instance_type} for training job usage"
        if quota not in self._quota_decided:
            self._quota_decided.add(quota)
            self.aws.quotas.decide(quota, "APPROVED", after=timedelta(hours=rng.uniform(1.0, 3.0)))

    # ---- trainguard's launches, as their events arrive ---------------------------------------------------

    def observe(self, event: dict[str, Any]) -> None:
        if event.get("detail-type") != "SageMaker Training Job State Change":
            return
        detail = event["detail"]
        name, status = detail["TrainingJobName"], detail["TrainingJobStatus"]
        known = self.fleet.jobs.get(name)
        if known is None or not known.launched:
            self._discover(name, detail.get("Tags") or {})
        truth = self.fleet.jobs[name]
        if status == "Stopping" and truth.stop_requested_at is None:
            truth.stop_requested_at = self.schedule.clock()
            truth.stopped_by = truth.stopped_by or "trainguard"
            if detail.get("SecondaryStatus") == "Stopping" and truth.stopped_by != "spot":
                minutes = random.Random(f"{self.seed}-settle-{name}").randint(*SETTLE_STOP)
                self.schedule.after(timedelta(minutes=minutes), lambda: self._settle(truth))

    def _discover(self, name: str, tags: dict[str, str]) -> None:
        """A job trainguard created: a relaunch (tag retry-of) or a launch after a quota wall (blocked-launch)."""
        retry_of = tags.get("trainguard:retry-of", "")
        walled = self.fleet.jobs.get(tags.get("trainguard:blocked-launch", ""))
        rng = random.Random(f"{self.seed}-{name}")
        if walled is not None and walled.name == name and not walled.launched:  # the user's launch, let through
            walled.launched, walled.kind, walled.created_at = True, HEALTHY, self.schedule.clock()
            work = timedelta(minutes=rng.uniform(20, 60))
            self.schedule.after(timedelta(0), lambda: self._run(walled, None, work))
            return
        parent = self.fleet.jobs.get(retry_of)
        if parent is None:
            raise RuntimeError(f"a job appeared that nobody launched: {name} ({tags})")
        kind = HEALTHY
        root_fault = self.fleet.faults.get(parent.root)
        if retry_of and parent.kind in REPEATING:
            kind = parent.kind if rng.random() < REPEAT_FAILURE_CHANCE else HEALTHY
        elif retry_of and parent.kind == FaultKind.CAPACITY_ERROR and root_fault is not None:
            kind = (
                FaultKind.CAPACITY_ERROR if int(tags.get("trainguard:attempt", "1")) <= root_fault.repeats else HEALTHY
            )
        truth = JobTruth(
            name=name,
            root=parent.root,
            attempt=int(tags.get("trainguard:attempt", "0") or 0),
            kind=kind,
            instance_type=parent.instance_type,
            hosts=parent.hosts,
            opted_in=parent.opted_in,
            stops_allowed=parent.stops_allowed,
            owned=parent.owned,
            max_retries=parent.max_retries,
            failure_reason=parent.failure_reason if kind != HEALTHY else "",
            created_at=self.schedule.clock(),
            retry_of=retry_of,
        )
        self.fleet.jobs[name] = truth
        work = timedelta(minutes=rng.uniform(20, 60))
        self.schedule.after(timedelta(0), lambda: self._run(truth, None, work))

    # ---- SageMaker runs a job ----------------------------------------------------------------------------

    def _run(self, truth: JobTruth, fault: Fault | None, work: timedelta) -> None:
        """Starting for STARTUP (a capacity error fails it there), then Training until its fault or its end."""
        if truth.kind == FaultKind.CAPACITY_ERROR:
            self.schedule.after(CAPACITY_REFUSAL, lambda: self._fail(truth))
            return
        rng = random.Random(f"{self.seed}-run-{truth.name}")
        self.schedule.after(STARTUP, lambda: self._start(truth, fault, work, rng))

    def _start(self, truth: JobTruth, fault: Fault | None, work: timedelta, rng: random.Random) -> None:
        if not self._is(truth, "Starting"):
            return
        self.aws.plane.start_training(truth.name)
        now = self.schedule.clock()
        truth.training_since = now
        strike = now + timedelta(hours=fault.at_work_hours) if fault else now + work * rng.uniform(0.2, 0.8)
        kind = truth.kind
        if kind in (FaultKind.HANG_IDLE_GPU, FaultKind.HANG_BUSY_GPU, FaultKind.NCCL_TIMEOUT):
            self.schedule.at(strike, lambda: self._hang(truth, idle=kind == FaultKind.HANG_IDLE_GPU))
            if kind == FaultKind.NCCL_TIMEOUT:
                hung = timedelta(minutes=fault.hung_minutes if fault else 10.0)
                self.schedule.at(strike + hung, lambda: self._fail(truth))
        elif kind in FAILURE_KINDS:
            self.schedule.at(strike, lambda: self._fail(truth))
        elif kind == FaultKind.SPOT_INTERRUPTION and fault is not None:
            self.schedule.at(strike, lambda: self._interrupt(truth, min(fault.spot_wait_hours, 1.0)))
        else:
            if kind == FaultKind.SLOW_BUT_HEALTHY and fault is not None:
                start = now + timedelta(hours=fault.at_work_hours)
                truth.silent = (start, start + timedelta(minutes=fault.silent_minutes))
                truth.silent_gpus_idle = fault.at_work_hours == 0.0  # a first checkpoint load
            self.schedule.at(now + work, lambda: self._complete(truth))
        for plan in self.on_training:
            plan(truth)

    def _hang(self, truth: JobTruth, idle: bool) -> None:
        if not self._is(truth, "Training"):
            return
        truth.hung_since = self.schedule.clock()
        truth.gpus_idle_when_hung = idle
        for plan in self.on_hang:
            plan(truth)
        if not truth.stops_allowed:  # nobody else will: a person stops it after a while
            self.schedule.after(PERSON_STOPS_HUNG_AFTER, lambda: self._person_stops(truth))

    def _person_stops(self, truth: JobTruth) -> None:
        if self._is(truth, "Training") and truth.stop_requested_at is None:
            truth.stopped_by = "person"
            self._sagemaker.stop_training_job(TrainingJobName=truth.name)

    def _fail(self, truth: JobTruth) -> None:
        if self._status(truth) != "InProgress":
            return
        self.aws.plane.fail(truth.name, truth.failure_reason)
        self._ended(truth)

    def _complete(self, truth: JobTruth) -> None:
        if self._is(truth, "Training") and truth.hung_since is None:
            self.aws.plane.complete(truth.name)
            self._ended(truth)

    def _interrupt(self, truth: JobTruth, wait_hours: float) -> None:
        if self._is(truth, "Training"):
            self.aws.plane.interrupt_spot(truth.name)
            self.schedule.after(timedelta(hours=wait_hours), lambda: self._max_wait(truth))

    def _max_wait(self, truth: JobTruth) -> None:
        if self._is(truth, "Interrupted"):
            truth.stopped_by = "spot"
            self.aws.plane.exceed_max_wait(truth.name)
            self._ended(truth)

    def _settle(self, truth: JobTruth) -> None:
        if self._is(truth, "Stopping"):
            self.aws.plane.settle(truth.name)
            self._ended(truth)

    def _ended(self, truth: JobTruth) -> None:
        truth.end_status = self._status(truth)

    def _status(self, truth: JobTruth) -> str:
        return str(self.aws.plane.describe(truth.name)["TrainingJobStatus"])

    def _is(self, truth: JobTruth, secondary: str) -> bool:
        return str(self.aws.plane.describe(truth.name)["SecondaryStatus"]) == secondary


def _unlimited_type(gpus_per_instance: int) -> str:
    """Types the stand-in's simulated account does not limit (absent from its quota catalogue)."""
    return "ml.g4dn.xlarge" if gpus_per_instance <= 1 else "ml.p3.16xlarge"
