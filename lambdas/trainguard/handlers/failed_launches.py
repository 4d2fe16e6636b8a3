"""Lambda handler: "AWS API Call via CloudTrail" events for a CreateTrainingJob that failed with
ResourceLimitExceeded (an optional rule; it needs a CloudTrail trail, see docs/deploying.md)."""

from __future__ import annotations

from typing import Any

from trainguard.domain.outcome import Outcome
from trainguard.events.cloudtrail import parse_failed_launch
from trainguard.handlers.observability import follow_job, logger, metrics, parsed, recorded
from trainguard.handlers.origin import from_elsewhere
from trainguard.handlers.wiring import ports_or_production
from trainguard.workflows.function_ports import FailedLaunchesPorts
from trainguard.workflows.launch_blocked import handle_blocked_launch


def handle(event: Any, ports: FailedLaunchesPorts | None = None) -> Outcome:
    launch = parsed(parse_failed_launch, event)
    if isinstance(launch, Outcome):
        return launch
    follow_job(launch.job_name, event_id=launch.event_id)
    ports = ports_or_production(ports, FailedLaunchesPorts)
    if elsewhere := from_elsewhere(event, ports.config, ports.region, launch.job_name):
        return recorded(elsewhere)
    return recorded(handle_blocked_launch(ports, launch))


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event).as_dict()
