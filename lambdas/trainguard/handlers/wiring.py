"""Build a function's ports once per Lambda container, on its first event: only the adapters it calls.

Nothing is built at import time, and boto3 is imported only inside `production_ports`: importing a
handler module stays cheap (see docs/local-aws.md, "Cold start"). `ADAPTERS` says which adapter
serves each port; the stack grants a function the IAM actions of the methods its ports name
(`actions_of_ports`), declared once, on the adapter methods (trainguard.adapters.permissions).
"""

from __future__ import annotations

import importlib
import typing
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from functools import cache
from typing import Any, TypeVar

from trainguard.adapters.permissions import actions_of
from trainguard.adapters.spoke_roles import IN_JOB_ACCOUNT_PORTS
from trainguard.config import GuardConfig

Ports = TypeVar("Ports")
Clients = Callable[[str], Any]  # a boto3 client by service name


@dataclass(frozen=True)
class Adapter:
    """The adapter class that serves a port, and how a function builds it from its clients and settings."""

    module: str
    name: str
    build: Callable[[Any, Clients, GuardConfig], Any]

    def adapter_class(self) -> Any:
        return getattr(importlib.import_module(self.module), self.name)


ADAPTERS: dict[str, Adapter] = {
    "jobs": Adapter("trainguard.adapters.sagemaker", "SageMakerJobs", lambda cls, c, _: cls(c("sagemaker"))),
    "checkpoints": Adapter("trainguard.adapters.checkpoints", "CheckpointReader", lambda cls, c, _: cls(c("s3"))),
    "ledger": Adapter(
        "trainguard.adapters.ledger", "Ledger", lambda cls, c, config: cls(c("dynamodb"), config.ledger_table_name)
    ),
    "quota_ledger": Adapter(
        "trainguard.adapters.ledger", "QuotaLedger", lambda cls, c, config: cls(c("dynamodb"), config.ledger_table_name)
    ),
    "stall_ledger": Adapter(
        "trainguard.adapters.stall_ledger",
        "StallLedger",
        lambda cls, c, config: cls(c("dynamodb"), config.ledger_table_name),
    ),
    "notifier": Adapter(
        "trainguard.adapters.notifier",
        "Notifier",
        lambda cls, c, config: cls(c("sns"), config.topic_arn, config.chat_topic_arn),
    ),
    "scheduler": Adapter(
        "trainguard.adapters.scheduler",
        "RelaunchScheduler",
        lambda cls, c, config: cls(
            c("scheduler"),
            group_name=config.schedule_group_name,
            target_arn=config.retry_launcher_arn,
            role_arn=config.scheduler_role_arn,
        ),
    ),
    "quotas": Adapter(
        "trainguard.adapters.service_quotas", "ServiceQuotas", lambda cls, c, _: cls(c("service-quotas"))
    ),
    "alarms": Adapter("trainguard.adapters.alarms", "StallAlarms", lambda cls, c, _: cls(c("cloudwatch"))),
    "job_logs": Adapter("trainguard.adapters.job_activity", "JobLogs", lambda cls, c, _: cls(c("logs"))),
    "gpu_metrics": Adapter("trainguard.adapters.job_activity", "GpuMetrics", lambda cls, c, _: cls(c("cloudwatch"))),
}
# The fields of a function's ports that are not adapters.
SETTLED_FIELDS = ("config", "region", "clock")


def utc_now() -> datetime:
    return datetime.now(UTC)


def build_ports(
    kind: type[Ports],
    clients: Clients,
    config: GuardConfig,
    region: str,
    clock: Callable[[], datetime],
    job_clients: Clients | None = None,
) -> Ports:
    """The ports of one function: each field's adapter built on `clients` (boto3's, or a local stand-in's).
    With `job_clients` (a job in an organization's spoke: adapters/spoke_sessions.py), the ports that call the
    job's own account (spoke_roles.IN_JOB_ACCOUNT_PORTS) are built on those, and `region` is the job's."""
    settled = {"config": config, "region": region, "clock": clock}
    values: dict[str, Any] = {}
    for field in fields(kind):  # type: ignore[arg-type]
        if field.name in settled:
            values[field.name] = settled[field.name]
        elif field.name == "create_request_shape":
            from trainguard.adapters.service_model import create_training_job_shape

            values[field.name] = create_training_job_shape(clients("sagemaker").meta.service_model)
        else:
            recipe = ADAPTERS[field.name]
            on = job_clients if job_clients is not None and field.name in IN_JOB_ACCOUNT_PORTS else clients
            values[field.name] = recipe.build(recipe.adapter_class(), on, config)
    return kind(**values)


def ports_or_production(ports: Ports | None, kind: type[Ports]) -> Ports:
    """The ports a test passed in, or the real ones."""
    return ports if ports is not None else production_ports(kind)


class PortSet:
    """Each function's ports, built on first use from one set of clients (boto3's, or a local stand-in's)."""

    def __init__(self, clients: Clients, config: GuardConfig, region: str, clock: Callable[[], datetime]) -> None:
        self._clients, self.config, self._region, self._clock = clients, config, region, clock
        self._built: dict[type, Any] = {}

    def of(self, kind: type[Ports]) -> Ports:
        if kind not in self._built:
            self._built[kind] = build_ports(kind, self._clients, self.config, self._region, self._clock)
        built: Ports = self._built[kind]
        return built

    def for_handle(self, handle: Callable[..., Any]) -> Any:
        """The ports a handler module's `handle(event, ports)` takes."""
        return self.of(ports_kind_of(handle))


def ports_of_handler(handler: str) -> type:
    """The ports class of a Lambda handler string, "trainguard.handlers.<module>.handler"."""
    return ports_kind_of(importlib.import_module(handler.rsplit(".", 1)[0]).handle)


def ports_kind_of(handle: Callable[..., Any]) -> type:
    """The ports class of `handle(event, ports: <Kind> | None = None)`."""
    (kind,) = [arg for arg in typing.get_args(typing.get_type_hints(handle)["ports"]) if arg is not type(None)]
    return kind  # type: ignore[no-any-return]


def boto3_ports(clock: Callable[[], datetime] = utc_now) -> PortSet:
    """Ports on boto3 clients from one session, configured from the function's environment."""
    import boto3
    from botocore.config import Config

    session = boto3.session.Session()
    # Standard retry mode: exponential backoff with jitter on throttling and 5xx.
    retries = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=20)

    @cache
    def client(service: str) -> Any:
        return session.client(service, config=retries)  # type: ignore[call-overload]

    return PortSet(client, GuardConfig.from_env(), session.region_name or "us-east-1", clock)


_production: list[PortSet] = []  # the container's, made on its first event


def production_ports(kind: type[Ports]) -> Ports:
    if not _production:
        _production.append(boto3_ports())
    return _production[0].of(kind)


def reset_production_ports() -> None:
    """Forget the container's ports (tests and local runs that change the environment between runs)."""
    _production.clear()


def port_methods(kind: type) -> dict[str, tuple[str, ...]]:
    """Each adapter port of a function's ports, with the methods its port type names."""
    hints = typing.get_type_hints(kind)
    return {
        field.name: _protocol_methods(hints[field.name])
        for field in fields(kind)  # type: ignore[arg-type]
        if field.name in ADAPTERS
    }


def needs_by_port(kind: type) -> dict[str, frozenset[str]]:
    """The IAM actions each port of a function needs: those its methods declare on the adapter that serves it."""
    return {
        port: frozenset(action for method in methods for action in actions_of(ADAPTERS[port].adapter_class(), method))
        for port, methods in port_methods(kind).items()
    }


def actions_of_ports(kind: type) -> frozenset[str]:
    """The IAM actions a function needs, all ports together."""
    return frozenset().union(*needs_by_port(kind).values())


def _protocol_methods(protocol: type) -> tuple[str, ...]:
    names = {
        name
        for cls in protocol.__mro__
        if getattr(cls, "_is_protocol", False) and cls is not typing.Protocol
        for name, value in vars(cls).items()
        if callable(value) and not name.startswith("_")
    }
    return tuple(sorted(names))
