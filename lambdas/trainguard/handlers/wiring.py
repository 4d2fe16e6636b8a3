"""Build a function's ports once per Lambda container, on its first event: only the adapters it calls.

Nothing is built at import time, and boto3 is imported only inside `boto3_ports`: importing a
handler module stays cheap (see docs/local-aws.md, "Cold start"). `ADAPTERS` says which adapter
serves each port; the stack grants a function the IAM actions of the methods its ports name
(infra/port_permissions.py, at synth time, outside the Lambda asset), declared once, on the adapter methods
(trainguard.adapters.permissions).
"""

from __future__ import annotations

import importlib
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass, fields, is_dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any, TypeVar

from trainguard.adapters.spoke_roles import IN_JOB_ACCOUNT_PORTS
from trainguard.config import GuardConfig
from trainguard.domain.origin import Location

Ports = TypeVar("Ports")
Clients = Callable[[str], Any]  # a boto3 client by service name


@dataclass(frozen=True)
class Adapter:
    """The adapter class that serves a port, and how a function builds it from its clients and settings, for a job
    at home (spoke None) or in an organization's spoke."""

    module: str
    name: str
    build: Callable[[Any, Clients, GuardConfig, Location | None], Any]

    def adapter_class(self) -> Any:
        return getattr(importlib.import_module(self.module), self.name)


def _ledger_adapter(name: str, module: str = "trainguard.adapters.ledger") -> Adapter:
    """A ledger adapter, made for the records of one place (adapters/ledger.py, LedgerScope)."""

    def build(cls: Any, clients: Clients, config: GuardConfig, spoke: Location | None) -> Any:
        from trainguard.adapters.ledger import ledger_scope

        hub = config.is_hub
        scope = ledger_scope(
            spoke, config.account_id if hub else "", config.organization_retry_budget_per_hour if hub else 0
        )
        return cls(clients("dynamodb"), config.ledger_table_name, scope)

    return Adapter(module, name, build)


def _job_account(config: GuardConfig, spoke: Location | None) -> str:
    """The account a hub's notification names (its spoke's, or its own); "" in a single-account stack."""
    if spoke is not None:
        return spoke.account
    return config.account_id if config.is_hub else ""


ADAPTERS: dict[str, Adapter] = {
    "jobs": Adapter("trainguard.adapters.sagemaker", "SageMakerJobs", lambda cls, c, *_: cls(c("sagemaker"))),
    "checkpoints": Adapter("trainguard.adapters.checkpoints", "CheckpointReader", lambda cls, c, *_: cls(c("s3"))),
    "ledger": _ledger_adapter("Ledger"),
    "quota_ledger": _ledger_adapter("QuotaLedger", "trainguard.adapters.quota_ledger"),
    "stall_ledger": _ledger_adapter("StallLedger", "trainguard.adapters.stall_ledger"),
    "notifier": Adapter(
        "trainguard.adapters.notifier",
        "Notifier",
        lambda cls, c, config, spoke: cls(
            c("sns"),
            config.topic_arn,
            config.chat_topic_arn,
            job_account=_job_account(config, spoke),
            job_region=spoke.region if spoke else c("sns").meta.region_name if config.is_hub else "",
        ),
    ),
    "scheduler": Adapter(
        "trainguard.adapters.scheduler",
        "RelaunchScheduler",
        lambda cls, c, config, spoke: cls(
            c("scheduler"),
            group_name=config.schedule_group_name,
            target_arn=config.retry_launcher_arn,
            role_arn=config.scheduler_role_arn,
            spoke=spoke,
        ),
    ),
    "quotas": Adapter(
        "trainguard.adapters.service_quotas", "ServiceQuotas", lambda cls, c, *_: cls(c("service-quotas"))
    ),
    "alarms": Adapter("trainguard.adapters.alarms", "StallAlarms", lambda cls, c, *_: cls(c("cloudwatch"))),
    "job_logs": Adapter("trainguard.adapters.job_activity", "JobLogs", lambda cls, c, *_: cls(c("logs"))),
    "gpu_metrics": Adapter("trainguard.adapters.job_activity", "GpuMetrics", lambda cls, c, *_: cls(c("cloudwatch"))),
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
    spoke: tuple[Location, Clients] | None = None,
) -> Ports:
    """The ports of one function: each field's adapter built on `clients` (boto3's, or a local stand-in's).
    For a job in an organization's spoke, `spoke` is its location and the clients of that spoke's role
    (adapters/spoke_sessions.py): the ports that call the job's own account (spoke_roles.IN_JOB_ACCOUNT_PORTS)
    are built on those, the ledgers keep that spoke's records, and the region is the job's."""
    location, job_clients = spoke if spoke is not None else (None, clients)
    region = location.region if location is not None else region
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
            on = job_clients if field.name in IN_JOB_ACCOUNT_PORTS else clients
            values[field.name] = recipe.build(recipe.adapter_class(), on, config, location)
    return kind(**values)


def ports_or_production(given: Ports | PortSet | None, kind: type[Ports], spoke: Location | None = None) -> Ports:
    """The ports a test passed in (which serve their own account only), or those of `given`'s (or the
    container's) port set for a job at home (spoke None) or in an organization's spoke."""
    if given is None:
        given = production_port_set()
    if isinstance(given, PortSet):
        return given.at(kind, spoke)
    return given


# The clients of one hub function's role in one spoke: (function key, location) -> clients (spoke_sessions.py).
SpokeClients = Callable[[str, Location], Clients]


class PortSet:
    """Each function's ports, built on first use from one set of clients (boto3's, or a local stand-in's): for
    jobs at home, and in an organization's hub for jobs in each enrolled spoke, on that spoke's clients."""

    def __init__(
        self,
        clients: Clients,
        config: GuardConfig,
        region: str,
        clock: Callable[[], datetime],
        spoke_clients: SpokeClients | None = None,
    ) -> None:
        self._clients, self.config, self.region, self._clock = clients, config, region, clock
        self._spoke_clients = spoke_clients
        self._built: dict[tuple[type, Location | None], Any] = {}

    def of(self, kind: type[Ports]) -> Ports:
        return self.at(kind, None)

    def at(self, kind: type[Ports], spoke: Location | None) -> Ports:
        """`kind`'s ports for a job at home (None) or in the spoke `spoke`."""
        if (kind, spoke) not in self._built:
            on_spoke = None
            if spoke is not None:
                if self._spoke_clients is None:
                    raise LookupError(f"{spoke} is not this function's: it serves no organization's spokes")
                on_spoke = (spoke, self._spoke_clients(function_key_of_ports(kind), spoke))
            self._built[(kind, spoke)] = build_ports(
                kind, self._clients, self.config, self.region, self._clock, on_spoke
            )
        built: Ports = self._built[(kind, spoke)]
        return built

    def spokes(self) -> list[Location]:
        """The enrolled accounts and regions other than this function's own (none outside a hub)."""
        home = Location(self.config.account_id, self.region)
        return [
            Location(account, region)
            for account in self.config.enrolled_accounts
            for region in self.config.enrolled_regions
            if Location(account, region) != home
        ]

    def for_handle(self, handle: Callable[..., Any]) -> Any:
        """The ports a handler module's `handle(event, ports)` takes, for a job at home."""
        return self.of(ports_kind_of(handle))


def function_key_of_ports(kind: type) -> str:
    """The function a ports class is for, as spoke_roles.function_key names it: JobEventsPorts -> "job-events"
    (tests/unit/test_function_ports.py checks it against every handler)."""
    name = kind.__name__.removesuffix("Ports")
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


def ports_kind_of(handle: Callable[..., Any]) -> type:
    """The ports class of `handle(event, ports: <Kind> | PortSet | None = None)`."""
    hinted = typing.get_args(typing.get_type_hints(handle)["ports"])
    (kind,) = [arg for arg in hinted if isinstance(arg, type) and is_dataclass(arg)]
    return kind


def boto3_ports(clock: Callable[[], datetime] = utc_now) -> PortSet:
    """Ports on boto3 clients from one session, configured from the function's environment; in a hub, with the
    spoke roles' clients from STS AssumeRole on that session (adapters/spoke_sessions.py)."""
    import boto3
    from botocore.config import Config

    from trainguard.adapters.spoke_sessions import spoke_clients_on

    session = boto3.session.Session()
    # Standard retry mode: exponential backoff with jitter on throttling and 5xx.
    retries = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=20)

    @cache
    def client(service: str) -> Any:
        return session.client(service, config=retries)  # type: ignore[call-overload]

    config = GuardConfig.from_env()
    spokes = spoke_clients_on(session, config, client_config=retries) if config.is_hub else None
    return PortSet(client, config, session.region_name or "us-east-1", clock, spokes)


_production: list[PortSet] = []  # the container's, made on its first event


def production_port_set() -> PortSet:
    if not _production:
        _production.append(boto3_ports())
    return _production[0]


def reset_production_ports() -> None:
    """Forget the container's ports (tests and local runs that change the environment between runs)."""
    _production.clear()
