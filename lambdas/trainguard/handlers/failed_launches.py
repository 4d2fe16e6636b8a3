"""Lambda handler: "AWS API Call via CloudTrail" events for a CreateTrainingJob that failed with
ResourceLimitExceeded (an optional rule; it needs a CloudTrail trail, see docs/deploying.md)."""

from __future__ import annotations

from typing import Any

from trainguard.domain.outcome import Outcome
from trainguard.events.cloudtrail import parse_failed_launch
from trainguard.handlers.observability import follow_job, logger, metrics, parsed, recorded
from trainguard.handlers.origin import ports_for_event
from trainguard.handlers.wiring import PortSet, Site
from trainguard.workflows.function_ports import FailedLaunchesPorts
from trainguard.workflows.launch_blocked import handle_blocked_launch


def handle(event: Any, ports: FailedLaunchesPorts | PortSet | None = None) -> Outcome:
    launch = parsed(parse_failed_launch, event)
    follow_job(launch.job_name, event_id=launch.event_id)
    at_origin = ports_for_event(event, ports, build_ports, launch.job_name)
    if isinstance(at_origin, Outcome):
        return recorded(at_origin)
    return recorded(handle_blocked_launch(at_origin, launch))


def build_ports(site: Site) -> FailedLaunchesPorts:
    """What meeting a quota wall takes (the quota watch's adapters), with the request shape a fallback launch is
    built to."""
    from trainguard.adapters.service_model import create_training_job_shape
    from trainguard.handlers import quota_watch

    quota_wall = quota_watch.build_ports(site)
    shape = create_training_job_shape(site.clients("sagemaker").meta.service_model)
    return FailedLaunchesPorts(**vars(quota_wall), create_request_shape=shape)


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event).as_dict()
