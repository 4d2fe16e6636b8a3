"""The Powertools Logger and Metrics shared by the handlers (the only things built at import time)."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from trainguard.domain.outcome import Outcome
from trainguard.metric_names import MALFORMED_EVENTS, outcome_metric

logger = Logger(service="trainguard")
metrics = Metrics(service="trainguard")


def record_outcome(outcome: Outcome) -> None:
    """One log line and one metric per outcome, so every decision can be found and counted."""
    logger.info(
        "outcome",
        outcome=outcome.kind.value,
        job_name=outcome.job_name,
        decision=outcome.decision,
        category=outcome.category,
        new_job_name=outcome.new_job_name,
        reason=outcome.reason,
    )
    metrics.add_metric(name=outcome_metric(outcome.kind.value), unit=MetricUnit.Count, value=1)


def record_malformed(reason: str) -> None:
    logger.error("malformed event skipped", reason=reason)
    metrics.add_metric(name=MALFORMED_EVENTS, unit=MetricUnit.Count, value=1)
