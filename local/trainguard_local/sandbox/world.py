"""The jobs' side of the sandbox: what each simulated training job does, one virtual minute at a time.

A job the user (or trainguard) creates is Starting; after ``start_minutes`` it trains. While it trains,
every minute, it does what SageMaker and a well-behaved training script do on AWS:
- SageMaker publishes ``GPUUtilization`` per host (namespace ``/aws/sagemaker/TrainingJobs``, dimension
  ``Host=<job>/algo-<n>``, 100 per GPU), busy while healthy and 0 while hung;
- the script logs a progress line to ``/aws/sagemaker/TrainingJobs``, and the log group's subscription
  filter delivers it (``on_log_delivery``, the log-activity function's event: base64 gzip JSON);
- every ``checkpoint_minutes`` it writes a checkpoint under its CheckpointConfig.S3Uri;
- it is stopped at MaxRuntimeInSeconds of training (Stopped/MaxRuntimeExceeded), as on AWS.
What a job writes is the fleet side every harness shares (stand_in/fleet_side.py); when it writes it is the
sandbox's. A hung job (``hang``) logs nothing, writes no checkpoint and idles its GPUs. A stop (Stopping) takes
effect the next minute. Every state change is told through ``say``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from trainguard.domain.instance_types import gpus_per_host
from trainguard_local.stand_in.fleet_side import FleetSide
from trainguard_local.stand_in.local_aws import LocalAWS
from trainguard_local.stand_in.sagemaker_control_plane import InvalidTransition

HEALTHY_GPU_PERCENT = 85.0  # per GPU, while the job trains
STEPS_PER_MINUTE = 50
FINISHED = ("Completed", "Failed", "Stopped")


@dataclass
class JobLife:
    """What the sandbox knows of one job beyond the control plane's record."""

    seen: str = ""  # "Status/SecondaryStatus" last told
    hung: bool = False
    minutes_trained: int = 0
    checkpoints: int = 0
    bucket_missing: bool = False


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
        with self._lock:
            self._lives.setdefault(name, JobLife()).hung = True

    def snapshot(self) -> list[dict[str, Any]]:
        """The sandbox's view of every job (GET /_sandbox/jobs)."""
        with self._lock:
            lives = dict(self._lives)
        return [
            {
                "job": name,
                "state": life.seen,
                "hung": life.hung,
                "minutes_trained": life.minutes_trained,
                "checkpoints": life.checkpoints,
            }
            for name, life in lives.items()
        ]

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

    def _train(self, name: str, job: dict[str, Any], life: JobLife, now: datetime) -> None:
        life.minutes_trained += 1
        resources = job["ResourceConfig"]
        self._publish_gpus(name, resources.get("InstanceType", ""), resources.get("InstanceCount", 1), life, now)
        if life.hung:
            return
        self._log_progress(name, job, life, now)
        checkpoint = job.get("CheckpointConfig", {}).get("S3Uri", "")
        if checkpoint and life.minutes_trained % self._checkpoint_minutes == 0:
            self._write_checkpoint(name, checkpoint, life)

    def _publish_gpus(self, name: str, instance_type: str, hosts: int, life: JobLife, now: datetime) -> None:
        gpus = gpus_per_host(instance_type)
        if not gpus:
            return  # no GPU, no GPUUtilization: only log silence can tell a hang
        value = 0.0 if life.hung else HEALTHY_GPU_PERCENT * gpus
        self._side.put_gpu_utilization(name, hosts, [(now - timedelta(seconds=30), value)])

    def _log_progress(self, name: str, job: dict[str, Any], life: JobLife, now: datetime) -> None:
        step = life.minutes_trained * STEPS_PER_MINUTE
        message = f"step {step} loss {2.5 / (1 + step / 5000):.4f}"
        line = self._side.write_log_line(name, job["TrainingStartTime"], now - timedelta(seconds=20), message)
        self._deliver(line.delivery(str(step)))

    def _write_checkpoint(self, name: str, s3_uri: str, life: JobLife) -> None:
        file = f"step-{life.minutes_trained * STEPS_PER_MINUTE:07d}/model.pt"
        try:
            self._side.write_checkpoint(s3_uri, file, b"simulated weights")
        except ClientError as err:
            if not life.bucket_missing:
                life.bucket_missing = True
                bucket = s3_uri.removeprefix("s3://").split("/", 1)[0]
                self._say(
                    f"{name}: cannot write its checkpoint to {s3_uri} ({err.response['Error']['Code']}); "
                    f"create the bucket: aws s3 mb s3://{bucket}"
                )
            return
        life.checkpoints += 1

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
