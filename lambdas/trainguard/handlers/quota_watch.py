"""Lambda handler: the periodic check of quota walls (an EventBridge schedule, every few minutes)."""

from __future__ import annotations

from typing import Any

from trainguard.handlers.observability import logger, metrics, record_outcome
from trainguard.handlers.wiring import ports_or_production
from trainguard.workflows.function_ports import QuotaWatchPorts
from trainguard.workflows.quota_watch import check_quota_walls


def handle(event: Any, ports: QuotaWatchPorts | None = None) -> list[dict[str, Any]]:
    outcomes = check_quota_walls(ports_or_production(ports, QuotaWatchPorts))
    for outcome in outcomes:
        record_outcome(outcome)
    return [outcome.as_dict() for outcome in outcomes]


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> list[dict[str, Any]]:
    return handle(event)
