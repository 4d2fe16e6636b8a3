"""Lambda handler: a delayed relaunch, invoked by an EventBridge Scheduler one-time schedule.

Input (set by adapters/scheduler.py): {"failed_job_name": "...", "reason": "..."}.
"""

from __future__ import annotations

from typing import Any

from trainguard.domain.outcome import Outcome
from trainguard.events.training_job import MalformedInput
from trainguard.handlers.observability import follow_job, logger, metrics, parsed, recorded
from trainguard.handlers.wiring import ports_or_production
from trainguard.workflows.function_ports import RetryLauncherPorts
from trainguard.workflows.scheduled_relaunch import handle_scheduled_relaunch


def handle(event: Any, ports: RetryLauncherPorts | None = None) -> Outcome:
    name = parsed(failed_job_name, event)
    if isinstance(name, Outcome):
        return name
    follow_job(name)
    return recorded(handle_scheduled_relaunch(ports_or_production(ports, RetryLauncherPorts), name))


def failed_job_name(event: Any) -> str:
    """The schedule's input (adapters/scheduler.py writes it): the failed job to relaunch."""
    name = event.get("failed_job_name") if isinstance(event, dict) else None
    if not isinstance(name, str) or not name:
        raise MalformedInput("a scheduled relaunch without failed_job_name")
    return name


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event).as_dict()
