"""Lambda handler: the CloudWatch Logs subscription on /aws/sagemaker/TrainingJobs. It keeps each
watched job's newest log line and its log rhythm in the ledger, where the stall prober reads them every minute.

In an organization's hub it also takes the spokes' deliveries, which each spoke's log forwarder puts on the hub's
bus (infra/spoke_log_forwarder.py): recorded for the job of the account and region that sent them
(handlers/origin.py), in that place's records.

A line stamped later than the event that carried it (its EventBridge `time` for a spoke's, this function's clock
for its own account's), plus domain/log_clock.py's skew, is refused: logged, counted (LogLinesFromTheFuture) and
never recorded, so a forged future time cannot make the later real lines look old."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from trainguard.domain.log_clock import latest_believable_time
from trainguard.domain.outcome import Outcome
from trainguard.events.log_subscription import is_forwarded_log_lines, parse_believable_delivery
from trainguard.events.times import parse_aws_time
from trainguard.handlers.observability import logger, metrics, parsed
from trainguard.handlers.origin import ports_for_event
from trainguard.handlers.wiring import PortSet, Site, ports_or_production
from trainguard.metric_names import LOG_LINES_FROM_THE_FUTURE
from trainguard.workflows.function_ports import LogActivityPorts
from trainguard.workflows.log_activity import record_activity


def handle(event: Any, ports: LogActivityPorts | PortSet | None = None) -> dict[str, Any]:
    delivery, sent_at = event, None
    if is_forwarded_log_lines(event):
        at_origin = ports_for_event(event, ports, build_ports, "")
        if isinstance(at_origin, Outcome):
            return {"recorded": False, "reason": at_origin.reason}
        ports, delivery, sent_at = at_origin, event.get("detail"), parse_aws_time(event.get("time"))
    ports = ports_or_production(ports, build_ports)
    latest = latest_believable_time(sent_at, ports.clock())
    # A malformed delivery is counted and raised (observability.parsed).
    believed = parsed(lambda raw: parse_believable_delivery(raw, latest), delivery)
    if believed.refused:
        logger.warning(
            "log lines stamped after their event refused",
            job_name=believed.job_name,
            refused=believed.refused,
            latest_believable=latest.isoformat(),
        )
        metrics.add_metric(name=LOG_LINES_FROM_THE_FUTURE, unit=MetricUnit.Count, value=believed.refused)
    activity = believed.activity
    if activity is None:
        return {
            "recorded": False,
            "reason": "nothing to record (control message, empty, not a training stream, "
            f"or {believed.refused} lines stamped after {latest.isoformat()})",
        }
    recorded = record_activity(ports, activity)
    return {"recorded": recorded, "job_name": activity.job_name, "newest": activity.newest.isoformat()}


def build_ports(site: Site) -> LogActivityPorts:
    """This function's one adapter: the watch list's entries in the ledger."""
    from trainguard.adapters.stall_ledger import StallLedger

    return LogActivityPorts(**site.settled, stall_ledger=StallLedger(*site.ledger_table))


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event)
