"""A job that reports progress, with in-memory ports: the log subscription follows its steps, the prober publishes
the minutes past its progress deadline on the log-silence metric, and the verdict names the rule that fired."""

from __future__ import annotations

import base64
import gzip
import json
from datetime import datetime, timedelta

from tests.fakes import NOW, FakePorts, fake_ports, narrowed
from tests.unit.test_stall_workflows import OPTED_IN, training
from trainguard.handlers import log_activity
from trainguard.workflows.function_ports import LogActivityPorts
from trainguard.workflows.stall_watch import follow_training_state

JOB = "llama-pretrain"


def delivery(lines: list[tuple[datetime, str]], host: int = 1) -> dict[str, object]:
    """A CloudWatch Logs subscription delivery of one stream's lines, each message as given."""
    payload = {
        "messageType": "DATA_MESSAGE",
        "owner": "123456789012",
        "logGroup": "/aws/sagemaker/TrainingJobs",
        "logStream": f"{JOB}/algo-{host}-1764583200",
        "subscriptionFilters": ["trainguard"],
        "logEvents": [
            {"id": str(i), "timestamp": int(t.timestamp() * 1000), "message": message}
            for i, (t, message) in enumerate(lines)
        ],
    }
    return {"awslogs": {"data": base64.b64encode(gzip.compress(json.dumps(payload).encode())).decode()}}


def deliver(ports: FakePorts, lines: list[tuple[datetime, str]], per_delivery: int = 6) -> None:
    for start in range(0, len(lines), per_delivery):
        log_activity.handle(delivery(lines[start : start + per_delivery]), narrowed(LogActivityPorts, ports))


def step_lines(first: int, count: int, every: timedelta, start: datetime, fmt: str) -> list[tuple[datetime, str]]:
    return [(start + i * every, fmt.format(first + i)) for i in range(count)]


def watched(tags: dict[str, str] | None = None, for_: timedelta = timedelta(hours=2)) -> FakePorts:
    ports = fake_ports()
    training(ports, for_=for_, tags={**OPTED_IN, **(tags or {})})
    follow_training_state(ports, JOB)
    return ports


def test_the_subscription_follows_a_jobs_steps_across_deliveries() -> None:
    ports = watched()
    start = NOW - timedelta(minutes=30)
    lines = step_lines(
        1, 120, timedelta(seconds=10), start, "2026-12-06 rank0 INFO trainguard:progress step={} loss=2.1"
    )
    deliver(ports, [*lines, (start + timedelta(seconds=1200), "trainguard:phase begin=checkpoint expect=600")])
    [job] = ports.stall_ledger.watched()
    progress = job.progress
    assert (progress.last_step, progress.advanced_at) == (120, start + timedelta(seconds=1190))
    assert progress.intervals == (10.0,) * 32 and progress.phase is not None and progress.phase.expect_seconds == 600


def test_a_heartbeat_delivered_after_the_steps_does_not_advance() -> None:
    ports = watched()
    start = NOW - timedelta(minutes=30)
    deliver(ports, step_lines(1, 20, timedelta(seconds=10), start, "trainguard:progress step={}"))
    heartbeat = step_lines(0, 60, timedelta(seconds=10), start + timedelta(seconds=200), "heartbeat {} alive step=20")
    deliver(ports, heartbeat)
    [job] = ports.stall_ledger.watched()
    assert (job.progress.last_step, job.progress.advanced_at) == (20, start + timedelta(seconds=190))
    assert job.last_log_time == heartbeat[-1][0]  # the silence rule would have seen the job as alive


def test_a_job_is_read_with_its_own_tag_rule() -> None:
    ports = watched(
        {"trainguard:progress-pattern": "it @step of @any loss @loss", "trainguard:progress-start-seconds": "900"}
    )
    [job] = ports.stall_ledger.watched()
    assert (job.progress_settings.pattern, job.progress_settings.start_seconds) == ("it @step of @any loss @loss", 900)
    start = NOW - timedelta(minutes=5)
    deliver(ports, step_lines(1, 12, timedelta(seconds=10), start, "it {} of 1000 | loss 2.5"))
    [job] = ports.stall_ledger.watched()
    assert job.progress.last_step == 12 and job.progress.reader is not None and job.progress.reader.value == "tag_rule"


def test_a_job_whose_lines_carry_no_progress_keeps_no_progress_state() -> None:
    ports = watched()
    deliver(ports, step_lines(1, 30, timedelta(seconds=10), NOW - timedelta(minutes=10), "epoch {} looks fine"))
    [job] = ports.stall_ledger.watched()
    assert not job.progress.reports and job.rhythm.gaps == 29
