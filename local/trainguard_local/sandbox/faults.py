"""What each fault of ``trainguard sandbox inject`` does to a running simulated job.

- ``hang``: the job stops logging and its GPUs go idle; it stays InProgress (the stall path's case).
- ``internal-error``: the job fails with SageMaker's internal-error text.
- ``capacity``: the job fails with SageMaker's capacity text.
- ``quota``: the quota of the job's instance type drops to what is in use now, so the next launch of that
  type (the user's, or trainguard's) is refused with ResourceLimitExceeded.

The failure texts are real, from tests/fixtures/failure_reasons.json, with their sources.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trainguard_local.sandbox.control import FAULTS
from trainguard_local.sandbox.world import SimulatedTraining
from trainguard_local.stand_in.local_aws import LocalAWS
from trainguard_local.stand_in.sagemaker_control_plane import InvalidTransition

# https://github.com/aws/sagemaker-python-sdk/issues/70 (also aws/sagemaker-spark#76)
INTERNAL_ERROR = "InternalServerError: We encountered an internal error. Please try again."
# https://github.com/DIAGNijmegen/rse-grand-challenge/issues/2631 (also aws/sagemaker-pytorch-training-toolkit#171)
CAPACITY_ERROR = (
    "CapacityError: Unable to provision requested ML compute capacity. Please retry using a different ML instance type."
)


class FaultRefused(Exception):
    """The fault cannot be injected; ``status`` is the HTTP status the control API answers with."""

    def __init__(self, message: str, status: int = 409) -> None:
        super().__init__(message)
        self.status = status


class FaultInjector:
    def __init__(self, aws: LocalAWS, world: SimulatedTraining, say: Callable[[str], None]) -> None:
        self._aws, self._world, self._say = aws, world, say

    def inject(self, job: str, fault: str) -> dict[str, Any]:
        """Inject ``fault`` into ``job`` now; the answer says what it did."""
        if fault not in FAULTS:
            raise FaultRefused(f"unknown fault {fault!r}: one of {', '.join(FAULTS)}", 400)
        if job not in self._aws.plane.job_names():
            raise FaultRefused(f"no training job named {job!r} in the sandbox", 404)
        described = self._aws.plane.describe(job)
        state = f"{described['TrainingJobStatus']}/{described['SecondaryStatus']}"
        if described["TrainingJobStatus"] != "InProgress":
            raise FaultRefused(f"{job} is {state}: faults go into a running job")
        if fault == "hang":
            if described["SecondaryStatus"] != "Training":
                raise FaultRefused(f"{job} is {state}: it can hang once it trains")
            self._world.hang(job)
            effect = "It writes no more log lines and its GPUs are idle; it stays InProgress."
        elif fault == "quota":
            effect = self._lower_quota(described)
        else:
            reason = INTERNAL_ERROR if fault == "internal-error" else CAPACITY_ERROR
            try:
                self._aws.plane.fail(job, reason)
            except InvalidTransition as err:
                raise FaultRefused(str(err)) from None
            effect = f"It failed: {reason}"
        self._say(f"{job}: {fault} injected. {effect}")
        return {"job": job, "fault": fault, "effect": effect}

    def _lower_quota(self, described: dict[str, Any]) -> str:
        instance_type = described["ResourceConfig"].get("InstanceType")
        if not instance_type:
            raise FaultRefused(f"{described['TrainingJobName']} uses instance groups: no one instance type to limit")
        quota_name = f"{instance_type} for training job usage"
        in_use = sum(
            d["ResourceConfig"].get("InstanceCount", 0)
            for d in (self._aws.plane.describe(name) for name in self._aws.plane.job_names())
            if d["TrainingJobStatus"] == "InProgress" and d["ResourceConfig"].get("InstanceType") == instance_type
        )
        try:
            self._aws.quotas.set_value(quota_name, in_use)
        except KeyError:
            raise FaultRefused(f"the sandbox has no quota '{quota_name}'") from None
        return (
            f"The quota '{quota_name}' is now {in_use} (what is in use): the next launch of {instance_type} "
            "is refused with ResourceLimitExceeded."
        )
