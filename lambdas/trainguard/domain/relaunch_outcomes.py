"""What a relaunch came to, as the outcome a job-end message tells (messages.compose_job_end_notification):
launched, scheduled, not relaunched and why, met a quota wall. The job-events workflow (workflows/relaunch.py)
builds them from what SageMaker answered it; `trainguard test-notification` from sample facts, so both send the same
sentences."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from trainguard.domain.fallbacks import FallbackKind
from trainguard.domain.job_end import Assessment, RelaunchPlan
from trainguard.domain.model import Classification
from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard.domain.quota_messages import QuotaWallResult


def fallback_details(plan: RelaunchPlan) -> dict[str, Any]:
    if plan.fallback is None:
        return {}
    return {"fallback": plan.fallback.kind.value, "fallback_summary": plan.fallback.summary}


def relaunched(
    assessment: Assessment, plan: RelaunchPlan, launch: str = "created", dropped_fields: tuple[str, ...] = ()
) -> Outcome:
    """Launched as `plan.new_job_name`; `launch`: how CreateTrainingJob answered (created, or already there)."""
    return assessment.outcome(
        OutcomeKind.RELAUNCHED,
        new_job_name=plan.new_job_name,
        details={
            "attempt": plan.lineage.attempt,
            "root_job": plan.lineage.root_job,
            "launch": launch,
            "dropped_fields": list(dropped_fields),
            **fallback_details(plan),
        },
    )


def relaunch_scheduled(assessment: Assessment, plan: RelaunchPlan, launch_at: datetime, schedule: str) -> Outcome:
    """Scheduled for `launch_at` (a capacity backoff); `schedule`: the EventBridge Scheduler schedule's name."""
    return assessment.outcome(
        OutcomeKind.RELAUNCH_SCHEDULED,
        new_job_name=plan.new_job_name,
        details={
            "launch_at": launch_at.strftime("%Y-%m-%d %H:%M UTC"),
            "schedule": schedule,
            "attempt": plan.lineage.attempt,
            "root_job": plan.lineage.root_job,
            **fallback_details(plan),
        },
    )


def not_relaunched(
    assessment: Assessment, why_not: str, would_be: str, would_send: dict[str, Any] | None = None
) -> Outcome:
    details: dict[str, Any] = {"would_be_job_name": would_be} if would_be else {}
    if would_send is not None:
        details["would_send"] = would_send
    return assessment.outcome(
        OutcomeKind.NOT_RELAUNCHED, f"{assessment.reason} Not relaunched: {why_not}", details=details
    )


def relaunch_refused(new_job_name: str, refusal: str, reading: Classification) -> str:
    """Why not relaunched when SageMaker refused the launch: its answer, and trainguard's reading of it."""
    return f"SageMaker refused the relaunch {new_job_name}: {refusal} ({reading.category.value}: {reading.reason})"


def quota_wall_met(assessment: Assessment, plan: RelaunchPlan, wall: QuotaWallResult) -> Outcome:
    """A quota refused the relaunch: relaunched meanwhile on an alternative whose quota has room, or waiting."""
    details = {"quota_summary": wall.summary, "quota_request": wall.quota_request, "waiting": wall.waiting}
    if wall.launched_on:
        return assessment.outcome(
            OutcomeKind.RELAUNCHED,
            f"{assessment.reason} A quota blocks the relaunch as it was.",
            plan.new_job_name,
            {
                **details,
                "attempt": plan.lineage.attempt,
                "root_job": plan.lineage.root_job,
                "fallback": FallbackKind.QUOTA_ROOM.value,
                "fallback_summary": wall.summary,
            },
        )
    return assessment.outcome(
        OutcomeKind.QUOTA_WALL, f"{assessment.reason} A quota blocks the relaunch.", plan.new_job_name, details
    )
