"""Each function's ports hold only the adapters its code can call, and name no method whose actions no call needs.

Read from the source, not from a run: every function reachable from a handler's `handle` (by name, through the
workflows' imports) is walked for `ports.<port>.<method>` and `ports.<field>`. mypy already keeps the code from
calling what its ports do not name; this shows the other half, that they name nothing more. So the IAM actions
derived from a function's ports (the stack's grants) are exactly those of the calls its code makes.
"""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import pytest

import trainguard
from infra.port_permissions import actions_of_ports, port_methods, ports_of_handler
from trainguard.adapters.permissions import actions_of
from trainguard.workflows.function_ports import Settled

PACKAGE = Path(trainguard.__file__).parent
HANDLERS = [
    "job_events",
    "retry_launcher",
    "failed_launches",
    "quota_watch",
    "stall_alarms",
    "stall_prober",
    "log_activity",
]
Function = tuple[str, str]  # (module, function name)
# The fields every function's ports have besides adapters; and the ports of any function that hold an adapter (the
# handlers build them: `build_ports`), found apart from the port types infra/port_permissions.py reads.
SETTLED_FIELDS = {field.name for field in fields(Settled)}
ADAPTER_PORTS = {
    port
    for handler in HANDLERS
    for port, value in vars(ports_of_handler(f"trainguard.handlers.{handler}.handler")).items()
    if type(value).__module__.startswith("trainguard.adapters.")
}


def _modules() -> dict[str, ast.Module]:
    return {
        f"trainguard.{path.parent.name}.{path.stem}": ast.parse(path.read_text())
        for folder in ("workflows", "handlers")
        for path in sorted((PACKAGE / folder).glob("*.py"))
    }


def _names_in(module: str, tree: ast.Module, known: set[str]) -> dict[str, Function]:
    """What each name means in `module`: its own top-level functions and the ones it imports."""
    names = {node.name: (module, node.name) for node in tree.body if isinstance(node, ast.FunctionDef)}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module in known:
            names.update({alias.asname or alias.name: (node.module, alias.name) for alias in node.names})
    return names


def _reach(handler: str) -> tuple[set[tuple[str, str]], set[str]]:
    """The (port, method) calls and the other fields of `ports` that code reachable from the handler uses."""
    modules = _modules()
    bodies = {
        (module, node.name): node
        for module, tree in modules.items()
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
    }
    scopes = {module: _names_in(module, tree, set(modules)) for module, tree in modules.items()}
    calls: set[tuple[str, str]] = set()
    others: set[str] = set()
    seen: set[Function] = set()
    todo: list[Function] = [(f"trainguard.handlers.{handler}", "handle")]
    while todo:
        function = todo.pop()
        if function in seen or function not in bodies:
            continue
        seen.add(function)
        for node in ast.walk(bodies[function]):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
                inner = node.value
                if isinstance(inner.value, ast.Name) and inner.value.id == "ports" and inner.attr in ADAPTER_PORTS:
                    calls.add((inner.attr, node.attr))
            if _is_field_of_ports(node) and node.attr not in ADAPTER_PORTS:
                others.add(node.attr)
            if isinstance(node, ast.Name) and node.id in scopes[function[0]]:
                todo.append(scopes[function[0]][node.id])
    return calls, others


def _is_field_of_ports(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ports"


@pytest.mark.parametrize("handler", HANDLERS)
def test_a_functions_ports_hold_only_the_adapters_its_code_calls(handler: str) -> None:
    ports = ports_of_handler(f"trainguard.handlers.{handler}.handler")
    calls, others = _reach(handler)
    assert {port for port, _ in calls} == set(port_methods(ports)), handler
    # Its other fields too (settings, region, clock, the request shape), where it has them.
    assert {f.name for f in fields(ports)} - ADAPTER_PORTS <= others | SETTLED_FIELDS, handler


@pytest.mark.parametrize("handler", HANDLERS)
def test_a_functions_ports_need_no_action_its_calls_do_not(handler: str) -> None:
    ports = ports_of_handler(f"trainguard.handlers.{handler}.handler")
    calls, _ = _reach(handler)
    called = {action for port, method in calls for action in actions_of(type(getattr(ports, port)), method)}
    assert actions_of_ports(ports) == called, handler
    for port, method in calls:  # what mypy sees too: the code calls only what its ports name
        assert method in port_methods(ports)[port], (handler, port, method)


def test_the_reading_sees_a_call_and_would_see_a_port_left_unused() -> None:
    """The check itself: the log-activity handler calls three methods of one port, through its workflow."""
    calls, _ = _reach("log_activity")
    assert calls == {
        ("stall_ledger", "watched_job"),
        ("stall_ledger", "record_log_lines"),
        ("stall_ledger", "record_log_activity"),
    }
    assert {port for port, _ in _reach("stall_prober")[0]} == {
        "jobs",
        "ledger",
        "notifier",
        "stall_ledger",
        "alarms",
        "checkpoints",
        "gpu_metrics",
    }
