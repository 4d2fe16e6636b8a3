"""Lambda handler: the stall prober, on an EventBridge schedule every minute."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from trainguard.handlers.observability import logger, metrics, record_outcome
from trainguard.handlers.wiring import ports_or_production
from trainguard.metric_names import PROBER_CYCLES, WATCHED_JOBS
from trainguard.workflows.function_ports import StallProberPorts
from trainguard.workflows.stall_prober import probe


def handle(event: Any, ports: StallProberPorts | None = None) -> dict[str, Any]:
    report = probe(ports_or_production(ports, StallProberPorts))
    for outcome in report.outcomes:
        record_outcome(outcome)
    # The heartbeat the prober-health alarm watches: missing for a few minutes means the prober stopped.
    metrics.add_metric(name=PROBER_CYCLES, unit=MetricUnit.Count, value=1)
    metrics.add_metric(name=WATCHED_JOBS, unit=MetricUnit.Count, value=report.watched)
    return {"watched": report.watched, "published": report.published, "swept": report.swept}


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event)
