"""What to do when an opted-in training job ends: assess it, then plan the relaunch.

Two pure steps, with I/O between them done by the caller:
1. `assess_job_end` needs only the described job and its policy.
2. `plan_relaunch` also needs the checkpoint listing, the lineage and the settings, and
   returns either a `RelaunchPlan` or a `Refusal` that says why not.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from trainguard.domain.checkpoints import CheckpointState
from trainguard.domain.classification import classify_job_end
from trainguard.domain.fallback_options import FallbackOptions, LaunchBounds, read_fallback_options, types_outside
from trainguard.domain.fallbacks import Fallback, JobFacts, plan_fallback, spot_failures_now
from trainguard.domain.finding_actions import stop_classification
from trainguard.domain.model import Category, Classification, Decision, TextSource, TrainingJob
from trainguard.domain.naming import retry_job_name
from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard.domain.ownership import Parent, decide_after_stall_stop, decide_for_owned_job, find_parent
from trainguard.domain.policy import JobPolicy, TagKeys
from trainguard.domain.request_builder import RelaunchImpossible, Shape, build_relaunch_request
from trainguard.domain.wording import counted

DELAYED_CATEGORIES = frozenset({Category.CAPACITY, Category.SPOT_INTERRUPTION})
# Failures of a host or of the network between hosts: a relaunch may ask SageMaker to check the new hosts first
# (InfraCheckConfig: "A SageMaker-provided health check tests the health of instance hardware and cluster network
# connectivity", https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_InfraCheckConfig.html).
HOST_FAULT_CATEGORIES = frozenset({Category.HARDWARE, Category.COLLECTIVE_TIMEOUT, Category.SLOWDOWN})


@dataclass(frozen=True)
class Assessment:
    job_name: str
    opted_in: bool
    classification: Classification
    decision: Decision
    reason: str
    owner: str = ""  # the parent that owns the job ("" when none): trainguard leaves the job to it

    def outcome(
        self,
        kind: OutcomeKind,
        reason: str | None = None,
        new_job_name: str = "",
        details: dict[str, Any] | None = None,
    ) -> Outcome:
        """What was done about this job, labelled with this assessment's decision and category."""
        return Outcome(
            kind,
            self.job_name,
            self.reason if reason is None else reason,
            self.decision,
            self.classification.category,
            new_job_name,
            {**({"owner": self.owner} if self.owner else {}), **(details or {})},
        )


@dataclass(frozen=True)
class Lineage:
    root_job: str
    attempt: int  # 0 for the job the user launched, n for trainguard's n-th relaunch


@dataclass(frozen=True)
class RelaunchSettings:
    passable_role_arns: tuple[str, ...]
    capacity_backoff_minutes: int
    capacity_backoff_max_minutes: int
    infra_check_after_host_faults: bool = False
    # The deployer's bound on every launch (setting launchable_instance_types); empty: same shape only.
    launchable_instance_types: tuple[str, ...] = ()


@dataclass(frozen=True)
class RelaunchPlan:
    failed_job: str
    new_job_name: str
    lineage: Lineage  # the new job's lineage
    delay: timedelta
    request: dict[str, Any]
    reason: str
    dropped_fields: tuple[str, ...] = field(default=())
    fallback: Fallback | None = None  # what the owner's fallback tags changed, if anything
    bounds: LaunchBounds | None = None  # what a fallback may grow to (None: no fallback at all)


@dataclass(frozen=True)
class Refusal:
    """trainguard will not relaunch; `reason` says why, and a person is told."""

    reason: str
    would_be_job_name: str = ""
    would_send: dict[str, Any] | None = None  # the request a dry run would have sent


def assess_job_end(job: TrainingJob, policy: JobPolicy, stall_reason: str = "", finding: str = "") -> Assessment:
    """`stall_reason`: set when trainguard itself stopped this job (its ledger says why); `finding`: "slowdown" or
    "diverged" when it stopped it for what its step lines showed, with its owner's leave (finding_actions.py)."""
    classification = classify_job_end(
        job.status, job.secondary_status, job.failure_reason, managed_spot=job.managed_spot
    )
    stopped_by_us = bool(stall_reason) and job.status == "Stopped"
    if stopped_by_us:
        classification = stop_classification(stall_reason, finding)
    if not policy.enabled:
        return Assessment(job.name, False, classification, Decision.IGNORE, f"not opted in: {policy.why_not_enabled}")
    parent = managing_parent(job)
    if parent is not None and stopped_by_us and classification.category is Category.STALL:
        decision, reason = decide_after_stall_stop(parent, stall_reason)
        return Assessment(job.name, True, classification, decision, reason, parent.describe())
    if parent is not None and stopped_by_us:  # a finding: the stop's own message told the owner
        reason = f"{classification.reason} It belongs to {parent.describe()}, which decides what follows."
        return Assessment(job.name, True, classification, Decision.IGNORE, reason, parent.describe())
    if parent is not None:
        return _left_to_parent(job, classification, parent)
    decision, reason = classification.decision, classification.reason
    if classification.category is Category.MAX_RUNTIME and policy.continue_after_max_runtime:
        decision = Decision.RETRY
        reason = (
            "The job reached its MaxRuntimeInSeconds; its continue-after-max-runtime tag asks trainguard "
            "to continue it from the last checkpoint."
        )
    return Assessment(job.name, True, classification, decision, reason)


def _left_to_parent(job: TrainingJob, classification: Classification, parent: Parent) -> Assessment:
    decision, reason = decide_for_owned_job(classification, parent)
    return Assessment(job.name, True, classification, decision, reason, parent.describe())


def managing_parent(job: TrainingJob) -> Parent | None:
    """The service that launched and owns this training job, or None."""
    return find_parent(job_name=job.name, description=job.description, tags=job.tags)


def read_lineage(job: TrainingJob, keys: TagKeys) -> Lineage:
    """The lineage the failed job belongs to, from the tags trainguard wrote when it launched it."""
    root = job.tags.get(keys.root_job, "").strip() or job.name
    raw_attempt = job.tags.get(keys.attempt, "0").strip()
    attempt = int(raw_attempt) if re.fullmatch(r"[0-9]{1,3}", raw_attempt) else 0
    return Lineage(root_job=root, attempt=attempt)


def plan_relaunch(
    job: TrainingJob,
    assessment: Assessment,
    policy: JobPolicy,
    checkpoint: CheckpointState,
    settings: RelaunchSettings,
    keys: TagKeys,
    create_request_shape: Shape,
    now: datetime,
    *,
    lineage_start: Mapping[str, Any] | None,
) -> RelaunchPlan | Refusal:
    """`lineage_start`: the ResourceConfig the lineage's first job was launched with (domain/lineage.py), None when
    it cannot be told."""
    lineage = read_lineage(job, keys)
    attempt = lineage.attempt + 1
    new_name = retry_job_name(lineage.root_job, attempt)
    refused = _why_not_relaunched(job, lineage, policy, checkpoint, settings, keys)
    if refused:
        return Refusal(refused, new_name if lineage.attempt < policy.max_retries else "")
    tags = _relaunch_tags(job, keys, lineage.root_job, attempt)
    try:
        built = build_relaunch_request(job.description, create_request_shape, new_job_name=new_name, tags=tags)
    except RelaunchImpossible as err:
        return Refusal(f"the relaunch request cannot be built: {err}.", new_name)
    request = built.request
    category = assessment.classification.category
    if settings.infra_check_after_host_faults and category in HOST_FAULT_CATEGORIES:
        request = {**request, "InfraCheckConfig": {"EnableInfraCheck": True}}
    bounds = LaunchBounds(settings.launchable_instance_types, lineage_start)
    fallback = _fallback(job, assessment.classification, request, keys, bounds)
    if fallback is not None:
        request = fallback.request
    # A fallback runs now, on what the owner allowed; only the same launch again waits for capacity to come back.
    delay = timedelta(0) if fallback else _backoff(category, attempt, settings)
    if not policy.allows("retry"):
        when = f" after a {int(delay.total_seconds() // 60)} min backoff" if delay else ""
        changed = f" {fallback.summary}" if fallback else ""
        return Refusal(
            f"dry run: trainguard would relaunch it as {new_name}{when}, but does nothing.{changed}", new_name, request
        )
    return RelaunchPlan(
        job.name,
        new_name,
        Lineage(lineage.root_job, attempt),
        delay,
        request,
        assessment.reason,
        built.dropped,
        fallback,
        bounds,
    )


def _why_not_relaunched(
    job: TrainingJob,
    lineage: Lineage,
    policy: JobPolicy,
    checkpoint: CheckpointState,
    settings: RelaunchSettings,
    keys: TagKeys,
) -> str:
    """What forbids any relaunch of this job ('' when nothing does): the lineage's limit, no checkpoint, the role."""
    if lineage.attempt >= policy.max_retries == 0:
        return "the job's retry limit is 0 relaunches; a person should look."
    if lineage.attempt >= policy.max_retries:
        return (
            f"this lineage has used the {counted(policy.max_retries, 'relaunch', 'relaunches')} it may have: "
            f"{job.name} came after {counted(lineage.attempt, 'relaunch', 'relaunches')} of {lineage.root_job}. "
            "A person should look."
        )
    if not checkpoint.configured and not policy.restart_without_checkpoint:
        return (
            "the job has no CheckpointConfig, so a relaunch would start from scratch; trainguard does not do "
            f"that unless the job is tagged {keys.restart_without_checkpoint}=true."
        )
    if checkpoint.is_empty and not policy.restart_without_checkpoint:
        return (
            f"no checkpoint has been written to {checkpoint.s3_uri} yet, so a relaunch would start from "
            f"scratch; trainguard does not do that unless the job is tagged {keys.restart_without_checkpoint}=true."
        )
    outside = types_outside(job.description.get("ResourceConfig"), settings.launchable_instance_types)
    if outside:
        return (
            f"its instance type {outside} is not one the deployment lets trainguard launch (setting "
            "launchable_instance_types)."
        )
    role = str(job.description.get("RoleArn", ""))
    if role not in settings.passable_role_arns:
        return (
            f"the job's execution role {role or '(none)'} is not one trainguard may pass to SageMaker "
            "(setting passable_role_arns)."
        )
    return ""


def _fallback(
    job: TrainingJob,
    reading: Classification,
    request: dict[str, Any],
    keys: TagKeys,
    bounds: LaunchBounds,
) -> Fallback | None:
    """The fallback the owner's tags allow for this failure, with the lineage's spot-failure count carried on the
    request's tags (dropped once the job is on-demand). Words the training script wrote buy none (TextSource)."""
    spot = job.description.get("EnableManagedSpotTraining") is True
    raw = job.tags.get(keys.spot_failures, "0").strip()
    trusted = reading.source is not TextSource.TRAINING_SCRIPT
    category = reading.category if trusted else Category.UNKNOWN  # counts no spot failure, calls for no fallback
    failures = spot_failures_now(category, spot, int(raw) if re.fullmatch(r"[0-9]{1,3}", raw) else 0)
    facts = JobFacts(spot=spot, spot_failures=failures, billable_fraction=_billable_fraction(job.description))
    options = read_fallback_options(job.tags, keys) if trusted else FallbackOptions()
    fallback = plan_fallback(category, request, facts, options, bounds)
    target = fallback.request if fallback else request
    still_spot = target.get("EnableManagedSpotTraining") is True
    tags = [t for t in target.get("Tags", []) if t.get("Key") != keys.spot_failures]
    if still_spot and failures:
        tags.append({"Key": keys.spot_failures, "Value": str(failures)})
    target["Tags"] = tags
    return fallback


def _billable_fraction(description: dict[str, Any]) -> float | None:
    """BillableTimeInSeconds / TrainingTimeInSeconds: what a spot job paid of its training time ("the savings from
    using managed spot training [...] (1 - BillableTimeInSeconds / TrainingTimeInSeconds) * 100", botocore)."""
    billable, training = description.get("BillableTimeInSeconds"), description.get("TrainingTimeInSeconds")
    if type(billable) is int and type(training) is int and training > 0:
        return min(billable / training, 1.0)
    return None


def _backoff(category: Category, attempt: int, settings: RelaunchSettings) -> timedelta:
    """Capacity comes back with time: wait longer after each attempt. Other retries go at once."""
    if category not in DELAYED_CATEGORIES:
        return timedelta(0)
    minutes = min(settings.capacity_backoff_minutes * 2 ** (attempt - 1), settings.capacity_backoff_max_minutes)
    return timedelta(minutes=minutes)


def _relaunch_tags(job: TrainingJob, keys: TagKeys, root: str, attempt: int) -> dict[str, str]:
    lineage_keys = {keys.root_job, keys.attempt, keys.retry_of}
    tags = {
        key: value for key, value in job.tags.items() if not key.lower().startswith("aws:") and key not in lineage_keys
    }
    tags[keys.enabled] = "true"
    tags[keys.root_job] = root
    tags[keys.attempt] = str(attempt)
    tags[keys.retry_of] = job.name
    return tags


@dataclass(frozen=True)
class EndedJob:
    """A job that ended, as it is now (described again), with its policy and what its end calls for."""

    job: TrainingJob
    policy: JobPolicy
    assessment: Assessment
