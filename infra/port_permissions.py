"""The IAM actions each function needs, derived at synth time from the ports its handler module builds: the methods
each port's type names (trainguard.workflows.function_ports), and the actions those methods declare on the adapter
the handler builds for that port (`build_ports` in trainguard.handlers.<module>; trainguard.adapters.permissions).
It lives here, not in the Lambda asset: nothing in Lambda asks it."""

from __future__ import annotations

import importlib
import typing
from dataclasses import fields
from functools import cache
from types import SimpleNamespace
from typing import Any

from infra.job_events import JOB_EVENTS_HANDLER, RETRY_LAUNCHER_HANDLER
from infra.quota_walls import FAILED_LAUNCHES_HANDLER, QUOTA_WATCH_HANDLER
from infra.stall_detection import LOG_ACTIVITY_HANDLER, STALL_ALARMS_HANDLER, STALL_PROBER_HANDLER
from trainguard.adapters.permissions import actions_of
from trainguard.config import GuardConfig
from trainguard.handlers.wiring import Site, utc_now

# Every function whose role is derived from its ports.
FUNCTION_HANDLERS = (
    JOB_EVENTS_HANDLER,
    RETRY_LAUNCHER_HANDLER,
    QUOTA_WATCH_HANDLER,
    FAILED_LAUNCHES_HANDLER,
    STALL_ALARMS_HANDLER,
    STALL_PROBER_HANDLER,
    LOG_ACTIVITY_HANDLER,
)


# The client the derivation hands every adapter, and never calls: it has a service model to read the request shape
# from (None: adapters/service_model.py loads botocore's own) and no region.
_UNCALLED_CLIENT = SimpleNamespace(meta=SimpleNamespace(service_model=None, region_name=""))


@cache
def ports_of_handler(handler: str) -> Any:
    """A function's ports as its handler module ("trainguard.handlers.<module>.handler") builds them, on clients
    that are never called, for a job at home."""
    module = importlib.import_module(handler.rsplit(".", 1)[0])
    site = Site(lambda service: _UNCALLED_CLIENT, GuardConfig(ledger_table_name="", topic_arn=""), "", utc_now)
    return module.build_ports(site)


def port_methods(ports: object) -> dict[str, tuple[str, ...]]:
    """Each adapter port of a function's ports (a field whose type is a port protocol), with the methods it names."""
    hints = typing.get_type_hints(type(ports))
    return {
        field.name: _protocol_methods(hints[field.name])
        for field in fields(ports)  # type: ignore[arg-type]
        if getattr(hints[field.name], "_is_protocol", False)
    }


def needs_by_port(ports: object) -> dict[str, frozenset[str]]:
    """The IAM actions each port of a function needs: those its methods declare on the adapter built for it."""
    return {
        port: frozenset(action for method in methods for action in actions_of(type(getattr(ports, port)), method))
        for port, methods in port_methods(ports).items()
    }


def actions_of_ports(ports: object) -> frozenset[str]:
    """The IAM actions a function needs, all ports together."""
    return frozenset().union(*needs_by_port(ports).values())


def _protocol_methods(protocol: type) -> tuple[str, ...]:
    names = {
        name
        for cls in protocol.__mro__
        if getattr(cls, "_is_protocol", False) and cls is not typing.Protocol
        for name, value in vars(cls).items()
        if callable(value) and not name.startswith("_")
    }
    return tuple(sorted(names))
