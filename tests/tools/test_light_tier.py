"""`make demo` and `make bench` install only requirements-local.txt (Makefile, `local-setup`): they must run with
nothing else.

The test resolves what requirements-local.txt installs (its pins, their extras and every requirement under them,
from the installed packages' metadata), then runs the fleet demo and the benchmark's parts in a new process in
which every other installed top-level module (the CDK, pytest, the SageMaker SDK, PyTorch, MkDocs, ...) fails to
import, as it would in a `.venv` made by `make demo` alone.
"""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import PackageNotFoundError, packages_distributions, requires
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from trainguard_local.demo.fleet import DEMO_JOBS

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]

BLOCKING_RUNNER = """
import sys
BLOCKED = set(sys.argv[1].split(","))

class NotInTheLocalTier:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"{name}: not installed by requirements-local.txt")
        return None

sys.meta_path.insert(0, NotInTheLocalTier())
exec(sys.argv[2])
"""
RUN_THE_DEMO = """
import runpy
sys.argv = ["trainguard_local.demo", "--out", sys.argv[3]]
runpy.run_module("trainguard_local.demo", run_name="__main__")
"""
# make bench's parts but the long runs: the standard trace's strategies, the prober at scale (smaller), the
# handler's CPU on in-memory ports (tests/fakes.py), the picture.
RUN_BENCH_PARTS = """
from trainguard_local.bench.__main__ import handler_cpu_per_event
from trainguard_local.bench.measure_stalls import measure
from trainguard_local.fleet.anchors import anchor_strategies
from trainguard_local.fleet.benchmark_chart import benchmark_chart_png
from trainguard_local.fleet.report import run_all
from trainguard_local.simulation.trace import generate_trace
from trainguard_local.fleet.trainguard_strategy import TrainguardStrategy
report = run_all(generate_trace(4, 6, 7), [*anchor_strategies(), TrainguardStrategy()])
assert measure(20)["jobs"] == 20 and handler_cpu_per_event() and benchmark_chart_png(report)
print("bench parts ran")
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


def not_in_the_local_tier() -> str:
    """The installed top-level modules that requirements-local.txt does not install, comma-separated."""
    local = installed_by(requirement_lines(ROOT / "requirements-local.txt")) | {"trainguard"}
    blocked = sorted(
        module
        for module, distributions in packages_distributions().items()
        if module.isidentifier()
        and not {canonicalize_name(d) for d in distributions} & local
        and not (ROOT / module).is_dir()  # the repository's own packages (tests/, infra/), which the tools run
    )
    assert {"aws_cdk", "pytest", "torch", "sagemaker"} <= set(blocked)  # the heavy tiers are really blocked
    return ",".join(blocked)


def run_blocked(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    runner = [sys.executable, "-c", BLOCKING_RUNNER, not_in_the_local_tier(), code, *args]
    return subprocess.run(runner, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_the_fleet_demo_runs_with_only_the_local_tier(tmp_path: Path) -> None:
    done = run_blocked(RUN_THE_DEMO, str(tmp_path / "demo-out"))

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith(f"A fleet of {DEMO_JOBS} training jobs")
    assert (tmp_path / "demo-out" / "report.html").exists() and (tmp_path / "demo-out" / "timeline.png").exists()


def test_the_benchmarks_parts_run_with_only_the_local_tier() -> None:
    done = run_blocked(RUN_BENCH_PARTS)

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("bench parts ran")
