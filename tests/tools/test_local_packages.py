"""The layout of the local tools (local/trainguard_local/): one package per part, each with a one-line
docstring, imports that form no cycle between modules (type-only ones included), packages that depend
on each other in one direction only (docs/architecture.md, "The local tools"), modules and functions of a
readable size, and no two modules with the same file name (issue 25)."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

LOCAL = Path(__file__).parents[2] / "local"
ROOT = "trainguard_local"
# What each package may import from the others: the stand-in at the bottom, the fleet simulator on it, the
# tools on top. `commands` (the CLI's local commands, by name, and the IAM check) is the top.
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 300, 50  # issue 25's sizes
SHARED_FILE_NAMES = {"__init__.py", "__main__.py"}  # a package's own files: every package may have them
ALLOWED = {
    "simulation": set(),
    "stand_in": {"simulation"},
    "fleet": {"simulation", "stand_in"},
    "chaos": {"fleet", "simulation", "stand_in"},
    "demo": {"fleet", "simulation", "stand_in"},
    "bench": {"fleet", "simulation", "stand_in"},
    "sandbox": {"simulation", "stand_in"},
    "deploy_local": set(),
    "commands": {"fleet", "sandbox", "simulation"},
}


def local_modules() -> dict[str, Path]:
    modules = {}
    for path in (LOCAL / ROOT).rglob("*.py"):
        parts = path.relative_to(LOCAL).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def imported_names(source: str, package: str) -> Iterator[str]:
    """Every module name a module of `package` imports, anywhere in it (TYPE_CHECKING blocks and functions
    included), and every string constant that names a local module (what `import_module` loads by name)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            anchor = package.split(".")[: package.count(".") + 2 - node.level] if node.level else []
            base = ".".join([*anchor, node.module] if node.module else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(f"{ROOT}."):
            yield node.value


def import_graph() -> dict[str, set[str]]:
    """Module -> the local modules it imports, with the packages Python runs on the way (their __init__)."""
    modules = local_modules()
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        names = [name.split(".") for name in imported_names(path.read_text(), package)]
        prefixes = {".".join(parts[:n]) for parts in names for n in range(1, len(parts) + 1)}
        own_packages = {".".join(module.split(".")[:n]) for n in range(1, module.count(".") + 1)}
        graph[module] = (prefixes & modules.keys()) - own_packages - {module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles: the strongly connected parts of the graph with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for child in sorted(graph.get(node, ())):
            if child not in index:
                visit(child)
                low[node] = min(low[node], low[child])
            elif child in stack:
                low[node] = min(low[node], index[child])
        if low[node] == index[node]:
            part = stack[stack.index(node) :]
            del stack[stack.index(node) :]
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def package_of(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def test_every_module_lives_in_a_package_with_a_one_line_docstring() -> None:
    modules = local_modules()
    assert sorted({package_of(m) for m in modules} - {""}) == sorted(ALLOWED)
    assert [m for m in modules if m.count(".") == 1 and m.split(".")[1] not in ALLOWED] == []
    packages = [module for module, path in modules.items() if path.name == "__init__.py"]
    for package in packages:  # every package, nested ones included: one line that says what it is
        docstring = ast.get_docstring(ast.parse(modules[package].read_text()), clean=False) or ""
        assert docstring.endswith(".") and "\n" not in docstring, f"{package}: {docstring[:80]!r}"


def test_no_import_cycle_between_the_local_modules() -> None:
    assert cycles(import_graph()) == []


def test_the_local_packages_depend_in_one_direction() -> None:
    wrong = sorted(
        f"{module} imports {target}"
        for module, targets in import_graph().items()
        for target in targets
        if package_of(target) not in {"", package_of(module), *ALLOWED.get(package_of(module), set())}
    )
    assert wrong == []


def test_the_check_sees_type_only_and_relative_imports_and_finds_cycles() -> None:
    source = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from trainguard_local.fleet.model import X\n"
        "from .trace import Y\nfrom . import catalogue\n"
    )
    names = set(imported_names(source, "trainguard_local.fleet"))
    assert {
        "trainguard_local.fleet.model",
        "trainguard_local.fleet.trace",
        "trainguard_local.fleet.catalogue",
    } <= names
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"b"}, "d": {"a"}}) == [["b", "c"]]


def oversized(name: str, source: str) -> list[str]:
    """A module over MAX_MODULE_LINES lines, and each function or method over MAX_FUNCTION_LINES (from its `def`
    line to its last line), nested ones included."""
    found = []
    if (lines := len(source.splitlines())) > MAX_MODULE_LINES:
        found.append(f"{name}: {lines} lines")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{name}:{node.lineno} {node.name}: {length} lines")
    return found


def shared_file_names(paths: Iterable[Path]) -> list[str]:
    """The file names more than one module has (a package's __init__.py and __main__.py aside)."""
    counts = Counter(path.name for path in paths if path.name not in SHARED_FILE_NAMES)
    return sorted(name for name, count in counts.items() if count > 1)


def test_every_local_module_and_function_is_of_a_readable_size() -> None:
    found = [
        problem
        for path in sorted(local_modules().values())
        for problem in oversized(str(path.relative_to(LOCAL)), path.read_text())
    ]
    assert found == []


def test_no_two_local_modules_share_a_file_name() -> None:
    assert shared_file_names(local_modules().values()) == []


def test_the_size_and_name_checks_find_what_they_look_for() -> None:
    long_function = "def f():\n" + "    x = 1\n" * MAX_FUNCTION_LINES
    assert oversized("m.py", long_function) == [f"m.py:1 f: {MAX_FUNCTION_LINES + 1} lines"]
    assert oversized("m.py", long_function.replace("    x = 1\n", "", 1)) == []
    nested = "class C:\n    async def g(self):\n" + "        y = 2\n" * MAX_FUNCTION_LINES
    assert oversized("m.py", nested) == [f"m.py:2 g: {MAX_FUNCTION_LINES + 1} lines"]
    long_module = "x = 1\n" * (MAX_MODULE_LINES + 1)
    assert oversized("m.py", long_module) == [f"m.py: {MAX_MODULE_LINES + 1} lines"]
    assert oversized("m.py", "x = 1\n" * MAX_MODULE_LINES) == []
    paths = [Path("a/world.py"), Path("b/world.py"), Path("a/__init__.py"), Path("b/__init__.py"), Path("a/x.py")]
    assert shared_file_names(paths) == ["world.py"]
