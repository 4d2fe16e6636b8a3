"""What trainguard does about a slowdown or a divergence (progress_findings.py): tell it, and with the owner's leave
act on it, re-checked on the job as it is at that moment (docs/pace.md, "What trainguard does").

- A slowdown, with `relaunch-if-slow=true`: stop the job, and relaunch it from its checkpoint on new instances, with
  SageMaker's instance health checks (InfraCheckConfig) where the deployer turned them on for host faults; never for
  a job a parent owns (its parent relaunches).
- A divergence, with `stop-if-diverged=true`: stop the job, never relaunch it (the same data and seed would diverge
  again); a parent's job too, as a verified hang is, unless the deployer turned stop_stalled_parent_jobs off: its
  parent decides what follows. A job both slow and diverged is never stopped to be relaunched.
Nothing without the leave, in dry run (the deployer's or the job's), when the job's `actions` tag leaves out what
the action needs, or when the job no longer trains.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainguard.domain.model import Category, Classification, Decision, TrainingJob
from trainguard.domain.ownership import Parent
from trainguard.domain.policy import JobPolicy, TagKeys
from trainguard.domain.progress_findings import FindingKind


@dataclass(frozen=True)
class DeployerSettings:
    """The deployer's settings a finding's action follows: `dry_run`, `infra_check_after_host_faults` (a slow job's
    relaunch asks for the instance health checks) and `stop_stalled_parent_jobs` (a parent's diverged job is stopped,
    as its verified hang is)."""

    dry_run: bool = False
    infra_check: bool = False
    stop_parent_jobs: bool = True


@dataclass(frozen=True)
class FindingDecision:
    """Whether to stop the job for the finding, and what the message says trainguard did (or why not)."""

    stop: bool
    did: str


def decide_on_finding(
    kind: FindingKind,
    job: TrainingJob,
    policy: JobPolicy,
    parent: Parent | None,
    keys: TagKeys,
    *,
    deployer: DeployerSettings,
    diverged_too: bool = False,
) -> FindingDecision:
    """The decision on a finding of `kind`, from the job as described now and its policy read from its tags now;
    `diverged_too`: a slowdown of a job whose loss has diverged as well (never relaunched)."""
    slowdown = kind is FindingKind.SLOWDOWN
    leave_key = keys.relaunch_if_slow if slowdown else keys.stop_if_diverged
    leave = policy.relaunch_if_slow if slowdown else policy.stop_if_diverged
    told = "Nothing to the job: it keeps training. trainguard tells you once for this launch"
    needs = ("stop", "retry") if slowdown else ("stop",)
    if not policy.enabled:
        return FindingDecision(False, f"{told}: the job is no longer opted in: {policy.why_not_enabled}.")
    if not leave:
        return FindingDecision(False, f"{told}. With the tag {leave_key}=true, it would {_would(kind)}.")
    if job.status != "InProgress" or job.secondary_status != "Training":
        return FindingDecision(
            False,
            f"Nothing: the job no longer trains ({job.status}, {job.secondary_status}). Told once for this launch.",
        )
    if deployer.dry_run or policy.dry_run:
        where = "the deployer's setting dry_run" if deployer.dry_run else f"its tag {keys.dry_run} or {keys.actions}"
        return FindingDecision(False, f"{told}: the job is in dry run, by {where}; it would {_would(kind)}.")
    missing = [action for action in needs if not policy.allows(action)]
    if missing:
        return FindingDecision(False, f"{told}: its tag {keys.actions} does not allow {' or '.join(missing)}.")
    if slowdown and diverged_too:
        return FindingDecision(False, f"{told}: its loss has diverged too, and a diverged run is never relaunched.")
    if slowdown and parent is not None:
        return FindingDecision(False, f"{told}: {parent.kind.name} owns it, and relaunches it, not trainguard.")
    if parent is not None and not deployer.stop_parent_jobs:
        return FindingDecision(
            False, f"{told}: {parent.kind.name} owns it, and the setting stop_stalled_parent_jobs is off."
        )
    if slowdown:
        checks = (
            "with SageMaker's instance health checks on, InfraCheckConfig"
            if deployer.infra_check
            else "without SageMaker's instance health checks: the setting infra_check_after_host_faults is off"
        )
        return FindingDecision(
            True,
            "Stopped it (StopTrainingJob), as its tag allows; its end relaunches it from its newest checkpoint on "
            f"new instances, {checks}.",
        )
    owner = f" It belongs to {parent.kind.name}, which decides what follows. {parent.kind.after_stop}" if parent else ""
    return FindingDecision(True, f"Stopped it (StopTrainingJob), as its tag allows; it is not relaunched.{owner}")


def _would(kind: FindingKind) -> str:
    if kind is FindingKind.SLOWDOWN:
        return "stop it and relaunch it from its newest checkpoint on new instances"
    return "stop it, and not relaunch it"


def stop_classification(stall_reason: str, finding: str) -> Classification:
    """What a stop of trainguard's own (a stall's, or a finding's) reads as at the job's end: a stall or a slowdown
    is relaunched from the last checkpoint (a slow one with the instance health checks on: job_end.py's
    HOST_FAULT_CATEGORIES), a divergence never; its stop's message told the owner."""
    if finding == "slowdown":
        return Classification(
            Category.SLOWDOWN,
            Decision.RETRY,
            f"trainguard stopped the job as slow, as its tag allows ({stall_reason}); a relaunch from the last "
            "checkpoint puts it on new instances.",
        )
    if finding == "diverged":
        return Classification(
            Category.DIVERGED,
            Decision.IGNORE,
            f"trainguard stopped the job as diverged, as its tag allows ({stall_reason}); it is not relaunched, as "
            "the same data and seed would diverge again. The owner was told when it was stopped.",
        )
    return Classification(
        Category.STALL,
        Decision.RETRY,
        f"trainguard stopped the job as stalled ({stall_reason}); a relaunch from the last checkpoint "
        "gets fresh hosts and a fresh process group.",
    )
