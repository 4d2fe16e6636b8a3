"""The clients a hub function uses for a job in one of the organization's spokes (docs/organization.md).

For a job in account A and region R, the calls that land in the job's account (the ports of
`spoke_roles.IN_JOB_ACCOUNT_PORTS`) are made with the credentials of the spoke role this function may assume
there, `trainguard-spoke-<function>-<R>`. The hub's own resources (the ledger, the topic, the schedules) are
reached with the function's own session, as in a single account: a `wiring.Site` holds both sets of clients.

The credentials come from STS AssumeRole (one hour, the default) on the function's own session. The STS endpoint
is the function's region's, as AWS advises for resilience
(https://docs.aws.amazon.com/IAM/latest/UserGuide/id_credentials_temp_enable-regions.html): botocore has used
regional STS endpoints by default since boto3 1.40 (boto/boto3#4583), and an explicit endpoint here would bypass
the local stand-in's AWS_ENDPOINT_URL. They are kept per
account and region for the container's life and taken again once less than REFRESH_BEFORE of them is left: a
function runs for a minute at most, so a client never outlives its credentials. Only the enrolled accounts and
regions are served: anything else raises NotEnrolled before any call is made. A client is made, and the role
assumed, on its first call: a hub function that only reads its own ledger for a spoke with nothing to do there
makes no call to STS.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from trainguard.adapters.permissions import needs_on_its_own_role
from trainguard.adapters.spoke_roles import spoke_role_arn
from trainguard.config import GuardConfig
from trainguard.domain.origin import Location

REFRESH_BEFORE = timedelta(minutes=10)
Clients = Callable[[str], Any]


class NotEnrolled(LookupError):
    """The hub serves only its enrolled accounts and regions."""


@dataclass
class _Held:
    session: Any
    expires: datetime
    clients: dict[str, Any]


class SpokeSessions:
    """Clients in the enrolled spokes for one hub function: `clients_in(location)("sagemaker")`."""

    def __init__(
        self,
        home_session: Any,
        function_key: str,
        *,
        enrolled_accounts: tuple[str, ...],
        enrolled_regions: tuple[str, ...],
        clock: Callable[[], datetime],
        client_config: Any = None,
        partition: str = "aws",
    ) -> None:
        self._home = home_session
        self._key = function_key
        self._accounts, self._regions = frozenset(enrolled_accounts), frozenset(enrolled_regions)
        self._clock = clock
        self._config = client_config
        self._partition = partition
        self._held: dict[Location, _Held] = {}
        self._sts: Any = None
        # A hub's scheduled functions serve several spokes at once: one lock per place, so that a slow AssumeRole
        # in one spoke holds up that spoke's calls only.
        self._locks: dict[Location, threading.Lock] = {}
        self._locks_lock = threading.Lock()

    def clients_in(self, location: Location) -> Clients:
        """The clients of `location`'s spoke role (NotEnrolled, with no call made, for anywhere else)."""
        if location.account not in self._accounts or location.region not in self._regions:
            raise NotEnrolled(f"account {location.account} in {location.region} is not enrolled in this hub")

        def client(service: str) -> Any:
            return _OnFirstUse(lambda: self._client_in(location, service))

        return client

    def _client_in(self, location: Location, service: str) -> Any:
        with self._locks_lock:
            lock = self._locks.setdefault(location, threading.Lock())
        with lock:
            held = self._session_in(location)
            if service not in held.clients:
                held.clients[service] = held.session.client(service, config=self._config)
            return held.clients[service]

    def _session_in(self, location: Location) -> _Held:
        held = self._held.get(location)
        if held is None or held.expires - self._clock() < REFRESH_BEFORE:
            held = self._assume(location)
            self._held[location] = held
        return held

    @needs_on_its_own_role("sts:AssumeRole")
    def _assume(self, location: Location) -> _Held:
        import boto3

        with self._locks_lock:  # the home session is shared by every place's thread
            if self._sts is None:
                region = self._home.region_name
                self._sts = self._home.client("sts", region_name=region, config=self._config)
        role = spoke_role_arn(location.account, location.region, self._key, self._partition)
        credentials = self._sts.assume_role(RoleArn=role, RoleSessionName=f"trainguard-{self._key}")["Credentials"]
        session = boto3.session.Session(
            aws_access_key_id=credentials["AccessKeyId"],
            aws_secret_access_key=credentials["SecretAccessKey"],
            aws_session_token=credentials["SessionToken"],
            region_name=location.region,
        )
        return _Held(session, credentials["Expiration"], {})


def spoke_clients_on(home_session: Any, config: GuardConfig, *, client_config: Any = None) -> Any:
    """(function key, location) -> that function's clients in that spoke, one SpokeSessions per function, on the
    function's own boto3 session (wiring.PortSet's `spoke_clients`). Credentials are checked against the real
    clock, whatever clock the ports decide on."""
    from datetime import UTC

    region = home_session.region_name or "us-east-1"
    partition = home_session.get_partition_for_region(region)
    sessions: dict[str, SpokeSessions] = {}

    def clients(function_key: str, location: Location) -> Clients:
        if function_key not in sessions:
            sessions[function_key] = SpokeSessions(
                home_session,
                function_key,
                enrolled_accounts=config.enrolled_accounts,
                enrolled_regions=config.enrolled_regions,
                clock=lambda: datetime.now(UTC),
                client_config=client_config,
                partition=partition,
            )
        return sessions[function_key].clients_in(location)

    return clients


class _OnFirstUse:
    """A client made when it is first used, from credentials that are fresh then (not when an adapter is built).
    Every attribute but the special ones is the client's; an adapter must not probe its client before calling it
    (hasattr would assume the role)."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_make":  # copy, pickle and the like ask before __init__ has run
            raise AttributeError(name)
        return getattr(self._make(), name)
