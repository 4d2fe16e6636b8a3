"""The rules of the layout (STYLE.md): the domain core is pure; only adapters import boto3."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "lambdas" / "trainguard"
FORBIDDEN_IN_CORE = {"boto3", "botocore", "os", "aws_lambda_powertools", "logging"}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_the_domain_imports_no_sdk_no_environment_no_powertools() -> None:
    for path in (PACKAGE / "domain").glob("*.py"):
        assert not imported_modules(path) & FORBIDDEN_IN_CORE, path.name


def test_only_adapters_and_the_wiring_import_boto3() -> None:
    # The adapters, and the places that build them: the Lambda wiring and the commands that call AWS.
    allowed = {PACKAGE / "adapters", PACKAGE / "handlers" / "wiring.py"}
    for path in PACKAGE.rglob("*.py"):
        if "boto3" in imported_modules(path):
            assert any(path == a or a in path.parents for a in allowed), path


def test_the_lambda_package_builds_its_ports_without_reflection() -> None:
    # Each handler module constructs its adapters by name (its `build_ports`); the IAM derivation, which reads the
    # ports' types, runs at synth time in infra/port_permissions.py, outside the asset.
    for path in PACKAGE.rglob("*.py"):
        assert "importlib" not in imported_modules(path), path
        assert "get_type_hints" not in path.read_text(), path


def test_modules_stay_small() -> None:
    for path in PACKAGE.rglob("*.py"):
        assert len(path.read_text().splitlines()) <= 320, path


def test_the_lambda_package_never_imports_the_local_stand_in() -> None:
    # trainguard_local is not in the Lambda asset: the CLI's local commands (simulate, sandbox) import it
    # lazily, by name, when they run.
    for path in PACKAGE.rglob("*.py"):
        assert "trainguard_local" not in imported_modules(path), path


CLI = Path(__file__).parents[2] / "cli" / "trainguard_cli"


def test_the_operator_commands_import_no_local_tool() -> None:
    # The local tools add their commands through an entry point (trainguard_local/commands/cli.py).
    for path in CLI.rglob("*.py"):
        assert "trainguard_local" not in imported_modules(path), path


REPOSITORY = Path(__file__).parents[2]


def _tracked_text_files() -> list[Path]:
    import subprocess

    names = subprocess.run(["git", "ls-files"], cwd=REPOSITORY, capture_output=True, text=True, check=True).stdout
    return [
        REPOSITORY / n for n in names.splitlines() if n.endswith((".py", ".md", ".toml", ".json", ".txt", "Makefile"))
    ]


def test_no_tracked_file_refers_to_a_path_outside_the_repository() -> None:
    outside = ("../" + "shared", "/tmp/" + "notes")  # split, so this file does not name them itself
    offenders = [
        str(p.relative_to(REPOSITORY)) for p in _tracked_text_files() if any(o in p.read_text() for o in outside)
    ]
    assert offenders == [], offenders


def test_every_relative_link_of_the_documentation_resolves() -> None:
    import re

    broken = []
    for page in [REPOSITORY / "README.md", REPOSITORY / "SECURITY.md", *sorted((REPOSITORY / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if not target.startswith(("http://", "https://")) and not (page.parent / target).exists():
                broken.append(f"{page.name}: {target}")
    assert broken == [], broken
