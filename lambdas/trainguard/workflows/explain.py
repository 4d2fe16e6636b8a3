"""What trainguard would do with one job or one failure text, offline: the logic the handlers use."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from trainguard.domain.checkpoints import CheckpointState
from trainguard.domain.classification import classify_failure_reason
from trainguard.domain.job_end import RelaunchPlan, RelaunchSettings, assess_job_end, plan_relaunch
from trainguard.domain.model import Decision, TrainingJob
from trainguard.domain.policy import PolicyDefaults, TagKeys, read_job_policy
from trainguard.domain.quotas import NoQuotaRequest, plan_quota_request, read_quota_error

OFFLINE_CHECKPOINT_NOTE = "not listed offline"


def explain_reason(text: str, *, quota_ceiling: float = 64, instance_count: int | None = None) -> dict[str, Any]:
    reading = classify_failure_reason(text)
    answer = _answer(reading.category.value, reading.decision.value, reading.reason)
    if reading.decision is Decision.QUOTA:
        answer["quota_request"] = offline_quota_request(text, quota_ceiling, instance_count)
    return answer


def offline_quota_request(text: str, ceiling: float, instance_count: int | None) -> dict[str, Any] | None:
    """The increase trainguard would ask for, sized from the message alone (offline, the quota's
    current value is taken to be the limit the message states)."""
    demand = read_quota_error(text)
    if demand is None:
        return None
    plan = plan_quota_request(
        demand, current_value=None, launch_instance_count=instance_count, ceilings={}, default_ceiling=ceiling
    )
    if isinstance(plan, NoQuotaRequest):
        return {"quota_name": demand.quota_name, "desired_value": None, "ceiling_applied": False, "reason": plan.reason}
    return plan.as_dict()


def explain_job(
    job: TrainingJob,
    *,
    defaults: PolicyDefaults,
    keys: TagKeys,
    settings: RelaunchSettings,
    create_request_shape: dict[str, Any],
    now: datetime,
    quota_ceiling: float = 64,
) -> dict[str, Any]:
    policy = read_job_policy(job.tags, defaults, keys)
    assessment = assess_job_end(job, policy)
    answer = _answer(assessment.classification.category.value, assessment.decision.value, assessment.reason)
    answer["job_name"] = job.name
    answer["opted_in"] = assessment.opted_in
    answer["tag_problems"] = [p.describe() for p in policy.problems]
    if assessment.decision is Decision.QUOTA:
        count = job.description.get("ResourceConfig", {}).get("InstanceCount")
        answer["quota_request"] = offline_quota_request(
            job.failure_reason, quota_ceiling, count if isinstance(count, int) else None
        )
    if assessment.decision is not Decision.RETRY:
        return answer
    if not job.is_terminal:
        answer.update(decision=Decision.IGNORE.value, reason=f"the job is {job.status}; nothing to do yet")
        return answer
    # Offline, the checkpoint prefix cannot be listed: a configured prefix counts as "may hold one".
    checkpoint = CheckpointState(job.checkpoint_s3_uri, listing_error=OFFLINE_CHECKPOINT_NOTE)
    plan = plan_relaunch(job, assessment, policy, checkpoint, settings, keys, create_request_shape, now)
    if isinstance(plan, RelaunchPlan):
        answer["create_training_job_request"] = plan.request
        answer["new_job_name"] = plan.new_job_name
        answer["delay_minutes"] = int(plan.delay.total_seconds() // 60)
        answer["dropped_fields"] = list(plan.dropped_fields)
    else:
        answer["decision"] = Decision.NOTIFY.value
        answer["reason"] = f"{assessment.reason} Not relaunched: {plan.reason}"
        answer["would_be_job_name"] = plan.would_be_job_name
    return answer


def _answer(category: str, decision: str, reason: str) -> dict[str, Any]:
    return {
        "category": category,
        "decision": decision,
        "reason": reason,
        "create_training_job_request": None,
        "quota_request": None,  # filled by the quota issue
    }
