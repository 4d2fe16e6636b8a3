"""The local tools' commands of the `trainguard` CLI (`simulate`, `sandbox inject`), plugged in through the entry
point group `trainguard.commands` (pyproject.toml): the operator commands never import trainguard_local."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from trainguard_cli.inputs import output_file, positive_float, positive_int


def add_commands(commands: Any) -> None:
    add_simulate_command(commands)
    add_sandbox_command(commands)


def add_simulate_command(commands: Any) -> None:
    sim = commands.add_parser("simulate", help="replay a seeded fleet trace: trainguard against the anchors (local)")
    sim.add_argument("--jobs", type=positive_int, default=200, help="training jobs in the trace (default: 200)")
    sim.add_argument(
        "--hours", type=positive_float, default=72, help="hours over which they are submitted (default: 72)"
    )
    sim.add_argument("--seed", type=int, default=7, help="the trace's seed: the same seed, the same trace (default: 7)")
    sim.add_argument("--json", dest="json_out", metavar="FILE", type=output_file, help="write the JSON report here")
    sim.add_argument(
        "--png", metavar="FILE", type=output_file, help="write the timeline here: no guard above trainguard"
    )
    sim.add_argument(
        "--html", metavar="FILE", type=output_file, help="write the report as one self-contained HTML page"
    )
    sim.add_argument("--no-trainguard", action="store_true", help="run the anchors only")
    sim.add_argument(
        "--with-leave",
        action="store_true",
        help="run trainguard a second time, every job tagged relaunch-if-slow=true and stop-if-diverged=true",
    )
    # The simulator is imported when the command runs: the CLI's other commands start without it.
    sim.set_defaults(json=False, run=lambda a: import_module("trainguard_local.fleet.simulate").run_command(a))


def add_sandbox_command(commands: Any) -> None:
    """`trainguard sandbox inject`: talks to a running `make sandbox` (trainguard_local.sandbox.control)."""
    sandbox = commands.add_parser("sandbox", help="break a job in a running `make sandbox` (local)")
    inject = sandbox.add_subparsers(dest="sandbox_command", required=True).add_parser(
        "inject",
        help="inject a fault into a running simulated job",
        description="hang: no more logs, idle GPUs; internal-error, capacity: the job fails with that "
        "reason; quota: the next launch of the job's instance type hits ResourceLimitExceeded.",
    )
    inject.add_argument("job", help="a running training job in the sandbox")
    inject.add_argument("fault", metavar="hang|internal-error|capacity|quota", help="the fault (see above)")
    inject.add_argument("--endpoint-url", help="the sandbox (default: $AWS_ENDPOINT_URL, else http://127.0.0.1:5005)")
    inject.add_argument("--json", action="store_true", help="print the sandbox's answer as JSON")
    control = "trainguard_local.sandbox.control"
    inject.set_defaults(
        run=lambda a: import_module(control).run_inject(a), render=lambda r: import_module(control).inject_text(r)
    )
