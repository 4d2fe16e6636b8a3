"""Where an event comes from. Every EventBridge event names the account and region it was sent from (`account`,
`region`: https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-events-structure.html), and a forwarded
event keeps its origin's. A function acts only on a job of its own account and region: an event from anywhere
else (an organization's spoke, whose events a hub's bus receives: docs/organization.md) is logged, counted
(EventsFromElsewhere) and skipped, never acted on with this account's rights. Acting in a spoke, through the
spoke's role, is the next step of the organization-wide hub.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from trainguard.config import GuardConfig
from trainguard.domain.outcome import Outcome, skipped
from trainguard.handlers.observability import logger, metrics
from trainguard.metric_names import EVENTS_FROM_ELSEWHERE


def from_elsewhere(event: Any, config: GuardConfig, own_region: str, job_name: str) -> Outcome | None:
    """A skip when `event` comes from another account or region than the function's; None when it is its own,
    or when the function's account is not known (outside a deployed stack)."""
    if not config.account_id or not isinstance(event, Mapping):
        return None
    account, region = str(event.get("account", "")), str(event.get("region", ""))
    if (account, region) == (config.account_id, own_region):
        return None
    logger.warning("event from elsewhere skipped", event_account=account, event_region=region)
    metrics.add_metric(name=EVENTS_FROM_ELSEWHERE, unit=MetricUnit.Count, value=1)
    return skipped(
        job_name,
        f"the event comes from account {account or '?'} in {region or '?'}; this function acts only on jobs of its "
        f"own account {config.account_id} in {own_region}",
    )
