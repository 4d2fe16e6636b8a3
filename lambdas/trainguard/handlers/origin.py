"""An event about another account's or region's job (domain/origin.py decides) is logged, counted
(EventsFromElsewhere) and skipped, never acted on with this account's rights."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from trainguard.config import GuardConfig
from trainguard.domain.origin import elsewhere
from trainguard.domain.outcome import Outcome, skipped
from trainguard.handlers.observability import logger, metrics
from trainguard.metric_names import EVENTS_FROM_ELSEWHERE


def from_elsewhere(event: Any, config: GuardConfig, own_region: str, job_name: str) -> Outcome | None:
    """A skip, logged and counted, when `event` is about a job of another account or region (domain/origin.py)."""
    if not isinstance(event, Mapping):
        return None
    account, region = str(event.get("account", "")), str(event.get("region", ""))
    reason = elsewhere(account, region, config.account_id, own_region)
    if reason is None:
        return None
    logger.warning("event from elsewhere skipped", event_account=account, event_region=region)
    metrics.add_metric(name=EVENTS_FROM_ELSEWHERE, unit=MetricUnit.Count, value=1)
    return skipped(job_name, reason)
