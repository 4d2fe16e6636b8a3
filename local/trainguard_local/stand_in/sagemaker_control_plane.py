"""A simulated SageMaker training control plane, for what moto's SageMaker lacks.

moto completes every job at once, has no StopTrainingJob, drops RetryStrategy and Environment and accepts
duplicate names (docs/local-aws.md). ``SimulatedSageMaker`` keeps jobs in memory and changes their
state only when a driver method is called (``start_training``, ``fail``, ``complete``, ...) with time
read from the injected ``clock``: no threads, no sleeps. ``SageMakerServer`` serves it to a boto3 client.

A stop is two steps, as on AWS: StopTrainingJob moves the job to Stopping, and ``settle(name)`` (or
``settle_all()``) finishes it as Stopped. Tests can so observe the Stopping state in between.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from trainguard_local.simulation.catalogue import limit_exceeded_message
from trainguard_local.stand_in.sagemaker_api_model import SAGEMAKER_API, SageMakerApiError
from trainguard_local.stand_in.sagemaker_events import StateChangeListener, build_state_change_event
from trainguard_local.stand_in.sagemaker_listings import list_tags, list_training_jobs
from trainguard_local.stand_in.sagemaker_training_job import FAILURE_REASON_LIMIT, TrainingJobRecord

Clock = Callable[[], datetime]
FailedCallListener = Callable[[str, dict[str, Any], SageMakerApiError], None]

# Real error texts, with their sources:
NOT_FOUND = "Requested resource not found."  # aws/amazon-sagemaker-examples#2360 (DescribeTrainingJob)
UNKNOWN_RESOURCE = "Resource does not exist"  # boto3/boto3#4606 (ListTags on an unknown ARN)


def _utc_now() -> datetime:
    return datetime.now(UTC)


class InvalidTransition(ValueError):
    """A driver method was called on a job whose state does not allow it (a test bug, not an API error)."""


class SimulatedSageMaker:
    def __init__(
        self,
        *,
        clock: Clock = _utc_now,
        on_event: StateChangeListener | None = None,
        instance_limits: dict[str, int] | Callable[[str], int | None] | None = None,
        on_failed_call: FailedCallListener | None = None,
        account_id: str = "123456789012",
        region: str = "us-east-1",
    ) -> None:
        self._clock = clock
        self._on_event = on_event
        # A fixed table, or a function (the simulated Service Quotas' current values, which change on approval).
        self._limit_for: Callable[[str], int | None] = (
            instance_limits if callable(instance_limits) else dict(instance_limits or {}).get
        )
        self._on_failed_call = on_failed_call
        self.account_id = account_id
        self.region = region
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._jobs: dict[str, TrainingJobRecord] = {}
        self._outbox: list[dict[str, Any]] = []
        # One lock for all state. Events are delivered after it is released, so an on_event callback
        # may call back into the plane (directly or through the HTTP server) without a deadlock.
        self._lock = threading.Lock()

    # ---- the API, as the HTTP server calls it -------------------------------------------------

    def handle(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        """Answer one API call, or raise ``SageMakerApiError``. Every call is logged first, valid or not."""
        with self._lock:
            self.calls.append((operation, copy.deepcopy(params)))
        answer = SAGEMAKER_API.answer_of(self, operation, params)
        try:
            with self._lock:
                return answer(params)
        except SageMakerApiError as error:
            if self._on_failed_call is not None:
                self._on_failed_call(operation, copy.deepcopy(params), error)  # as CloudTrail records it
            raise
        finally:
            self._deliver_events()

    def _create_training_job(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params["TrainingJobName"]
        arn = self._arn(name)
        if name in self._jobs:
            # aws/amazon-sagemaker-examples#3108 quotes this text.
            raise SageMakerApiError(
                "ResourceInUse",
                "Training job names must be unique within an AWS account and region, "
                f"and a training job with this name already exists ({arn})",
            )
        request = {k: copy.deepcopy(v) for k, v in params.items() if k != "Tags"}
        job = TrainingJobRecord(name, arn, request, list(params.get("Tags", [])), self._clock())
        self._check_instance_limits(job)
        self._jobs[name] = job
        self._announce(job)
        return {"TrainingJobArn": arn}

    def _describe_training_job(self, params: dict[str, Any]) -> dict[str, Any]:
        return self._job(params["TrainingJobName"]).describe()

    def _stop_training_job(self, params: dict[str, Any]) -> dict[str, Any]:
        job = self._job(params["TrainingJobName"])
        if job.status != "InProgress":
            # awslabs/benchmark-ai#928: "The request was rejected because the training job is in
            # status Stopped."
            raise SageMakerApiError(
                "ValidationException",
                f"The request was rejected because the training job is in status {job.status}.",
            )
        self._move(job, "Stopping", "Stopping")
        return {}

    def _list_training_jobs(self, params: dict[str, Any]) -> dict[str, Any]:
        return list_training_jobs([job.describe() for job in self._jobs.values()], params)

    def _list_tags(self, params: dict[str, Any]) -> dict[str, Any]:
        return list_tags(copy.deepcopy(self._job_by_arn(params["ResourceArn"]).tags), params)

    def _add_tags(self, params: dict[str, Any]) -> dict[str, Any]:
        job = self._job_by_arn(params["ResourceArn"])
        added = {tag["Key"]: tag["Value"] for tag in params["Tags"]}
        job.tags = [t for t in job.tags if t["Key"] not in added] + copy.deepcopy(params["Tags"])
        return {"Tags": copy.deepcopy(params["Tags"])}

    def _delete_tags(self, params: dict[str, Any]) -> dict[str, Any]:
        job = self._job_by_arn(params["ResourceArn"])
        job.tags = [t for t in job.tags if t["Key"] not in set(params["TagKeys"])]
        return {}

    # ---- drivers: what happens to a job on AWS's side (Python only, not over HTTP) ---------------

    def start_training(self, name: str) -> None:
        """Starting (or Interrupted) -> InProgress/Training; the first time sets TrainingStartTime.

        AWS passes through Downloading (and, after an interruption, Starting) first; the simulation
        goes straight to Training, one change and one event.
        """
        self._drive(name, ("InProgress", "Training"), allowed_from={"Starting", "Interrupted"})

    def fail(self, name: str, reason: str) -> None:
        """InProgress -> Failed/Failed with ``reason`` cut to 1,024 characters, as AWS cuts it."""
        self._drive(name, ("Failed", "Failed"), failure_reason=reason[:FAILURE_REASON_LIMIT])

    def complete(self, name: str) -> None:
        """Training -> InProgress/Uploading -> Completed/Completed (two changes, two events)."""
        self._drive(name, ("InProgress", "Uploading"), ("Completed", "Completed"), allowed_from={"Training"})

    def interrupt_spot(self, name: str) -> None:
        """A managed spot job loses its instances: Training -> InProgress/Interrupted."""
        self._drive(name, ("InProgress", "Interrupted"), allowed_from={"Training"}, spot_only=True)

    def exceed_max_wait(self, name: str) -> None:
        """InProgress -> Stopping -> Stopped/MaxWaitTimeExceeded, the documented managed spot lifecycle."""
        self._drive(name, ("Stopping", "Stopping"), ("Stopped", "MaxWaitTimeExceeded"), spot_only=True)

    def exceed_max_runtime(self, name: str) -> None:
        """InProgress -> Stopping -> Stopped/MaxRuntimeExceeded (no FailureReason, as on AWS)."""
        self._drive(name, ("Stopping", "Stopping"), ("Stopped", "MaxRuntimeExceeded"))

    def settle(self, name: str) -> None:
        """Finish a stop requested through StopTrainingJob: Stopping -> Stopped/Stopped."""
        self._drive(name, ("Stopped", "Stopped"), allowed_from={"Stopping"})

    def settle_all(self) -> list[str]:
        with self._lock:
            stopping = [job.name for job in self._jobs.values() if job.status == "Stopping"]
        for name in stopping:
            self.settle(name)
        return stopping

    def describe(self, name: str) -> dict[str, Any]:
        """DescribeTrainingJob without the call log, for tests and the demo."""
        with self._lock:
            return self._job(name).describe()

    def job_names(self) -> list[str]:
        """Every job's name, oldest first, without the call log (the sandbox's simulated jobs follow them)."""
        with self._lock:
            return list(self._jobs)

    # ---- internals ---------------------------------------------------------------------------

    def _drive(
        self,
        name: str,
        *steps: tuple[str, str],
        allowed_from: set[str] | None = None,
        spot_only: bool = False,
        failure_reason: str | None = None,
    ) -> None:
        """Apply ``steps`` of (status, secondary status) to one job, all under the lock."""
        with self._lock:
            job = self._jobs.get(name)
            if job is None:
                raise InvalidTransition(f"no training job named {name!r}")
            if spot_only and not job.is_spot:
                raise InvalidTransition(f"{name} is not a managed spot training job")
            if allowed_from is None and job.status != "InProgress":
                raise InvalidTransition(f"{name} is {job.status}, not InProgress")
            if allowed_from is not None and job.secondary_status not in allowed_from:
                raise InvalidTransition(f"{name} is {job.status}/{job.secondary_status}, not {allowed_from}")
            job.failure_reason = failure_reason
            for status, secondary_status in steps:
                self._move(job, status, secondary_status)
        self._deliver_events()

    def _move(self, job: TrainingJobRecord, status: str, secondary_status: str) -> None:
        job.move_to(status, secondary_status, self._clock())
        self._announce(job)

    def _announce(self, job: TrainingJobRecord) -> None:
        if self._on_event is None:
            return
        event = build_state_change_event(
            job.describe(), job.tags, account_id=self.account_id, region=self.region, time=self._clock()
        )
        self._outbox.append(event)

    def _deliver_events(self) -> None:
        with self._lock:
            events, self._outbox = self._outbox, []
        for event in events:
            assert self._on_event is not None
            self._on_event(event)

    def _check_instance_limits(self, job: TrainingJobRecord) -> None:
        for instance_type, delta in job.instances_by_type().items():
            limit = self._limit_for(instance_type)
            if limit is None:
                continue
            in_use = sum(
                other.instances_by_type().get(instance_type, 0)
                for other in self._jobs.values()
                if other.status == "InProgress"
            )
            if in_use + delta > limit:
                text = limit_exceeded_message(instance_type, limit=limit, in_use=in_use, delta=delta)
                raise SageMakerApiError("ResourceLimitExceeded", text)

    def _arn(self, name: str) -> str:
        # The name is kept as given. Whether AWS lowercases it in the ARN is unsettled: boto3#4606 (2025)
        # reports lowercased ARNs from ListHyperParameterTuningJobs only, and aws/sagemaker-experiments#172
        # (2022) a backend "arn casing change" for training jobs with upper-case names.
        return f"arn:aws:sagemaker:{self.region}:{self.account_id}:training-job/{name}"

    def _job(self, name: str) -> TrainingJobRecord:
        if name not in self._jobs:
            raise SageMakerApiError("ValidationException", NOT_FOUND)
        return self._jobs[name]

    def _job_by_arn(self, arn: str) -> TrainingJobRecord:
        for job in self._jobs.values():
            if job.arn == arn:
                return job
        raise SageMakerApiError("ValidationException", UNKNOWN_RESOURCE)
