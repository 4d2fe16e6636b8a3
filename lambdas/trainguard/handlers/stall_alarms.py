"""Lambda handler: "CloudWatch Alarm State Change" events for trainguard's stall alarms (ALARM)."""

from __future__ import annotations

from typing import Any

from trainguard.domain.outcome import Outcome
from trainguard.domain.stall_alarms import owned_alarm_job
from trainguard.events.alarm_state_change import parse_alarm_state_change
from trainguard.handlers.observability import follow_job, logger, metrics, parsed, recorded
from trainguard.handlers.origin import ports_for_event
from trainguard.handlers.wiring import PortSet, Site
from trainguard.workflows.function_ports import StallAlarmsPorts
from trainguard.workflows.stall_alarm import handle_stall_alarm


def handle(event: Any, ports: StallAlarmsPorts | PortSet | None = None) -> Outcome:
    change = parsed(parse_alarm_state_change, event)
    logger.append_keys(alarm_name=change.alarm_name, event_id=change.event_id)
    watched_job = owned_alarm_job(change.alarm_name)
    if watched_job:
        follow_job(watched_job)
    at_origin = ports_for_event(event, ports, build_ports, watched_job or "")
    if isinstance(at_origin, Outcome):
        return recorded(at_origin)
    return recorded(handle_stall_alarm(at_origin, change))


def build_ports(site: Site) -> StallAlarmsPorts:
    """The stall prober's adapters (its jobs, to stop one; its GPU metrics, the evidence), with the job's logs."""
    from trainguard.adapters.job_activity import JobLogs
    from trainguard.handlers import stall_prober

    return StallAlarmsPorts(**vars(stall_prober.build_ports(site)), job_logs=JobLogs(site.job_clients("logs")))


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event).as_dict()
