"""What a function's ports are built on, and the ports kept once per Lambda container, built on its first event.

Each handler module builds its own function's ports in plain sight: its `build_ports(site)` constructs, by name, the
adapters that function calls (handlers/job_events.py, ...). This module gives them what they are built on (`Site`)
and keeps each function's ports for the container's life (`PortSet`). Nothing is built at import time, and boto3 is
imported only inside `boto3_ports`: importing a handler module stays cheap (see docs/local-aws.md, "Cold start").
The stack grants a function the IAM actions of the adapter methods its ports name (infra/port_permissions.py, at
synth time, outside the Lambda asset), declared once, on the adapter methods (trainguard.adapters.permissions).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

from trainguard.adapters.spoke_roles import function_key
from trainguard.config import GuardConfig
from trainguard.domain.origin import Location

if TYPE_CHECKING:
    from trainguard.adapters.ledger import LedgerScope

Ports = TypeVar("Ports")
Clients = Callable[[str], Any]  # a boto3 client by service name
# The clients of one hub function's role in one spoke: (function key, location) -> clients (spoke_sessions.py).
SpokeClients = Callable[[str, Location], Clients]


@dataclass(frozen=True)
class Site:
    """What one function's ports are built on: the function's own clients (boto3's, or a local stand-in's) and
    settings, and, for a job in an organization's spoke, that spoke and the clients of the spoke's role for this
    function. Ports that call the job's own account (spoke_roles.IN_JOB_ACCOUNT_PORTS) take `job_clients`; the
    ledger, the topic and the retry schedules are the function's own (`clients`)."""

    clients: Clients
    config: GuardConfig
    region: str
    clock: Callable[[], datetime]
    spoke: Location | None = None
    spoke_clients: Clients | None = None

    def job_clients(self, service: str) -> Any:
        """A client in the job's own account and region: the spoke role's, or the function's own."""
        return (self.spoke_clients or self.clients)(service)

    @property
    def settled(self) -> dict[str, Any]:
        """The fields of every function's ports that are not adapters (function_ports.Settled); the job's region."""
        return {"config": self.config, "region": self.spoke.region if self.spoke else self.region, "clock": self.clock}

    @property
    def ledger_table(self) -> tuple[Any, str, LedgerScope]:
        """A ledger adapter's client, table and records: this site's (adapters/ledger.py, LedgerScope)."""
        from trainguard.adapters.ledger import ledger_scope

        hub = self.config.is_hub
        scope = ledger_scope(
            self.spoke,
            self.config.account_id if hub else "",
            self.config.organization_retry_budget_per_hour if hub else 0,
        )
        return self.clients("dynamodb"), self.config.ledger_table_name, scope

    @property
    def notifier_settings(self) -> dict[str, str]:
        """The topics, and the account and region a hub's notification names: its spoke's, or its own."""
        config, spoke = self.config, self.spoke
        at_home = config.account_id if config.is_hub else ""
        return {
            "topic_arn": config.topic_arn,
            "chat_topic_arn": config.chat_topic_arn,
            "job_account": spoke.account if spoke else at_home,
            "job_region": spoke.region if spoke else self.clients("sns").meta.region_name if config.is_hub else "",
        }


def utc_now() -> datetime:
    return datetime.now(UTC)


def ports_or_production(
    given: Ports | PortSet | None, build: Callable[[Site], Ports], spoke: Location | None = None
) -> Ports:
    """The ports a test passed in (which serve their own account only), or those `build` makes on `given`'s (or the
    container's) port set, for a job at home (spoke None) or in an organization's spoke."""
    if given is None:
        given = production_port_set()
    if isinstance(given, PortSet):
        return given.at(build, spoke)
    return given


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
        self._built: dict[tuple[Callable[[Site], Any], Location | None], Any] = {}

    def of(self, build: Callable[[Site], Ports]) -> Ports:
        """The ports a handler module's `build_ports` makes, for a job at home."""
        return self.at(build, None)

    def at(self, build: Callable[[Site], Ports], spoke: Location | None) -> Ports:
        """The ports `build` makes for a job at home (None) or in the spoke `spoke`."""
        if (build, spoke) not in self._built:
            job_clients = None if spoke is None else self._clients_in(spoke, build)
            site = Site(self._clients, self.config, self.region, self._clock, spoke, job_clients)
            self._built[(build, spoke)] = build(site)
        built: Ports = self._built[(build, spoke)]
        return built

    def _clients_in(self, spoke: Location, build: Callable[[Site], Any]) -> Clients:
        """The clients of the spoke role of the function whose handler module holds `build`."""
        if self._spoke_clients is None:
            raise LookupError(f"{spoke} is not this function's: it serves no organization's spokes")
        return self._spoke_clients(function_key_of(build), spoke)

    def spokes(self) -> list[Location]:
        """The enrolled accounts and regions other than this function's own (none outside a hub)."""
        home = Location(self.config.account_id, self.region)
        return [
            Location(account, region)
            for account in self.config.enrolled_accounts
            for region in self.config.enrolled_regions
            if Location(account, region) != home
        ]


def function_key_of(build: Callable[[Site], Any]) -> str:
    """The function a handler module's `build_ports` is for, as spoke_roles.function_key names it:
    trainguard.handlers.job_events.build_ports -> "job-events"."""
    return function_key(f"{build.__module__}.handler")


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
