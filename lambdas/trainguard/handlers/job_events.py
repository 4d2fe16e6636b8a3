"""Lambda handler: "SageMaker Training Job State Change" events from EventBridge."""

from __future__ import annotations

from typing import Any

from trainguard.domain.outcome import Outcome, skipped
from trainguard.events.state_change import TrainingJobStateChange, parse_state_change
from trainguard.handlers.observability import follow_job, logger, metrics, parsed, recorded
from trainguard.handlers.origin import ports_for_event
from trainguard.handlers.wiring import PortSet, Site
from trainguard.workflows.function_ports import JobEventsPorts
from trainguard.workflows.job_ended import handle_job_end
from trainguard.workflows.stall_watch import WATCHED_STATUSES, follow_training_state, stop_watching

ACTIONABLE_STATUSES = ("Failed", "Stopped")


def handle(event: Any, ports: JobEventsPorts | PortSet | None = None) -> Outcome:
    change = parsed(parse_state_change, event)
    follow_job(change.job.name, event_id=change.event_id)
    at_origin = ports_for_event(event, ports, build_ports, change.job.name)
    if isinstance(at_origin, Outcome):
        return recorded(at_origin)
    return recorded(follow_state(at_origin, change))


def follow_state(ports: JobEventsPorts, change: TrainingJobStateChange) -> Outcome:
    """What a job's new status asks for: watch it while it trains; when it ends, what the retry launcher does."""
    status = change.job.status
    if status in WATCHED_STATUSES:
        outcome = follow_training_state(ports, change.job.name)
    elif status in ACTIONABLE_STATUSES:
        follow_job(change.job.name, change.job.tags, ports.config.tag_prefix, event_id=change.event_id)
        stop_watching(ports, change.job.name)
        outcome = handle_job_end(ports, change.job.name)
    elif status == "Completed":
        stop_watching(ports, change.job.name)
        outcome = skipped(change.job.name, "status Completed: nothing to do but stop watching it")
    else:
        outcome = skipped(change.job.name, f"status {status} needs no action")
    return outcome


def build_ports(site: Site) -> JobEventsPorts:
    """The retry launcher's adapters, with the relaunch schedules and the job's stall alarms."""
    from trainguard.adapters.alarms import StallAlarms
    from trainguard.adapters.scheduler import RelaunchScheduler
    from trainguard.handlers import retry_launcher

    config = site.config
    return JobEventsPorts(
        **vars(retry_launcher.build_ports(site)),
        scheduler=RelaunchScheduler(
            site.clients("scheduler"),
            group_name=config.schedule_group_name,
            target_arn=config.retry_launcher_arn,
            role_arn=config.scheduler_role_arn,
            spoke=site.spoke,
        ),
        alarms=StallAlarms(site.job_clients("cloudwatch")),
    )


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event).as_dict()
