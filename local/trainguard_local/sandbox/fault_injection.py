"""``trainguard sandbox inject JOB FAULT`` and the control API that takes it (``/_sandbox/``: GET jobs, POST
inject). ``hang``: the core's idle-GPU hang (training.py); ``internal-error``, ``capacity``: the job fails
with the core's real FailureReason for that kind (simulation/catalogue.py, with sources); ``quota``: the quota
of the job's instance type drops to what is in use now, so its next launch is refused (ResourceLimitExceeded).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trainguard_local.sandbox.control import FAULTS
from trainguard_local.sandbox.endpoint import ControlHandler
from trainguard_local.sandbox.training import SimulatedTraining
from trainguard_local.simulation.catalogue import FAILURE_TEXTS, training_quota_name
from trainguard_local.simulation.fault_table import FAULT_TABLE, FaultKind
from trainguard_local.stand_in.local_aws import LocalAWS
from trainguard_local.stand_in.sagemaker_control_plane import InvalidTransition

# The FailureReason of each: the first of the core's real texts for its kind (FAULT_TABLE names the entry).
FAILURES = {
    fault: FAILURE_TEXTS[str(FAULT_TABLE[kind].failure_texts)][1][0]
    for fault, kind in (("internal-error", FaultKind.INTERNAL_ERROR), ("capacity", FaultKind.CAPACITY_ERROR))
}


class FaultRefused(Exception):
    """The fault cannot be injected; ``status`` is the HTTP status the control API answers with."""

    def __init__(self, message: str, status: int = 409) -> None:
        super().__init__(message)
        self.status = status


class FaultInjector:
    def __init__(self, aws: LocalAWS, training: SimulatedTraining, say: Callable[[str], None]) -> None:
        self._aws, self._training, self._say = aws, training, say

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
            self._training.hang(job)
            effect = "It writes no more log lines and its GPUs are idle; it stays InProgress."
        elif fault == "quota":
            effect = self._lower_quota(described)
        else:
            reason = FAILURES[fault]
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
        quota_name = training_quota_name(instance_type)
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


def control_api(aws: LocalAWS, faults: FaultInjector, training: SimulatedTraining) -> ControlHandler:
    """The sandbox's own API on its endpoint: GET jobs (what it knows of each job), POST inject."""

    def control(method: str, action: str, payload: dict[str, Any] | None) -> tuple[int, dict[str, Any]]:
        if (method, action) == ("GET", "jobs"):
            return 200, {"virtual_time": aws.clock().isoformat(), "jobs": training.snapshot()}
        if (method, action) == ("POST", "inject"):
            if not isinstance(payload, dict) or not {"job", "fault"} <= payload.keys():
                return 400, {"error": 'inject takes {"job": NAME, "fault": FAULT}'}
            try:
                return 200, faults.inject(str(payload["job"]), str(payload["fault"]))
            except FaultRefused as refused:
                return refused.status, {"error": str(refused)}
        return 404, {"error": f"no sandbox action {method} {action!r} (GET jobs, POST inject)"}

    return control
