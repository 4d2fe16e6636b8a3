"""Lambda handler: a delayed relaunch, invoked by an EventBridge Scheduler one-time schedule.

Input (set by adapters/scheduler.py): {"failed_job_name": "...", "reason": "..."}.
"""

from __future__ import annotations

from typing import Any

from trainguard.domain.outcome import Outcome, skipped
from trainguard.handlers.observability import follow_job, logger, metrics, record_malformed, record_outcome
from trainguard.handlers.wiring import ports_or_production
from trainguard.workflows.ports import GuardPorts
from trainguard.workflows.scheduled_relaunch import handle_scheduled_relaunch


def handle(event: Any, ports: GuardPorts | None = None) -> Outcome:
    name = event.get("failed_job_name") if isinstance(event, dict) else None
    if not isinstance(name, str) or not name:
        record_malformed("a scheduled relaunch without failed_job_name")
        return skipped("", "malformed schedule input: failed_job_name is missing")
    follow_job(name)
    outcome = handle_scheduled_relaunch(ports_or_production(ports), name)
    record_outcome(outcome)
    return outcome


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event).as_dict()
