"""`make demo` installs only requirements-local.txt (Makefile, `local-setup`): the demo must run with nothing else.

The test resolves what requirements-local.txt installs (its pins, their extras and every requirement under them,
from the installed packages' metadata), then runs the fleet demo in a new process in which every other installed
top-level module (the CDK, pytest, the SageMaker SDK, PyTorch, MkDocs, ...) fails to import, as it would in a
`.venv` made by `make demo` alone.
"""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import PackageNotFoundError, packages_distributions, requires
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]

BLOCKING_RUNNER = """
import runpy, sys
BLOCKED = set(sys.argv[1].split(","))

class NotInTheLocalTier:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"{name}: not installed by requirements-local.txt")
        return None

sys.meta_path.insert(0, NotInTheLocalTier())
sys.argv = ["trainguard_local.demo", "--out", sys.argv[2]]
runpy.run_module("trainguard_local.demo", run_name="__main__")
"""


def requirement_lines(path: Path) -> list[str]:
    """The requirement lines of a requirements file, following `-r` includes."""
    lines: list[str] = []
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.startswith("-r "):
            lines += requirement_lines(path.parent / line[3:].strip())
        elif line:
            lines.append(line)
    return lines


def installed_by(lines: list[str]) -> set[str]:
    """Every distribution these requirements install: their names, and what each requires in turn (with the
    extras asked for), from the installed metadata."""
    seen: set[str] = set()
    todo = [Requirement(line) for line in lines]
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        key = f"{name}[{','.join(sorted(requirement.extras))}]"
        if key in seen:
            continue
        seen.add(key)
        try:
            needs = requires(name) or []
        except PackageNotFoundError:
            continue
        for text in needs:
            need = Requirement(text)
            wanted = need.marker is None or any(
                need.marker.evaluate({"extra": extra}) for extra in {"", *requirement.extras}
            )
            if wanted:
                todo.append(need)
    return {key.partition("[")[0] for key in seen}


def test_requirements_local_pins_what_the_demo_imports_and_no_more() -> None:
    local = installed_by(requirement_lines(ROOT / "requirements-local.txt"))
    everything = installed_by(requirement_lines(ROOT / "requirements-dev.txt"))
    assert {"moto", "matplotlib", "boto3", "flask"} <= local
    assert not {"aws-cdk-lib", "sagemaker", "torch", "pytest", "mkdocs"} & local
    assert local < everything  # the dev tier is the local tier and more


def test_the_fleet_demo_runs_with_only_the_local_tier(tmp_path: Path) -> None:
    local = installed_by(requirement_lines(ROOT / "requirements-local.txt")) | {"trainguard"}
    blocked = sorted(
        module
        for module, distributions in packages_distributions().items()
        if module.isidentifier() and not {canonicalize_name(d) for d in distributions} & local
    )
    assert {"aws_cdk", "pytest", "torch", "sagemaker"} <= set(blocked)  # the heavy tiers are really blocked

    done = subprocess.run(
        [sys.executable, "-c", BLOCKING_RUNNER, ",".join(blocked), str(tmp_path / "demo-out")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("A fleet of 13 training jobs")
    assert (tmp_path / "demo-out" / "report.html").exists() and (tmp_path / "demo-out" / "timeline.png").exists()
