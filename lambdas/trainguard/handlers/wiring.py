"""Build the production ports once per Lambda container, on the first event.

Nothing is built at import time, and boto3 is imported only here, inside `production_ports`:
importing a handler module stays cheap (see docs/local-aws.md, "Cold start").
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from typing import Any

from trainguard.config import GuardConfig
from trainguard.workflows.ports import GuardPorts


def utc_now() -> datetime:
    return datetime.now(UTC)


def ports_or_production(ports: GuardPorts | None) -> GuardPorts:
    """The ports a test passed in, or the real ones."""
    return ports if ports is not None else production_ports()


@cache
def production_ports() -> GuardPorts:
    import boto3
    from botocore.config import Config

    from trainguard.adapters.alarms import StallAlarms
    from trainguard.adapters.checkpoints import CheckpointReader
    from trainguard.adapters.job_activity import GpuMetrics, JobLogs
    from trainguard.adapters.ledger import Ledger, QuotaLedger
    from trainguard.adapters.notifier import Notifier
    from trainguard.adapters.sagemaker import SageMakerJobs
    from trainguard.adapters.scheduler import RelaunchScheduler
    from trainguard.adapters.service_model import create_training_job_shape
    from trainguard.adapters.service_quotas import ServiceQuotas
    from trainguard.adapters.stall_ledger import StallLedger

    config = GuardConfig.from_env()
    session = boto3.session.Session()
    # Standard retry mode: exponential backoff with jitter on throttling and 5xx.
    retries = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=20)

    def client(service: str) -> Any:
        return session.client(service, config=retries)  # type: ignore[call-overload]

    sagemaker, dynamodb, cloudwatch = client("sagemaker"), client("dynamodb"), client("cloudwatch")
    return GuardPorts(
        jobs=SageMakerJobs(sagemaker),
        checkpoints=CheckpointReader(client("s3")),
        ledger=Ledger(dynamodb, config.ledger_table_name),
        notifier=Notifier(client("sns"), config.topic_arn, config.chat_topic_arn),
        scheduler=RelaunchScheduler(
            client("scheduler"),
            group_name=config.schedule_group_name,
            target_arn=config.retry_launcher_arn,
            role_arn=config.scheduler_role_arn,
        ),
        quotas=ServiceQuotas(client("service-quotas")),
        quota_ledger=QuotaLedger(dynamodb, config.ledger_table_name),
        stall_ledger=StallLedger(dynamodb, config.ledger_table_name),
        alarms=StallAlarms(cloudwatch),
        job_logs=JobLogs(client("logs")),
        gpu_metrics=GpuMetrics(cloudwatch),
        config=config,
        region=session.region_name or "us-east-1",
        clock=utc_now,
        create_request_shape=create_training_job_shape(sagemaker.meta.service_model),
    )
