"""Lambda handler: the CloudWatch Logs subscription on /aws/sagemaker/TrainingJobs. It keeps each
watched job's newest log line and its log rhythm in the ledger, where the stall prober reads them every minute.

In an organization's hub it also takes the spokes' deliveries, which each spoke's log forwarder puts on the hub's
bus (infra/spoke_log_forwarder.py): recorded for the job of the account and region that sent them
(handlers/origin.py), in that place's records."""

from __future__ import annotations

from typing import Any

from trainguard.domain.outcome import Outcome
from trainguard.events.log_subscription import is_forwarded_log_lines, parse_log_delivery
from trainguard.handlers.observability import logger, metrics, parsed
from trainguard.handlers.origin import ports_for_event
from trainguard.handlers.wiring import PortSet, ports_or_production
from trainguard.workflows.function_ports import LogActivityPorts
from trainguard.workflows.log_activity import record_activity


def handle(event: Any, ports: LogActivityPorts | PortSet | None = None) -> dict[str, Any]:
    delivery = event
    if is_forwarded_log_lines(event):
        at_origin = ports_for_event(event, ports, LogActivityPorts, "")
        if isinstance(at_origin, Outcome):
            return {"recorded": False, "reason": at_origin.reason}
        ports, delivery = at_origin, event.get("detail")
    activity = parsed(parse_log_delivery, delivery)  # a malformed delivery is counted and raised
    if activity is None:
        return {"recorded": False, "reason": "nothing to record (control message, empty, or not a training stream)"}
    ports = ports_or_production(ports, LogActivityPorts)
    recorded = record_activity(ports, activity)
    return {"recorded": recorded, "job_name": activity.job_name, "newest": activity.newest.isoformat()}


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event)
