"""Each handler module builds its function's ports in plain sight (its `build_ports`), and handlers/wiring.py keeps
them once per container: at home on the function's own clients; for a job in an organization's spoke, the ports that
call the job's account (spoke_roles.IN_JOB_ACCOUNT_PORTS) on the clients of that spoke's role for this function,
the others (the ledger, in that spoke's records; the topic; the retry schedules) on the hub's own."""

from __future__ import annotations

import importlib
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any, TypeVar

import pytest

from infra.port_permissions import FUNCTION_HANDLERS
from trainguard.adapters.ledger import LedgerScope, ledger_scope
from trainguard.adapters.spoke_roles import IN_JOB_ACCOUNT_PORTS, function_key
from trainguard.config import GuardConfig
from trainguard.domain.origin import Location
from trainguard.handlers.wiring import PortSet
from trainguard.workflows.function_ports import Settled

HUB = Location("123456789012", "us-east-1")
SPOKE = Location("111111111111", "us-west-2")
Held = TypeVar("Held")
BUDGET = GuardConfig.organization_retry_budget_per_hour  # the hub's default organization-wide relaunch budget


class Client:
    """A client that says whose it is: the function's own ("own") or a spoke role's ("spoke")."""

    def __init__(self, owner: str, service: str, region: str) -> None:
        self.owner, self.service = owner, service
        self.meta = SimpleNamespace(region_name=region, service_model=None)


class Hub:
    """A hub's port set on clients that say whose they are, with the spoke roles it asked for."""

    def __init__(self) -> None:
        config = GuardConfig(
            ledger_table_name="ledger",
            topic_arn=f"arn:aws:sns:{HUB.region}:{HUB.account}:trainguard",
            account_id=HUB.account,
            enrolled_accounts=(SPOKE.account,),
            enrolled_regions=(HUB.region, SPOKE.region),
        )
        self.asked: list[tuple[str, Location]] = []
        self.ports = PortSet(self.own_client, config, HUB.region, lambda: datetime.now(UTC), self.spoke_clients)

    def own_client(self, service: str) -> Client:
        return Client("own", service, HUB.region)

    def spoke_clients(self, key: str, location: Location) -> Any:
        self.asked.append((key, location))
        return lambda service: Client("spoke", service, location.region)


def build_of(handler: str) -> Any:
    return importlib.import_module(handler.rsplit(".", 1)[0]).build_ports


def held_by_port(ports: Settled, kind: type[Held]) -> dict[str, Held]:
    """Each adapter of `ports` that holds a `kind` (its client, its ledger records), with what it holds."""
    return {
        name: held
        for name, adapter in vars(ports).items()
        for held in getattr(adapter, "__dict__", {}).values()
        if isinstance(held, kind)
    }


@pytest.mark.parametrize("handler", FUNCTION_HANDLERS)
def test_a_spoke_jobs_ports_call_its_account_through_this_functions_spoke_role(handler: str) -> None:
    hub = Hub()
    ports = hub.ports.at(build_of(handler), SPOKE)

    assert hub.asked == [(function_key(handler), SPOKE)]
    built_on = {port: client.owner for port, client in held_by_port(ports, Client).items()}
    assert set(built_on) == set(vars(ports)) - {"config", "region", "clock", "create_request_shape"}  # every adapter
    assert built_on == {port: "spoke" if port in IN_JOB_ACCOUNT_PORTS else "own" for port in built_on}
    assert ports.region == SPOKE.region
    scopes = held_by_port(ports, LedgerScope)
    assert scopes and set(scopes.values()) == {ledger_scope(SPOKE, HUB.account, BUDGET)}


@pytest.mark.parametrize("handler", FUNCTION_HANDLERS)
def test_a_home_jobs_ports_are_the_functions_own_and_built_once_per_container(handler: str) -> None:
    hub = Hub()
    build = build_of(handler)
    ports = hub.ports.of(build)

    assert hub.asked == []  # no spoke role for a job at home
    assert {client.owner for client in held_by_port(ports, Client).values()} == {"own"}
    assert ports.region == HUB.region
    assert set(held_by_port(ports, LedgerScope).values()) == {ledger_scope(None, HUB.account, BUDGET)}
    assert hub.ports.of(build) is ports and hub.ports.at(build, None) is ports
    assert hub.ports.at(build, SPOKE) is hub.ports.at(build, SPOKE) is not ports
    assert len(hub.asked) == 1


def test_the_job_events_notifications_name_the_spoke_and_its_relaunches_go_to_the_hubs_schedules() -> None:
    ports = Hub().ports.at(build_of("trainguard.handlers.job_events.handler"), SPOKE)
    notifier, scheduler = vars(ports.notifier), vars(ports.scheduler)
    assert (notifier["_job_account"], notifier["_job_region"]) == (SPOKE.account, SPOKE.region)
    assert scheduler["_spoke"] == SPOKE and held_by_port(ports, Client)["scheduler"].owner == "own"
