"""Run the sandbox: the stand-in (``stand_in.local_aws``) behind one endpoint (``endpoint.py``: SageMaker and
Service Quotas to the simulated control planes, ``/_sandbox/`` to the control API, the rest to moto), the
simulated jobs (``training.py``) and trainguard's functions (``guard.py``) on the virtual clock, until Ctrl-C
(or ``stop`` is set). ``fault_injection.py`` breaks a running job on request (``trainguard sandbox inject``,
whose client is ``control.py``: the only module here the ``trainguard`` command imports, lazily).

The clock starts 13 days back, the furthest CloudWatch Logs takes a log event from (PutLogEvents refuses
events more than 14 days old: https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_PutLogEvents.html),
and moves one virtual minute at a time, ``speed`` virtual minutes per real second at most: each minute the
jobs live it, then the guard's functions run. It never passes the wall clock: once it has caught up, it
waits for each real minute. When a minute's work takes longer than its share of real time, virtual time
runs slower; it never skips a minute, so the prober and the alarms see every minute, as on AWS.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TextIO

from trainguard_local.sandbox.control import DEFAULT_PORT
from trainguard_local.sandbox.endpoint import serve_endpoint
from trainguard_local.sandbox.fault_injection import FaultInjector, control_api
from trainguard_local.sandbox.guard import GuardLoop, invoke
from trainguard_local.sandbox.training import SimulatedTraining
from trainguard_local.simulation.clock import SimClock, run_started_at
from trainguard_local.stand_in.fleet_side import CHECKPOINT_BUCKET
from trainguard_local.stand_in.local_aws import local_aws
from trainguard_local.stand_in.stack_resources import ACCOUNT, LEDGER_TABLE, REGION, TRAINING_ROLE

SDK_CONFIG = Path(__file__).with_name("sagemaker_config.yaml")
SDK_DEFAULT_BUCKET = f"sagemaker-{REGION}-{ACCOUNT}"  # the SDK's name for it; set in SDK_CONFIG
SAGEMAKER_TRUST = (
    '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", '
    '"Principal": {"Service": "sagemaker.amazonaws.com"}, "Action": "sts:AssumeRole"}]}'
)
SESSION_HOURS = 12 * 24  # virtual hours a session can run before it catches up with the wall clock (and a day more)
MINUTE = timedelta(minutes=1)


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
        aws.clock.start_at(run_started_at(SESSION_HOURS))
        ports = boto3_ports(clock=aws.clock)
        say = _teller(aws.clock, aws.clock(), out)
        role_name = TRAINING_ROLE.rsplit("/", 1)[1]
        aws.client("iam").create_role(RoleName=role_name, AssumeRolePolicyDocument=SAGEMAKER_TRUST)
        training = SimulatedTraining(
            aws,
            say,
            on_log_delivery=lambda event: invoke(log_activity.handle, event, ports),
            start_minutes=options.start_minutes,
            checkpoint_minutes=options.checkpoint_minutes,
        )
        guard = GuardLoop(aws, ports, say)
        control = control_api(aws, FaultInjector(aws, training, say), training)
        with serve_endpoint(aws, control, port=options.port) as url:
            out.write(banner(url, options, aws.clock()))
            out.flush()
            _run_clock(aws.clock, [training.minute, guard.minute], options.speed, stop or threading.Event())


def banner(url: str, options: SandboxOptions, start: datetime) -> str:
    behind = round((datetime.now(UTC) - start) / timedelta(days=1))
    return f"""trainguard sandbox: every AWS service on {url}
  SageMaker and Service Quotas: simulated control planes; the rest: moto. trainguard is attached.
  Virtual clock: from {start:%Y-%m-%d %H:%M} UTC, {behind} days behind yours; {options.speed:g} virtual minutes a
  real second at most, and never past your clock (once it catches up, it keeps real time). Each line below
  starts with [+time since start, virtual time UTC]: the times trainguard records.

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


def _run_clock(
    clock: SimClock,
    every_minute: list[Callable[[], None]],
    speed: float,
    stop: threading.Event,
    wall: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> None:
    """Move `clock` a minute at a time, at most `speed` minutes per real second and never past `wall`,
    running `every_minute` after each move."""
    tick, due = 1.0 / speed, time.monotonic()
    while not stop.is_set():
        wait = max(due - time.monotonic(), (clock() + MINUTE - wall()).total_seconds())
        if wait > 0:
            stop.wait(min(wait, 1.0))  # once caught up, up to a minute: look again every second
            continue
        clock.skip(MINUTE)
        for live in every_minute:
            live()
        due = max(due + tick, time.monotonic())  # behind: this minute took longer than its share; do not race


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
