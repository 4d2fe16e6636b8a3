"""The IAM actions each function needs, derived at synth time from its ports: the methods each port's type
names, and the actions those methods declare on the adapter that serves the port (trainguard.adapters.permissions,
trainguard.handlers.wiring.ADAPTERS). It lives here, not in the Lambda asset: nothing in Lambda asks it."""

from __future__ import annotations

import importlib
import typing
from dataclasses import fields

from trainguard.adapters.permissions import actions_of
from trainguard.handlers.wiring import ADAPTERS, ports_kind_of


def ports_of_handler(handler: str) -> type:
    """The ports class of a Lambda handler string, "trainguard.handlers.<module>.handler"."""
    return ports_kind_of(importlib.import_module(handler.rsplit(".", 1)[0]).handle)


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
