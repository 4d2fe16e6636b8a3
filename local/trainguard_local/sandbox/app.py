"""Run the sandbox: the stand-in (``stand_in.local_aws``) behind one endpoint, the simulated jobs and
trainguard on a virtual clock, until Ctrl-C (or ``stop`` is set).

The clock moves one virtual minute at a time, ``speed`` virtual minutes per real second at most: each
minute the jobs live it (``world.py``), then the guard's functions run (``guard.py``). When a minute's
work takes longer than its share of real time, virtual time runs slower; it never skips a minute, so the
prober and the alarms see every minute, as on AWS.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from trainguard_local.sandbox.control import DEFAULT_PORT
from trainguard_local.sandbox.endpoint import SandboxEndpoint
from trainguard_local.sandbox.faults import FaultInjector, FaultRefused
from trainguard_local.sandbox.guard import GuardLoop, invoke
from trainguard_local.sandbox.world import SimulatedTraining
from trainguard_local.stand_in.fleet_side import CHECKPOINT_BUCKET
from trainguard_local.stand_in.local_aws import LocalAWS, local_aws
from trainguard_local.stand_in.stack_resources import ACCOUNT, LEDGER_TABLE, REGION, TRAINING_ROLE

SDK_CONFIG = Path(__file__).with_name("sagemaker_config.yaml")
SDK_DEFAULT_BUCKET = f"sagemaker-{REGION}-{ACCOUNT}"  # the SDK's name for it; set in SDK_CONFIG
SAGEMAKER_TRUST = (
    '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", '
    '"Principal": {"Service": "sagemaker.amazonaws.com"}, "Action": "sts:AssumeRole"}]}'
)


@dataclass(frozen=True)
class SandboxOptions:
    port: int = DEFAULT_PORT
    speed: float = 10.0  # virtual minutes per real second, at most
    start_minutes: int = 2  # Starting -> Training
    checkpoint_minutes: int = 10


def run_sandbox(options: SandboxOptions, *, out: TextIO = sys.stdout, stop: threading.Event | None = None) -> None:
    # The functions' Powertools settings (infra/guard_function.py), quiet: no EMF lines, warnings only.
    os.environ.update(POWERTOOLS_SERVICE_NAME="trainguard", POWERTOOLS_METRICS_NAMESPACE="TrainGuard")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    logging.getLogger("trainguard").setLevel(logging.WARNING)  # the functions' JSON log: warnings only
    from trainguard.handlers import log_activity
    from trainguard.handlers.wiring import boto3_ports

    with local_aws() as aws:
        ports = boto3_ports(clock=aws.clock)
        say = _teller(aws.clock, aws.clock(), out)
        role_name = TRAINING_ROLE.rsplit("/", 1)[1]
        aws.client("iam").create_role(RoleName=role_name, AssumeRolePolicyDocument=SAGEMAKER_TRUST)
        world = SimulatedTraining(
            aws,
            say,
            on_log_delivery=lambda event: invoke(log_activity.handle, event, ports),
            start_minutes=options.start_minutes,
            checkpoint_minutes=options.checkpoint_minutes,
        )
        guard = GuardLoop(aws, ports, say)
        control = _control_api(aws, FaultInjector(aws, world, say), world)
        with SandboxEndpoint(aws, control, port=options.port) as endpoint:
            out.write(banner(endpoint.url, options))
            out.flush()
            _run_clock(aws, world, guard, options.speed, stop or threading.Event())


def banner(url: str, options: SandboxOptions) -> str:
    return f"""trainguard sandbox: every AWS service on {url}
  SageMaker and Service Quotas: simulated control planes; the rest: moto. trainguard is attached.
  Virtual clock: {options.speed:g} virtual minutes per real second at most. Each line below starts with
  [+time since start, virtual time UTC]: the times trainguard records, ahead of your clock.

In another shell:
export AWS_ENDPOINT_URL={url}
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_DEFAULT_REGION={REGION}
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL_SAGEMAKER AWS_ENDPOINT_URL_SERVICE_QUOTAS
export TRAINGUARD_LEDGER_TABLE_NAME={LEDGER_TABLE}
export SAGEMAKER_USER_CONFIG_OVERRIDE={SDK_CONFIG}

  Execution role: {TRAINING_ROLE} (trainguard may pass it)
  Buckets: s3://{CHECKPOINT_BUCKET} for checkpoints; the SDK creates s3://{SDK_DEFAULT_BUCKET}
  Faults: trainguard sandbox inject JOB hang|internal-error|capacity|quota
  Ctrl-C stops the sandbox.

"""


def _run_clock(aws: LocalAWS, world: SimulatedTraining, guard: GuardLoop, speed: float, stop: threading.Event) -> None:
    tick = 1.0 / speed
    due = time.monotonic()
    minute = 0
    while not stop.is_set():
        minute += 1
        aws.clock.skip(timedelta(minutes=1))
        world.minute()
        guard.minute(minute)
        due += tick
        delay = due - time.monotonic()
        if delay > 0:
            stop.wait(delay)
        else:
            due = time.monotonic()  # behind: this minute took longer than its share; do not race to catch up


def _control_api(
    aws: LocalAWS, faults: FaultInjector, world: SimulatedTraining
) -> Callable[[str, str, dict[str, Any] | None], tuple[int, dict[str, Any]]]:
    def control(method: str, action: str, payload: dict[str, Any] | None) -> tuple[int, dict[str, Any]]:
        if (method, action) == ("GET", "jobs"):
            return 200, {"virtual_time": aws.clock().isoformat(), "jobs": world.snapshot()}
        if (method, action) == ("POST", "inject"):
            if not isinstance(payload, dict) or not {"job", "fault"} <= payload.keys():
                return 400, {"error": 'inject takes {"job": NAME, "fault": FAULT}'}
            try:
                return 200, faults.inject(str(payload["job"]), str(payload["fault"]))
            except FaultRefused as refused:
                return refused.status, {"error": str(refused)}
        return 404, {"error": f"no sandbox action {method} {action!r} (GET jobs, POST inject)"}

    return control


def _teller(clock: Callable[[], datetime], start: datetime, out: TextIO) -> Callable[[str], None]:
    """Print a line stamped with the virtual time since the sandbox started; safe from any thread."""
    lock = threading.Lock()

    def say(text: str) -> None:
        now = clock()
        minutes = int((now - start).total_seconds() // 60)
        with lock:
            out.write(f"[+{minutes // 60}:{minutes % 60:02d} {now:%H:%M}Z] {text}\n")
            out.flush()

    return say
