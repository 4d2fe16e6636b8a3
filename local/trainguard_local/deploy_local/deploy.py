"""`make deploy-local`: the real CDK CLI (node_modules/.bin/cdk) against moto server on localhost.

    start moto server -> cdk bootstrap -> cdk deploy -> check the resources
    -> cdk deploy --method=direct with changed settings -> check the change -> trainguard test-notification
    -> a job's stall alarms -> cdk destroy -> check it is gone -> trainguard uninstall-alarms -> no alarm left

Each step prints its wall time; any failure exits 1; the server always stops. Nothing leaves the machine:
the CLI gets an endpoint on localhost, dummy credentials, no AWS profile or config file, and no
telemetry, notices or version check. The cloud assembly goes to a temporary directory, never cdk.out.

moto server stands in for CloudFormation with two gaps this works around (docs/local-aws.md):
updates through a change set fail, so the update uses `--method=direct`, which needs a template
without the bootstrap-version rule (the setting `local_deploy`, on here only); and moto's CloudFormation
has no AWS::Scheduler::ScheduleGroup, which trainguard_local.deploy_local.cloudformation_extras adds. This is a smoke
test of the deploy path: moto accepts some resource types without creating them, and the run says which.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import boto3

from infra.settings import CONTEXT_KEY, Settings
from trainguard.adapters.job_activity import LOG_GROUP as TRAINING_LOG_GROUP
from trainguard_local.deploy_local import first_and_last_day
from trainguard_local.deploy_local.server import DUMMY_CREDENTIALS, REGION, local_aws_variables, moto_server
from trainguard_local.deploy_local.stack_checks import StackChecker, StackReport, count_text, require

REPO = Path(__file__).resolve().parents[3]
STACK_NAME = "TrainGuard"  # app.STACK_NAME (a test checks they agree)
BOOTSTRAP_STACK = "CDKToolkit"
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1"})
CDK_TIMEOUT_SECONDS = 600


class DeployLocalError(RuntimeError):
    """A step failed; the message says which and, for a CLI step, ends with the tail of its output."""


def project_context(cdk_json: Path = REPO / "cdk.json") -> dict[str, Any]:
    """The `trainguard` context as cdk.json states it."""
    return dict(json.loads(cdk_json.read_text())["context"][CONTEXT_KEY])


def local_context(base: Mapping[str, Any], **changes: Any) -> dict[str, Any]:
    """cdk.json's settings with `changes`, and `local_deploy` on: the whole object, because `-c trainguard=`
    replaces cdk.json's value rather than merging into it. Validated here, before the CLI runs."""
    context = {**base, **changes, "local_deploy": True}
    Settings.from_context(context)
    return context


EXAMPLE_EMAIL = "ml-oncall@example.com"
EXAMPLE_TRAINING_ROLE = "arn:aws:iam::123456789012:role/team/TrainingRole"


def update_changes(settings: Settings) -> dict[str, Any]:
    """Settings the update changes, each to a value it does not have yet: the functions' environment
    (dry_run), a rule's schedule (quota_check_minutes), a rule and function that come or go
    (watch_failed_launches, the CloudTrail rule), an email subscription, and the PassRole statements."""
    return {
        "dry_run": not settings.dry_run,
        "quota_check_minutes": 5 if settings.quota_check_minutes != 5 else 10,
        "watch_failed_launches": not settings.watch_failed_launches,
        "notification_emails": [] if settings.notification_emails else [EXAMPLE_EMAIL],
        "passable_role_arns": [] if settings.passable_role_arns else [EXAMPLE_TRAINING_ROLE],
    }


def check_local_endpoint(endpoint: str) -> None:
    host = urlsplit(endpoint).hostname
    if host not in LOCAL_HOSTS:
        raise DeployLocalError(f"refusing endpoint {endpoint!r}: deploy-local only talks to localhost")


def cdk_environment(endpoint: str, inherited: Mapping[str, str], scratch: Path) -> dict[str, str]:
    """The CLI's environment: the caller's, without any AWS or CDK variable (a profile, a role, another
    endpoint), plus the local endpoint, dummy credentials, no AWS config file and no telemetry, notices or
    version check. The pinned CLI and Node 22 (node_modules/.bin) come first on PATH, then this Python."""
    check_local_endpoint(endpoint)
    kept = {k: v for k, v in inherited.items() if not k.startswith(("AWS_", "CDK_"))}
    path = os.pathsep.join(
        [str(REPO / "node_modules" / ".bin"), str(Path(sys.executable).parent), kept.get("PATH", "")]
    )
    return {
        **kept,
        **local_aws_variables(endpoint),
        "PATH": path,
        "AWS_CONFIG_FILE": str(scratch / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(scratch / "no-aws-credentials"),
        "NO_PROXY": "localhost,127.0.0.1",
        "no_proxy": "localhost,127.0.0.1",
    }


def cdk_command(verb: str, *arguments: str, output_dir: Path) -> list[str]:
    return [str(REPO / "node_modules" / ".bin" / "cdk"), verb, *arguments, "--no-notices", "--output", str(output_dir)]


def deploy_arguments(context: Mapping[str, Any], *, direct: bool) -> list[str]:
    method = ["--method=direct"] if direct else []
    return [STACK_NAME, "--require-approval", "never", *method, "-c", f"{CONTEXT_KEY}={json.dumps(context)}"]


@dataclass
class Step:
    name: str
    seconds: float = 0.0
    detail: str = ""


class Steps:
    """Runs the steps in order, printing each with its wall time."""

    def __init__(self) -> None:
        self.done: list[Step] = []

    @contextmanager
    def step(self, name: str) -> Iterator[Step]:
        step = Step(name)
        start = time.monotonic()
        try:
            yield step
        except Exception:
            step.seconds = time.monotonic() - start
            print(f"[{step.seconds:6.1f} s] {name:<28} FAILED", flush=True)
            raise
        step.seconds = time.monotonic() - start
        self.done.append(step)
        print(f"[{step.seconds:6.1f} s] {name:<28} {step.detail}", flush=True)


class LocalDeploy:
    """One run: the CLI and boto3 against one endpoint, with a scratch directory for the CLI's output."""

    def __init__(self, endpoint: str, scratch: Path, *, verbose: bool = False) -> None:
        self.endpoint = endpoint
        self.output_dir = scratch / "cdk.out"
        self.log = scratch / "cdk.log"
        self.env = cdk_environment(endpoint, os.environ, scratch)
        self.verbose = verbose
        self.session = boto3.session.Session(
            region_name=REGION,
            aws_access_key_id=DUMMY_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=DUMMY_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )
        self._clients: dict[str, Any] = {}
        self.checker = StackChecker(self.client, STACK_NAME)

    def client(self, service: str) -> Any:
        if service not in self._clients:
            self._clients[service] = self.session.client(service, endpoint_url=self.endpoint)
        return self._clients[service]

    def cdk(self, verb: str, *arguments: str) -> None:
        command = cdk_command(verb, *arguments, output_dir=self.output_dir)
        with self.log.open("a") as log:
            log.write(f"\n$ {' '.join(command)}\n")
            log.flush()
            result = subprocess.run(
                command,
                cwd=REPO,
                env=self.env,
                stdout=None if self.verbose else log,
                stderr=subprocess.STDOUT,
                timeout=CDK_TIMEOUT_SECONDS,
                check=False,
            )
        if result.returncode != 0:
            tail = "\n".join(self.log.read_text().splitlines()[-40:])
            raise DeployLocalError(f"cdk {verb} exited {result.returncode}:\n{tail}")

    def template(self) -> dict[str, Any]:
        return dict(json.loads((self.output_dir / f"{STACK_NAME}.template.json").read_text()))

    def bootstrap(self) -> str:
        account = self.client("sts").get_caller_identity()["Account"]
        self.cdk("bootstrap", f"aws://{account}/{REGION}")
        (stack,) = self.client("cloudformation").describe_stacks(StackName=BOOTSTRAP_STACK)["Stacks"]
        require(stack["StackStatus"] == "CREATE_COMPLETE", f"{BOOTSTRAP_STACK} is {stack['StackStatus']}")
        # docs/deploying.md: SageMaker's training log group must exist before the deploy (the stack subscribes to it).
        self.client("logs").create_log_group(logGroupName=TRAINING_LOG_GROUP)
        return f"aws://{account}/{REGION}, {BOOTSTRAP_STACK} {stack['StackStatus']}"

    def deploy(self, context: Mapping[str, Any], *, direct: bool) -> None:
        self.cdk("deploy", *deploy_arguments(context, direct=direct))

    def destroy(self) -> None:
        """`cdk destroy` of the assembly the update deployed (`--app` on it: no third synth)."""
        self.cdk("destroy", STACK_NAME, "--force", "--app", str(self.output_dir))


def run(steps: Steps, scratch: Path, *, verbose: bool = False) -> None:
    base = project_context()
    first = local_context(base)
    second = local_context(base, **update_changes(Settings.from_context(first)))
    with ExitStack() as server:
        with steps.step("start moto server") as step:
            endpoint = server.enter_context(moto_server())
            step.detail = endpoint
        run_against(steps, LocalDeploy(endpoint, scratch, verbose=verbose), first, second)


def run_against(steps: Steps, local: LocalDeploy, first: dict[str, Any], second: dict[str, Any]) -> None:
    """Bootstrap, deploy, check, update, check, destroy, check: the steps after the server is up."""
    with steps.step("cdk bootstrap") as step:
        step.detail = local.bootstrap()
    deploy_and_check(steps, local, first)
    template, report = deploy_and_check(steps, local, second, changed=update_changes(Settings.from_context(first)))
    with steps.step("trainguard test-notification") as step:
        step.detail = first_and_last_day.check_test_notification(local.client, local.env, STACK_NAME)
    with steps.step("a job watched at destroy") as step:
        watched = first_and_last_day.watch_a_job(local.client)
        step.detail = f"{len(watched)} stall alarms put for {first_and_last_day.WATCHED_JOB}"
    with steps.step("cdk destroy --force") as step:
        local.destroy()
        step.detail = f"{STACK_NAME} destroyed"
    with steps.step("check it is gone") as step:
        step.detail = local.checker.check_destroyed(template, report.created).summary()
        step.detail += "; " + first_and_last_day.check_alarms_left_by_destroy(local.client, watched)
    with steps.step("trainguard uninstall-alarms") as step:
        step.detail = first_and_last_day.check_uninstall_alarms(local.client, local.env)


def deploy_and_check(
    steps: Steps, local: LocalDeploy, context: dict[str, Any], *, changed: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], StackReport]:
    """`cdk deploy`, or with `changed` (the settings it changes) the update, `--method=direct`; then the check of
    what it made against the context's settings. The template deployed and the check's report."""
    settings, update = Settings.from_context(context), changed is not None
    with steps.step("cdk deploy --method=direct" if update else "cdk deploy") as step:
        local.deploy(context, direct=update)
        template = local.template()
        step.detail = f"{STACK_NAME} {local.checker.stack_status()}"
        if changed is not None:
            step.detail += " (" + ", ".join(f"{k}={json.dumps(v)}" for k, v in changed.items()) + ")"
    with steps.step("check the update" if update else "check the resources") as step:
        expected = "UPDATE_COMPLETE" if update else "CREATE_COMPLETE"
        report = local.checker.check_deployed(template, settings, expected_status=expected)
        step.detail = f"{report.summary()}; {local.checker.settings_applied(report, settings)}"
    print(f"{'':11}moto accepted without creating: {count_text(report.not_created)}", flush=True)
    return template, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m trainguard_local.deploy_local",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--verbose", action="store_true", help="show the CDK CLI's output as it runs")
    args = parser.parse_args(argv)
    return run_steps("deploy-local", run, verbose=args.verbose)


def run_steps(name: str, steps_of: Callable[..., None], *, verbose: bool) -> int:
    """Run `steps_of(steps, scratch, verbose=...)` in a scratch directory: 0 when every step passed; else say
    which failed and why, and 1 (the server is stopped by then)."""
    steps = Steps()
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"trainguard-{name}-") as scratch:
        try:
            steps_of(steps, Path(scratch), verbose=verbose)
        except Exception as err:  # any failure: say what, exit non-zero
            print(f"{name} FAILED: {type(err).__name__}: {err}", file=sys.stderr, flush=True)
            return 1
    print(f"{name} passed in {time.monotonic() - start:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
