"""IAM, declared once: each adapter method names the actions its AWS calls need.

Cloud Custodian's per-action `permissions` are the model. The stack grants a function the actions of
the port methods it can call (infra/port_permissions.actions_of_ports) and scopes each one; the
tests check every call an adapter makes against the declaration of the port method that made it
(tests/conftest.py), so a declaration cannot fall behind its code.
"""

from __future__ import annotations

from collections.abc import Callable
from types import CodeType
from typing import Any, TypeVar

Method = TypeVar("Method", bound=Callable[..., Any])

# The declaring methods' code objects, so a test can find the declaration of a call in flight.
DECLARED_BY_CODE: dict[CodeType, tuple[str, ...]] = {}
# Methods that take credentials for another role (adapters/spoke_sessions.py): they call with the function's own
# role, whichever port method needed the credentials, so their calls are checked against their own declaration.
OWN_ROLE_CODE: set[CodeType] = set()


def needs(*actions: str) -> Callable[[Method], Method]:
    """Declare the IAM actions `method` needs, including those of the adapter methods it calls itself."""

    def declare(method: Method) -> Method:
        method.iam_actions = actions  # type: ignore[attr-defined]
        DECLARED_BY_CODE[method.__code__] = actions
        return method

    return declare


def needs_on_its_own_role(*actions: str) -> Callable[[Method], Method]:
    """`needs`, for a method that takes another role's credentials with the function's own role: the stack grants
    its actions to the function's role, and a port method whose first call makes it does not declare them."""

    def declare(method: Method) -> Method:
        OWN_ROLE_CODE.add(method.__code__)
        return needs(*actions)(method)

    return declare


def actions_of(adapter: type, method: str) -> tuple[str, ...]:
    declared: tuple[str, ...] | None = getattr(getattr(adapter, method), "iam_actions", None)
    if declared is None:
        raise TypeError(f"{adapter.__name__}.{method} declares no IAM actions (trainguard.adapters.permissions.needs)")
    return declared


def declared_actions(adapter: type, methods: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The actions `methods` of `adapter` declare (all its declaring methods by default), in order, once each."""
    names = methods or tuple(n for n, v in vars(adapter).items() if hasattr(v, "iam_actions"))
    return tuple(dict.fromkeys(a for name in names for a in actions_of(adapter, name)))
