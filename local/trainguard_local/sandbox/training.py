"""The jobs' side of the sandbox, one virtual minute at a time: a created job is Starting, trains after
``start_minutes``, and is stopped at MaxRuntimeInSeconds of training (Stopped/MaxRuntimeExceeded); a stop
takes effect the next minute. While it trains, the core's model of a launch (simulation/activity.py, on the
stand-in's clock) says what it writes, and the fleet side (stand_in/fleet_side.py) writes it: its hosts'
GPUUtilization, a log line a minute (delivered by the log group's subscription to ``on_log_delivery``, the
log-activity function), a checkpoint every ``checkpoint_minutes`` stamped with the virtual time. ``hang`` is
the core's idle-GPU hang. Every state change is told through ``say``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from trainguard.domain.instance_types import gpus_per_host
from trainguard_local.simulation.activity import SECOND, LaunchActivity
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.rhythm import JobRhythm
from trainguard_local.stand_in.fleet_side import FleetSide
from trainguard_local.stand_in.local_aws import LocalAWS
from trainguard_local.stand_in.played_launch import PlayedLaunch, resumed_progress
from trainguard_local.stand_in.sagemaker_control_plane import InvalidTransition

RHYTHM = JobRhythm(log_every_seconds=60.0)  # a progress line a minute, no silent phases
# Its lines and checkpoints fall on whole minutes of training, as the clock's ticks do: each minute's window
# ends half a second past the tick, so that the line on a tick is written in that tick's minute.
EDGE = 0.5 * SECOND
STEPS_PER_MINUTE = 50
FINISHED = ("Completed", "Failed", "Stopped")


@dataclass
class JobLife:
    """What the sandbox knows of one job beyond the control plane's record."""

    seen: str = ""  # "Status/SecondaryStatus" last told
    launch: PlayedLaunch | None = None  # once it trains
    told_refused: bool = False  # that its checkpoints could not be written

    def seen_at(self, now: float) -> dict[str, Any]:
        launch = self.launch
        trained = round((launch.played_until - launch.activity.training_since) * 60) if launch else 0
        hung = bool(launch and launch.activity.hung_at(now))
        checkpoints = launch.checkpoints_saved if launch else 0
        return {"state": self.seen, "hung": hung, "minutes_trained": trained, "checkpoints": checkpoints}


class SimulatedTraining:
    def __init__(
        self,
        aws: LocalAWS,
        say: Callable[[str], None],
        *,
        on_log_delivery: Callable[[dict[str, Any]], Any],
        start_minutes: int = 2,
        checkpoint_minutes: int = 10,
    ) -> None:
        self._aws, self._say, self._deliver = aws, say, on_log_delivery
        self._start = timedelta(minutes=start_minutes)
        self._checkpoint_minutes = checkpoint_minutes
        self._lives: dict[str, JobLife] = {}
        self._lock = threading.Lock()
        self._side = FleetSide(aws.client)

    def hang(self, name: str) -> None:
        """The job, which trains, hangs now: its GPUs idle, it writes nothing more."""
        described, now = self._aws.plane.describe(name), self._aws.clock.hours_of(self._aws.clock())
        with self._lock:
            self._launch(name, described).activity.strike(FaultKind.HANG_IDLE_GPU, now)

    def snapshot(self) -> list[dict[str, Any]]:
        """The sandbox's view of every job (GET /_sandbox/jobs)."""
        now = self._aws.clock.hours_of(self._aws.clock())
        with self._lock:
            lives = dict(self._lives)
        return [{"job": name, **life.seen_at(now)} for name, life in lives.items()]

    def minute(self) -> None:
        """One virtual minute of every job's life, at the clock's now."""
        now = self._aws.clock()
        for name in self._aws.plane.job_names():
            with self._lock:
                life = self._lives.setdefault(name, JobLife())
            if life.seen.split("/")[0] in FINISHED:
                continue
            # InvalidTransition: the job changed under us (a fault, a stop); the next minute sees its new state.
            with contextlib.suppress(InvalidTransition):
                self._advance(name, self._aws.plane.describe(name), life, now)
            self._tell(name, self._aws.plane.describe(name), life)

    def _advance(self, name: str, job: dict[str, Any], life: JobLife, now: datetime) -> None:
        status, secondary = job["TrainingJobStatus"], job["SecondaryStatus"]
        if status == "Stopping":
            self._aws.plane.settle(name)
        elif status == "InProgress" and secondary in ("Starting", "Interrupted"):
            if now - job["LastModifiedTime"] >= self._start:
                self._aws.plane.start_training(name)
        elif status == "InProgress" and secondary == "Training":
            max_runtime = job["StoppingCondition"].get("MaxRuntimeInSeconds")
            if max_runtime and (now - job["TrainingStartTime"]).total_seconds() >= max_runtime:
                self._aws.plane.exceed_max_runtime(name)
                return
            self._train(name, job, life, now)

    def _launch(self, name: str, job: dict[str, Any]) -> PlayedLaunch:
        """The job's launch, played from the core from when it started training (under the lock)."""
        life = self._lives.setdefault(name, JobLife())
        if life.launch is None:
            since = self._aws.clock.hours_of(job["TrainingStartTime"])
            resources = job["ResourceConfig"]
            gpus = gpus_per_host(resources.get("InstanceType", "")) or 0
            uri = job.get("CheckpointConfig", {}).get("S3Uri", "")
            # A relaunch resumes from the newest checkpoint under its prefix, as on AWS: its own checkpoints then
            # hold more work, and never overwrite its predecessor's with a later stamp.
            activity = LaunchActivity(RHYTHM, self._checkpoint_minutes, gpus, since, resumed_progress(self._side, uri))
            hosts, clock = resources.get("InstanceCount", 1), self._aws.clock
            life.launch = PlayedLaunch(name, hosts, activity, self._side, clock, uri, lambda at: _words(at, since))
            life.launch.played_until = since + EDGE  # its first line comes a minute into training
        return life.launch

    def _train(self, name: str, job: dict[str, Any], life: JobLife, now: datetime) -> None:
        """Write what the launch emitted since the last minute: GPU levels, log lines, checkpoints."""
        with self._lock:
            launch = self._launch(name, job)
        delivery = launch.play_until(self._aws.clock.hours_of(now) + EDGE)
        if delivery is not None:
            self._deliver(delivery)
        if launch.checkpoint_refused is not None and not life.told_refused:
            life.told_refused = True
            uri, code = launch.checkpoint_uri, launch.checkpoint_refused.response["Error"]["Code"]
            bucket = uri.removeprefix("s3://").split("/", 1)[0]
            self._say(
                f"{name}: cannot write its checkpoint to {uri} ({code}); create the bucket: aws s3 mb s3://{bucket}"
            )

    def _tell(self, name: str, job: dict[str, Any], life: JobLife) -> None:
        state = f"{job['TrainingJobStatus']}/{job['SecondaryStatus']}"
        if state == life.seen:
            return
        if not life.seen:
            resources = job["ResourceConfig"]
            count, kind = resources.get("InstanceCount", "?"), resources.get("InstanceType", "instance groups")
            self._say(f"{name}: created ({count} x {kind})")
        life.seen = state
        reason = f": {job['FailureReason']}" if job.get("FailureReason") else ""
        self._say(f"{name}: {state}{reason}")


def _words(at: float, training_since: float) -> str:
    """A progress line: its step, STEPS_PER_MINUTE a minute of training, and a falling loss."""
    step = round((at - training_since) * 60 * STEPS_PER_MINUTE)
    return f"step {step} loss {2.5 / (1 + step / 5000):.4f}"
