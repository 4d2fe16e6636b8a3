"""The fleet of the replay: the users who launch the trace's jobs and SageMaker running them, on the stand-in.

Each job is a `JobTruth`, the record the audit judges trainguard by; what a launch logs, its GPUs and whether
it is hung come from its `LaunchActivity`, struck by its fault (simulation/). trainguard's launches appear
here when their events arrive. For a short replay: two types the stand-in does not limit, at most 8 hosts, a
quota wall on a type whose quota is 0 there, relaunches of 20-60 minutes, spot waits of at most an hour.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from trainguard.domain.instance_types import gpus_per_host
from trainguard_local.chaos.jobs_truth import HEALTHY, REPEATING, JobTruth
from trainguard_local.chaos.user_tags import UserChoice, draw_user_choice
from trainguard_local.fleet.life import CAPACITY_REFUSAL_MINUTES
from trainguard_local.simulation.activity import LaunchActivity
from trainguard_local.simulation.catalogue import training_quota_name
from trainguard_local.simulation.fault_table import FAULT_TABLE, Ending, FaultKind, Logs
from trainguard_local.simulation.kernel import Kernel
from trainguard_local.simulation.rhythm import JobRhythm
from trainguard_local.simulation.trace import Fault, JobSpec
from trainguard_local.stand_in.fleet_side import FleetSide, training_request, with_spot
from trainguard_local.stand_in.local_aws import LocalAWS

STARTUP = timedelta(minutes=10)
CAPACITY_REFUSAL = timedelta(minutes=CAPACITY_REFUSAL_MINUTES)  # as in the fleet benchmark
PERSON_STOPS_HUNG_AFTER = timedelta(hours=2)
SETTLE_STOP = (1, 5)  # minutes from Stopping to Stopped
MAX_HOSTS = 8
WALL_TYPES = ("ml.p4d.24xlarge", "ml.trn1.32xlarge")  # quota 0 in the stand-in's account (stand_in/local_aws.py)
# One line a minute, not the trace job's rhythm: the replay runs no prober to learn it, so a job that logs once
# per epoch would read as hung (the benchmark measures that; the replay is about delivery and faults).
RHYTHM = JobRhythm(log_every_seconds=60)
REPEAT_FAILURE_CHANCE = 0.4  # a relaunch of a failure its relaunch recovers from fails again the same way


class ReplayedFleet:
    def __init__(self, aws: LocalAWS, schedule: Kernel, seed: int, config_defaults: Any) -> None:
        self.aws, self.schedule, self.seed, self.defaults = aws, schedule, seed, config_defaults
        self.jobs: dict[str, JobTruth] = {}
        self.faults: dict[str, Fault] = {}  # root -> its trace fault
        self.walls: dict[str, str] = {}  # walled root -> the quota that refused it
        self.side = FleetSide(aws.client)  # the jobs' launches and writes (evidence.py writes their logs and GPUs)
        self._quota_decided: set[str] = set()
        self.on_training: list[Callable[[JobTruth], None]] = []
        self.on_hang: list[Callable[[JobTruth], None]] = []

    def hours(self, moment: datetime) -> float:
        return self.schedule.clock.hours_of(moment)

    # ---- users launch -----------------------------------------------------------------------------

    def plan_launch(self, spec: JobSpec, fault: Fault | None, at: datetime, guarded: bool = False) -> None:
        """The user launches `spec` at `at`; `guarded`: opted in, with every action and the default limit."""
        if fault is not None:
            self.faults[spec.name] = fault
        self.schedule.at(at, lambda: self._user_launch(spec, fault, guarded))

    def _user_launch(self, spec: JobSpec, fault: Fault | None, guarded: bool) -> None:
        """The user's CreateTrainingJob, with a checkpoint already under its prefix (a warm start)."""
        rng = random.Random(f"{self.seed}-{spec.name}")
        tags, enabled, dry_run = _user_tags(spec, rng, guarded)
        kind = fault.kind if fault else HEALTHY
        walled = kind == FaultKind.QUOTA_WALL
        instance_type = WALL_TYPES[len(self.walls) % 2] if walled else _unlimited_type(spec.gpus_per_instance)
        truth = JobTruth(
            name=spec.name,
            root=spec.name,
            attempt=0,
            kind=kind,
            instance_type=instance_type,
            hosts=min(spec.instance_count, MAX_HOSTS),
            opted_in=enabled,
            stops_allowed=enabled and not dry_run and not spec.owner,
            parent_stops_allowed=enabled
            and not dry_run
            and bool(spec.owner)
            and self.aws.config.stop_stalled_parent_jobs,
            max_retries=int(tags.get("trainguard:max-retries") or self.defaults.default_max_retries),
            checkpoint_every_minutes=spec.checkpoint_every_minutes,
            failure_reason=(fault.failure_reason or "") if fault else "",
            owned=bool(spec.owner),
        )
        self.jobs[spec.name] = truth
        request = training_request(spec.name, instance_type, truth.hosts, tags)
        if spec.spot:
            with_spot(request, extra_wait_seconds=0)
        self.side.write_checkpoint(request["CheckpointConfig"]["S3Uri"], "step-000000/model.pt", b"w")
        if walled:
            self._script_quota_review(instance_type, rng)
        refused = self.side.launch(request)
        if refused:  # the quota wall: CloudTrail tells trainguard
            truth.launched = False
            self.walls[spec.name] = training_quota_name(instance_type)
            if not refused.startswith("ResourceLimitExceeded:"):
                raise RuntimeError(f"{spec.name}: the launch was refused: {refused}")
            return
        truth.created_at = self.schedule.clock()
        self._run(truth, fault, timedelta(hours=spec.work_hours))

    def _script_quota_review(self, instance_type: str, rng: random.Random) -> None:
        quota = training_quota_name(instance_type)
        if quota not in self._quota_decided:
            self._quota_decided.add(quota)
            self.aws.quotas.decide(quota, "APPROVED", after=timedelta(hours=rng.uniform(1.0, 3.0)))

    # ---- trainguard's launches, as their events arrive ---------------------------------------------------

    def observe(self, event: dict[str, Any]) -> None:
        if event.get("detail-type") != "SageMaker Training Job State Change":
            return
        detail = event["detail"]
        name, status = detail["TrainingJobName"], detail["TrainingJobStatus"]
        known = self.jobs.get(name)
        if known is None or not known.launched:
            self._discover(name, detail.get("Tags") or {})
        truth = self.jobs[name]
        if status == "Stopping" and truth.stop_requested_at is None:
            truth.stop_requested_at = self.schedule.clock()
            truth.stopped_by = truth.stopped_by or "trainguard"
            if detail.get("SecondaryStatus") == "Stopping" and truth.stopped_by != "spot":
                settle = timedelta(minutes=random.Random(f"{self.seed}-settle-{name}").randint(*SETTLE_STOP))
                self.schedule.after(settle, lambda: self._end(truth, "Stopping", self.aws.plane.settle))

    def _discover(self, name: str, tags: dict[str, str]) -> None:
        """A job trainguard created: a relaunch (tag retry-of) or a launch after a quota wall (blocked-launch)."""
        retry_of = tags.get("trainguard:retry-of", "")
        walled = self.jobs.get(tags.get("trainguard:blocked-launch", ""))
        rng = random.Random(f"{self.seed}-{name}")
        if walled is not None and walled.name == name and not walled.launched:  # the user's launch, let through
            walled.launched, walled.kind, walled.created_at = True, HEALTHY, self.schedule.clock()
            self._run_soon(walled, rng)
            return
        parent = self.jobs.get(retry_of)
        if parent is None:
            raise RuntimeError(f"a job appeared that nobody launched: {name} ({tags})")
        attempt = int(tags.get("trainguard:attempt", "0") or 0)
        kind = _relaunch_kind(parent.kind, attempt, self.faults.get(parent.root), rng)
        truth = JobTruth(
            name=name,
            root=parent.root,
            attempt=attempt,
            kind=kind,
            instance_type=parent.instance_type,
            hosts=parent.hosts,
            opted_in=parent.opted_in,
            stops_allowed=parent.stops_allowed,
            parent_stops_allowed=parent.parent_stops_allowed,
            owned=parent.owned,
            max_retries=parent.max_retries,
            checkpoint_every_minutes=parent.checkpoint_every_minutes,
            failure_reason=parent.failure_reason if kind != HEALTHY else "",
            created_at=self.schedule.clock(),
            retry_of=retry_of,
        )
        self.jobs[name] = truth
        self._run_soon(truth, rng)

    def _run_soon(self, truth: JobTruth, rng: random.Random) -> None:
        """A launch of trainguard's: it trains for 20-60 minutes, without the trace's fault."""
        work = timedelta(minutes=rng.uniform(20, 60))
        self.schedule.after(timedelta(0), lambda: self._run(truth, None, work))

    # ---- SageMaker runs a job, as its fault's row says ---------------------------------------------------

    def _run(self, truth: JobTruth, fault: Fault | None, work: timedelta) -> None:
        """Starting for STARTUP (a launch refused for capacity fails there), then Training."""
        if truth.ending is Ending.REFUSED_AT_LAUNCH:
            self.schedule.after(CAPACITY_REFUSAL, lambda: self._fail(truth))
            return
        rng = random.Random(f"{self.seed}-run-{truth.name}")
        self.schedule.after(STARTUP, lambda: self._start(truth, fault, work, rng))

    def _start(self, truth: JobTruth, fault: Fault | None, work: timedelta, rng: random.Random) -> None:
        if not self._is(truth, "Starting"):
            return
        self.aws.plane.start_training(truth.name)
        now = truth.training_since = self.schedule.clock()
        gpus = gpus_per_host(truth.instance_type) or 1
        truth.activity = LaunchActivity(RHYTHM, truth.checkpoint_every_minutes, gpus, self.hours(now))
        strike = now + timedelta(hours=fault.at_work_hours) if fault else now + work * rng.uniform(0.2, 0.8)
        self._plan_ending(truth, fault, strike, now + work)
        for plan in self.on_training:
            plan(truth)

    def _plan_ending(self, truth: JobTruth, fault: Fault | None, strike: datetime, done: datetime) -> None:
        """What the fault's row says happens at its strike; a job that trains on completes when `done`."""
        ending = truth.ending
        if ending in (Ending.HANGS, Ending.FAILS_AFTER_HANG):
            self.schedule.at(strike, lambda: self._hang(truth))
        if ending is Ending.FAILS_AFTER_HANG:
            hung = timedelta(minutes=fault.hung_minutes if fault else 10.0)
            self.schedule.at(strike + hung, lambda: self._fail(truth))
        elif ending is Ending.FAILS:
            self.schedule.at(strike, lambda: self._fail(truth))
        elif ending is Ending.INTERRUPTED and fault is not None:
            self.schedule.at(strike, lambda: self._interrupt(truth, min(fault.spot_wait_hours, 1.0)))
        elif ending is not Ending.HANGS:
            assert truth.activity is not None and truth.training_since is not None
            if fault is not None and FAULT_TABLE[fault.kind].logs is Logs.SILENT_FOR_A_WHILE:
                start = self.hours(truth.training_since) + fault.at_work_hours
                truth.activity.strike(fault.kind, start, fault.silent_minutes)
            self.schedule.at(done, lambda: self._end(truth, "Training", self.aws.plane.complete))

    def _hang(self, truth: JobTruth) -> None:
        if not self._is(truth, "Training") or truth.activity is None:
            return
        truth.activity.strike(FaultKind(truth.kind), self.hours(self.schedule.clock()))
        for plan in self.on_hang:
            plan(truth)
        if not truth.hang_stops_allowed:  # nobody else will: a person stops it after a while
            self.schedule.after(PERSON_STOPS_HUNG_AFTER, lambda: self._person_stops(truth))

    def _person_stops(self, truth: JobTruth) -> None:
        if self._is(truth, "Training") and truth.stop_requested_at is None:
            truth.stopped_by = "person"
            self.side.client("sagemaker").stop_training_job(TrainingJobName=truth.name)

    def _fail(self, truth: JobTruth) -> None:
        if self._status(truth) == "InProgress":
            self.aws.plane.fail(truth.name, truth.failure_reason)
            truth.end_status = self._status(truth)

    def _end(self, truth: JobTruth, secondary: str, end: Callable[[str], Any], by: str = "") -> None:
        """`end` the job (a step of the simulated SageMaker) if it is still `secondary`; `by`: who stopped it."""
        if self._is(truth, secondary):
            truth.stopped_by = by or truth.stopped_by
            end(truth.name)
            truth.end_status = self._status(truth)

    def _interrupt(self, truth: JobTruth, wait_hours: float) -> None:
        if self._is(truth, "Training") and truth.activity is not None:
            truth.activity.strike(FaultKind.SPOT_INTERRUPTION, self.hours(self.schedule.clock()))
            self.aws.plane.interrupt_spot(truth.name)
            wait = timedelta(hours=wait_hours)
            self.schedule.after(wait, lambda: self._end(truth, "Interrupted", self.aws.plane.exceed_max_wait, "spot"))

    def _status(self, truth: JobTruth) -> str:
        return str(self.aws.plane.describe(truth.name)["TrainingJobStatus"])

    def _is(self, truth: JobTruth, secondary: str) -> bool:
        return str(self.aws.plane.describe(truth.name)["SecondaryStatus"]) == secondary


def _user_tags(spec: JobSpec, rng: random.Random, guarded: bool) -> tuple[dict[str, str], bool, bool]:
    """The user's tags, opted in and dry run (user_tags.py); a guarded job opted in with every action and the
    default limit."""
    choice = UserChoice() if guarded else draw_user_choice(rng)
    tags = {"team": "chaos"}
    if spec.owner == "pipelines":  # a pipeline step's job (an AWS Batch one is named AWSBatch...)
        tags["sagemaker:pipeline-execution-arn"] = (
            f"arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/{spec.name}"
        )
    tags.update((key, value) for key, value in choice.tags().items() if value != "false")  # not opted in: no tag
    return tags, choice.enabled, choice.dry_run


def _relaunch_kind(parent_kind: str, attempt: int, root_fault: Fault | None, rng: random.Random) -> str:
    """What strikes a relaunch: its parent's failure again, now and then; a refusal for capacity as many
    times as the trace's fault repeats; else nothing."""
    if parent_kind in REPEATING:
        return parent_kind if rng.random() < REPEAT_FAILURE_CHANCE else HEALTHY
    if parent_kind == FaultKind.CAPACITY_ERROR and root_fault is not None:
        return FaultKind.CAPACITY_ERROR if attempt <= root_fault.repeats else HEALTHY
    return HEALTHY


def _unlimited_type(gpus_per_instance: int) -> str:
    """Types the stand-in's simulated account does not limit (absent from its quota catalogue)."""
    return "ml.g4dn.xlarge" if gpus_per_instance <= 1 else "ml.p3.16xlarge"
