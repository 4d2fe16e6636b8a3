"""Lambda handler: "CloudWatch Alarm State Change" events for trainguard's stall alarms (ALARM)."""

from __future__ import annotations

from typing import Any

from trainguard.domain.outcome import Outcome, skipped
from trainguard.domain.stall_alarms import owned_alarm_job
from trainguard.events.alarm_state_change import parse_alarm_state_change
from trainguard.events.training_job import MalformedInput
from trainguard.handlers.observability import follow_job, logger, metrics, record_malformed, record_outcome
from trainguard.handlers.wiring import ports_or_production
from trainguard.workflows.ports import GuardPorts
from trainguard.workflows.stall_alarm import handle_stall_alarm


def handle(event: Any, ports: GuardPorts | None = None) -> Outcome:
    try:
        change = parse_alarm_state_change(event)
    except MalformedInput as err:
        record_malformed(str(err))
        return skipped("", f"malformed event: {err}")
    logger.append_keys(alarm_name=change.alarm_name, event_id=change.event_id)
    watched_job = owned_alarm_job(change.alarm_name)
    if watched_job:
        follow_job(watched_job)
    outcome = handle_stall_alarm(ports_or_production(ports), change)
    record_outcome(outcome)
    return outcome


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event).as_dict()
