"""Lambda handler: a delayed relaunch, invoked by an EventBridge Scheduler one-time schedule.

Input (set by adapters/scheduler.py): {"failed_job_name": "...", "reason": "..."}, and in an organization's hub,
for a job in a spoke, its "account" and "region" (the relaunch is made there, handlers/origin.py).
"""

from __future__ import annotations

from typing import Any

from trainguard.domain.outcome import Outcome
from trainguard.events.training_job import MalformedInput
from trainguard.handlers.observability import follow_job, logger, metrics, parsed, recorded
from trainguard.handlers.origin import ports_for_event
from trainguard.handlers.wiring import PortSet, Site, ports_or_production
from trainguard.workflows.function_ports import RetryLauncherPorts
from trainguard.workflows.scheduled_relaunch import handle_scheduled_relaunch


def handle(event: Any, ports: RetryLauncherPorts | PortSet | None = None) -> Outcome:
    name = parsed(failed_job_name, event)
    follow_job(name)
    if "account" in event or "region" in event:  # a spoke's job: its account and region, checked as an event's
        at_origin = ports_for_event(event, ports, build_ports, name)
    else:
        at_origin = ports_or_production(ports, build_ports)
    if isinstance(at_origin, Outcome):
        return recorded(at_origin)
    return recorded(handle_scheduled_relaunch(at_origin, name))


def failed_job_name(event: Any) -> str:
    """The schedule's input (adapters/scheduler.py writes it): the failed job to relaunch."""
    name = event.get("failed_job_name") if isinstance(event, dict) else None
    if not isinstance(name, str) or not name:
        raise MalformedInput("a scheduled relaunch without failed_job_name")
    return name


def build_ports(site: Site) -> RetryLauncherPorts:
    """What meeting a quota wall takes (the quota watch's adapters), with the checkpoints, the stall records and
    the request shape a relaunch is built to."""
    from trainguard.adapters.checkpoints import CheckpointReader
    from trainguard.adapters.service_model import create_training_job_shape
    from trainguard.adapters.stall_ledger import StallLedger
    from trainguard.handlers import quota_watch

    return RetryLauncherPorts(
        **vars(quota_watch.build_ports(site)),
        checkpoints=CheckpointReader(site.job_clients("s3")),
        stall_ledger=StallLedger(*site.ledger_table),
        create_request_shape=create_training_job_shape(site.clients("sagemaker").meta.service_model),
    )


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event).as_dict()
