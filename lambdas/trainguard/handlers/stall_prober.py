"""Lambda handler: the stall prober, on an EventBridge schedule every minute, in the function's own account and
region and, in an organization's hub, in each enrolled spoke."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from trainguard.handlers.observability import logger, metrics, record_outcome
from trainguard.handlers.origin import at_place, ports_for_each_place, serve_each_place
from trainguard.handlers.wiring import PortSet, Site
from trainguard.metric_names import PROBER_CYCLES, WATCHED_JOBS
from trainguard.workflows.function_ports import StallProberPorts
from trainguard.workflows.stall_prober import probe


def handle(event: Any, ports: StallProberPorts | PortSet | None = None) -> dict[str, Any]:
    served = serve_each_place(ports_for_each_place(ports, build_ports), probe)
    for place, report in served:
        at_place(place)
        for outcome in report.outcomes:
            record_outcome(outcome)
    at_place(None)
    reports = [report for _, report in served]
    watched = sum(report.watched for report in reports)
    # The heartbeat the prober-health alarm watches: missing for a few minutes means the prober stopped.
    metrics.add_metric(name=PROBER_CYCLES, unit=MetricUnit.Count, value=1)
    metrics.add_metric(name=WATCHED_JOBS, unit=MetricUnit.Count, value=watched)
    return {
        "watched": watched,
        "published": sum(report.published for report in reports),
        "swept": [name for report in reports for name in report.swept],
        "started": [name for report in reports for name in report.started],
    }


def build_ports(site: Site) -> StallProberPorts:
    """The ledger, the topic, and in the job's account its jobs, stall alarms, checkpoints and GPU figures."""
    from trainguard.adapters.alarms import StallAlarms
    from trainguard.adapters.checkpoints import CheckpointReader
    from trainguard.adapters.job_activity import GpuMetrics
    from trainguard.adapters.ledger import Ledger
    from trainguard.adapters.notifier import Notifier
    from trainguard.adapters.sagemaker import SageMakerJobs
    from trainguard.adapters.stall_ledger import StallLedger

    return StallProberPorts(
        **site.settled,
        jobs=SageMakerJobs(site.job_clients("sagemaker")),
        ledger=Ledger(*site.ledger_table),
        notifier=Notifier(site.clients("sns"), **site.notifier_settings),
        stall_ledger=StallLedger(*site.ledger_table),
        alarms=StallAlarms(site.job_clients("cloudwatch")),
        checkpoints=CheckpointReader(site.job_clients("s3")),
        gpu_metrics=GpuMetrics(site.job_clients("cloudwatch")),
    )


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event)
