"""Lambda handler: the periodic check of quota walls (an EventBridge schedule, every few minutes), in the function's
own account and region and, in an organization's hub, in each enrolled spoke."""

from __future__ import annotations

from typing import Any

from trainguard.handlers.observability import logger, metrics, record_outcome
from trainguard.handlers.origin import at_place, ports_for_each_place, serve_each_place
from trainguard.handlers.wiring import PortSet, Site
from trainguard.workflows.function_ports import QuotaWatchPorts
from trainguard.workflows.quota_watch import check_quota_walls


def handle(event: Any, ports: QuotaWatchPorts | PortSet | None = None) -> list[dict[str, Any]]:
    served = serve_each_place(ports_for_each_place(ports, build_ports), check_quota_walls)
    for place, outcomes in served:
        at_place(place)
        for outcome in outcomes:
            record_outcome(outcome)
    at_place(None)
    return [outcome.as_dict() for _, outcomes in served for outcome in outcomes]


def build_ports(site: Site) -> QuotaWatchPorts:
    """What meeting a quota wall takes (function_ports.QuotaWallPorts), built on this function's clients; the calls
    to the job's account (SageMaker, Service Quotas) on the job's."""
    from trainguard.adapters.ledger import Ledger
    from trainguard.adapters.notifier import Notifier
    from trainguard.adapters.quota_ledger import QuotaLedger
    from trainguard.adapters.sagemaker import SageMakerJobs
    from trainguard.adapters.service_quotas import ServiceQuotas

    return QuotaWatchPorts(
        **site.settled,
        jobs=SageMakerJobs(site.job_clients("sagemaker")),
        ledger=Ledger(*site.ledger_table),
        notifier=Notifier(site.clients("sns"), **site.notifier_settings),
        quotas=ServiceQuotas(site.job_clients("service-quotas")),
        quota_ledger=QuotaLedger(*site.ledger_table),
    )


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> list[dict[str, Any]]:
    return handle(event)
