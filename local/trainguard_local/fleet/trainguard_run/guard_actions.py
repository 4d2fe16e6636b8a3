"""trainguard's calls that act on a lineage (creates, stops, quota requests), as actions in the job's
timeline: the way the report counts them, right or wrong, once each."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainguard.domain.policy import parse_tag_list
from trainguard_local.fleet.model import TRAINGUARD, ActionKind, JobTimeline
from trainguard_local.simulation.fault_table import FIX_FIRST_KINDS, FaultKind
from trainguard_local.stand_in.service_quotas import SimulatedServiceQuotas


@dataclass(frozen=True)
class GuardCall:
    """One of trainguard's calls that acts (creates, stops, requests), with what it was answered."""

    at: float  # hours on the trace clock
    root: str  # the trace job whose lineage it acts on ('' when unknown)
    operation: str
    params: dict[str, Any]
    error_code: str = ""
    error_message: str = ""

    @property
    def succeeded(self) -> bool:
        return not self.error_code


class GuardActions:
    def __init__(self, tl: JobTimeline, quotas: SimulatedServiceQuotas, *, owned: bool = False) -> None:
        self.tl, self.quotas = tl, quotas
        self.owned = owned  # a parent (a pipeline, a Batch queue) owns the lineage: any action on it is wrong
        self.pending: list[GuardCall] = []  # trainguard's calls on this lineage, not yet in the timeline
        self._refused: dict[str, str] = {}  # failed job -> the error of trainguard's last launch for it
        self.repeated_refusals = 0  # trainguard's launches refused again the same way (not counted as actions)
        self._done: set[tuple[str, str]] = set()  # (operation, job) of trainguard's creates and stops that succeeded

    def take(self, call: GuardCall) -> None:
        self.pending.append(call)

    def flush(self, end_kind: dict[str, FaultKind | None], hung: set[str]) -> None:
        """trainguard's calls on this lineage so far, as actions in the timeline (at their time: the
        timeline has been brought to the present before). `end_kind`: the fault each SageMaker job's end
        came from; `hung`: the SageMaker jobs that were hung when stopped, or slowed or diverged (issue 28)."""
        calls, self.pending = self.pending, []
        for call in calls:
            if self._already_done(call):
                continue
            if call.operation == "CreateTrainingJob":
                failed = replaced_job(call.params)
                if not call.succeeded and self._refused.get(failed) == call.error_code:
                    self.repeated_refusals += 1  # the quota check's launch, refused again: one action is enough
                    continue
                self._refused[failed] = call.error_code
                user_error = end_kind.get(failed) in FIX_FIRST_KINDS  # a diverged run too
                self.tl.act(
                    ActionKind.RELAUNCH,
                    TRAINGUARD,
                    target=failed,
                    right=not user_error and not self.owned,
                    succeeded=call.succeeded,
                    note=f"{call.error_code}: {call.error_message}"
                    if call.error_code
                    else call.params["TrainingJobName"] + self._what_it_asks_for(call.params),
                )
            elif call.operation == "StopTrainingJob":
                name = str(call.params.get("TrainingJobName", ""))
                self.tl.act(
                    ActionKind.STOP,
                    TRAINGUARD,
                    target=name,
                    # A verified hang is stopped, a parent's job's too (issue 27: the parent decides what follows).
                    right=name in hung,
                    succeeded=call.succeeded,
                    note="" if name in hung else "a healthy job, silent for a while",
                )
            elif call.operation == "RequestServiceQuotaIncrease":
                code = str(call.params.get("QuotaCode", ""))
                names = {r["QuotaCode"]: r["QuotaName"] for r in self.quotas.requests()}
                self.tl.act(
                    ActionKind.QUOTA_REQUEST,
                    TRAINGUARD,
                    target=names.get(code, code),
                    right=not self.owned,
                    succeeded=call.succeeded,
                )

    def _already_done(self, call: GuardCall) -> bool:
        """A call refused because an earlier attempt of the same action succeeded: the retry of a request whose answer
        was lost (a read timeout), or of an invocation whose process died after it (Lambda's retry). SageMaker refuses
        a second create of a name with ResourceInUse, a second stop with ValidationException; both are the one action
        (the product's create takes its own job as done: adapters/sagemaker.py, `_check_existing`)."""
        action = (call.operation, str(call.params.get("TrainingJobName", "")))
        if call.succeeded:
            self._done.add(action)
            return False
        return action in self._done and call.error_code in ("ResourceInUse", "ValidationException")

    def _what_it_asks_for(self, params: dict) -> str:
        """Where a relaunch differs from the job's own launch: InstancePreferences, another type, on-demand."""
        resource = params.get("ResourceConfig", {})
        job = self.tl.job
        if preferences := resource.get("InstancePreferences"):
            listed = ", then ".join(f"{p.get('InstanceCount')} x {p.get('InstanceType')}" for p in preferences)
            changed = f" with InstancePreferences ({listed})"
        elif resource.get("InstanceType") and resource.get("InstanceType") != job.instance_type:
            changed = f" on {resource.get('InstanceCount')} x {resource['InstanceType']}"
        else:
            changed = ""
        if job.spot and params.get("EnableManagedSpotTraining") is not True:
            changed += " on on-demand instances"
        return changed


def relaunch_of(calls: list[GuardCall], ended: str, *, refused: bool = False) -> str:
    """The job trainguard created last in place of launch `ended` (tagged retry-of or blocked-launch), or ''. Only
    for a launch SageMaker `refused` (no job was created) may it carry the same name: trainguard launches a user's
    blocked request under its own name; any other job of that name is `ended` itself, not what replaced it."""
    for call in reversed(calls):
        if call.operation != "CreateTrainingJob" or not call.succeeded or replaced_job(call.params) != ended:
            continue
        if refused or call.params["TrainingJobName"] != ended:
            return str(call.params["TrainingJobName"])
    return ""


def replaced_job(create: dict[str, Any]) -> str:
    """The job a CreateTrainingJob of trainguard's launches in place of: the failed job it relaunches, or the user's
    launch a quota blocked ('' when neither tag is there)."""
    tags = parse_tag_list(create.get("Tags"))
    return tags.get("trainguard:retry-of", tags.get("trainguard:blocked-launch", ""))
