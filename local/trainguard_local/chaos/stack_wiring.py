"""What the synthesized stack says about failed invocations: each function's asynchronous retries and
on-failure queue, and each dead-letter queue's alarm. The chaos suite models Lambda with these settings
(lambda_runtime.py) and evaluates these alarms (dead_letters.py); this module reads them from the
template, so a change in infra/ that the model does not follow makes the suite fail.

The synth costs seconds (CDK and Node), so it runs in a child process while the fleet runs:
`python -m trainguard_local.chaos.stack_wiring` prints the wiring as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class StackWiring:
    # handler ("trainguard.handlers.job_events.handler") -> (retry attempts, construct path of its queue)
    functions: dict[str, tuple[int, str]]
    # construct path of a dead-letter queue ("TrainGuard/JobEvents/DeadLetterQueue") -> its alarm's properties
    queue_alarms: dict[str, dict[str, Any]]


def wiring_of(template: dict[str, Any]) -> StackWiring:
    resources = template["Resources"]
    path = {
        lid: str(r.get("Metadata", {}).get("aws:cdk:path", lid)).removesuffix("/Resource")
        for lid, r in resources.items()
    }
    handlers = {lid: r["Properties"]["Handler"] for lid, r in resources.items() if r["Type"] == "AWS::Lambda::Function"}
    functions = {}
    for resource in resources.values():
        if resource["Type"] != "AWS::Lambda::EventInvokeConfig":
            continue
        props = resource["Properties"]
        queue = props["DestinationConfig"]["OnFailure"]["Destination"]["Fn::GetAtt"][0]
        functions[handlers[props["FunctionName"]["Ref"]]] = (int(props["MaximumRetryAttempts"]), path[queue])
    alarms = {}
    for resource in resources.values():
        props = resource["Properties"] if resource["Type"] == "AWS::CloudWatch::Alarm" else {}
        for dimension in props.get("Dimensions", []):
            value = dimension["Value"]
            if dimension["Name"] == "QueueName" and isinstance(value, dict) and "Fn::GetAtt" in value:
                alarms[path[value["Fn::GetAtt"][0]]] = props
    return StackWiring(functions, alarms)


def synthesize_template() -> dict[str, Any]:
    """The stack with default settings, plus the optional CloudTrail rule (failed-launches' queue)."""
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "1")
    from aws_cdk import App

    from infra.settings import Settings
    from infra.stack import TrainGuardStack

    with tempfile.TemporaryDirectory() as outdir:
        context = {"aws:cdk:bundling-stacks": [], "aws:cdk:enable-path-metadata": True}
        app = App(outdir=outdir, context=context)
        TrainGuardStack(app, "TrainGuard", settings=Settings(watch_failed_launches=True))
        template: dict[str, Any] = app.synth().get_stack_by_name("TrainGuard").template
        return template


_SYNTHESIZED: list[StackWiring] = []  # one synth per process: several seeds share it


def known_wiring() -> StackWiring | None:
    return _SYNTHESIZED[0] if _SYNTHESIZED else None


def start_synth() -> subprocess.Popen[str]:
    import infra

    repo_root = Path(infra.__file__).resolve().parent.parent  # app.py's directory: infra/ imports from there
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo_root), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, "-m", "trainguard_local.chaos.stack_wiring"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=repo_root,
        env=environment,
    )


def finish_synth(process: subprocess.Popen[str]) -> StackWiring:
    out, err = process.communicate(timeout=300)
    if process.returncode != 0:
        raise RuntimeError(f"the stack synth for the chaos suite failed:\n{err[-2000:]}")
    data = json.loads(out)
    wiring = StackWiring({k: (v[0], v[1]) for k, v in data["functions"].items()}, data["queue_alarms"])
    _SYNTHESIZED[:] = [wiring]
    return wiring


def main() -> None:
    wiring = wiring_of(synthesize_template())
    json.dump({"functions": wiring.functions, "queue_alarms": wiring.queue_alarms}, sys.stdout)


if __name__ == "__main__":
    main()
