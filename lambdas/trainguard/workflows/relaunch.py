"""Relaunch a failed job from its last checkpoint: plan it, then create it or schedule it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from trainguard.domain.checkpoints import CheckpointState
from trainguard.domain.classification import classify_failure_reason
from trainguard.domain.job_end import Assessment, Refusal, RelaunchPlan, RelaunchSettings, plan_relaunch
from trainguard.domain.model import TrainingJob
from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard.domain.policy import JobPolicy
from trainguard.workflows.ports import GuardPorts, LaunchRefused, LaunchResult, NameTaken


def relaunch_settings(ports: GuardPorts) -> RelaunchSettings:
    return RelaunchSettings(
        passable_role_arns=ports.config.passable_role_arns,
        capacity_backoff_minutes=ports.config.capacity_backoff_minutes,
        capacity_backoff_max_minutes=ports.config.capacity_backoff_max_minutes,
    )


def plan_for(
    ports: GuardPorts,
    job: TrainingJob,
    assessment: Assessment,
    policy: JobPolicy,
    checkpoint: CheckpointState,
    now: datetime,
) -> RelaunchPlan | Refusal:
    return plan_relaunch(
        job,
        assessment,
        policy,
        checkpoint,
        relaunch_settings(ports),
        ports.keys,
        ports.create_request_shape,
        now,
    )


def relaunch_or_schedule(
    ports: GuardPorts,
    job: TrainingJob,
    assessment: Assessment,
    policy: JobPolicy,
    checkpoint: CheckpointState,
    now: datetime,
) -> Outcome:
    plan = plan_for(ports, job, assessment, policy, checkpoint, now)
    if isinstance(plan, Refusal):
        return _not_relaunched(assessment, plan.reason, plan.would_be_job_name, plan.would_send)
    if not ports.ledger.take_retry_budget(now, ports.config.retry_budget_per_hour):
        return _not_relaunched(
            assessment,
            f"the account-wide budget of {ports.config.retry_budget_per_hour} relaunches per hour is spent.",
            plan.new_job_name,
        )
    if plan.delay:
        launch_at = now + plan.delay
        schedule = ports.scheduler.schedule_relaunch(job.name, launch_at, assessment.reason)
        return assessment.outcome(
            OutcomeKind.RELAUNCH_SCHEDULED,
            new_job_name=plan.new_job_name,
            details={
                "launch_at": launch_at.strftime("%Y-%m-%d %H:%M UTC"),
                "schedule": schedule,
                "attempt": plan.lineage.attempt,
                "root_job": plan.lineage.root_job,
            },
        )
    return launch(ports, job, assessment, plan, now)


def launch(
    ports: GuardPorts, job: TrainingJob, assessment: Assessment, plan: RelaunchPlan, now: datetime
) -> Outcome:
    try:
        result = ports.jobs.create(plan.request, job.name, ports.keys.retry_of)
    except LaunchRefused as refused:
        reading = classify_failure_reason(str(refused))
        return _not_relaunched(
            assessment,
            f"SageMaker refused the relaunch {plan.new_job_name}: {refused} ({reading.category.value}: "
            f"{reading.reason})",
            plan.new_job_name,
        )
    except NameTaken as taken:
        return _not_relaunched(assessment, str(taken), plan.new_job_name)
    if result is LaunchResult.CREATED:
        ports.ledger.record_lineage(
            plan.lineage.root_job, plan.lineage.attempt, plan.new_job_name, job.name, now
        )
    return assessment.outcome(
        OutcomeKind.RELAUNCHED,
        new_job_name=plan.new_job_name,
        details={
            "attempt": plan.lineage.attempt,
            "root_job": plan.lineage.root_job,
            "launch": result.value,
            "dropped_fields": list(plan.dropped_fields),
        },
    )


def _not_relaunched(
    assessment: Assessment, why_not: str, would_be: str, would_send: dict[str, Any] | None = None
) -> Outcome:
    details: dict[str, Any] = {"would_be_job_name": would_be} if would_be else {}
    if would_send is not None:
        details["would_send"] = would_send
    return assessment.outcome(
        OutcomeKind.NOT_RELAUNCHED, f"{assessment.reason} Not relaunched: {why_not}", details=details
    )
