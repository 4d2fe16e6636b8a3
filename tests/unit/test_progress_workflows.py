"""A job that reports progress, with in-memory ports: the log subscription follows its steps, the prober publishes
the minutes past its progress deadline on the log-silence metric, and the verdict names the rule that fired."""

from __future__ import annotations

import base64
import gzip
import json
from datetime import datetime, timedelta

import pytest

from tests.fakes import NOW, FakePorts, fake_ports, narrowed
from tests.unit.test_message_rules import channels, rule_breaks
from tests.unit.test_stall_workflows import OPTED_IN, alarm, at, training
from trainguard.domain.outcome import OutcomeKind
from trainguard.domain.stalls import StallSignal
from trainguard.handlers import log_activity
from trainguard.workflows.function_ports import LogActivityPorts
from trainguard.workflows.stall_alarm import handle_stall_alarm
from trainguard.workflows.stall_prober import probe
from trainguard.workflows.stall_watch import follow_training_state

JOB = "llama-pretrain"


def delivery(lines: list[tuple[datetime, str]], host: int = 1, job: str = JOB) -> dict[str, object]:
    """A CloudWatch Logs subscription delivery of one stream's lines, each message as given."""
    payload = {
        "messageType": "DATA_MESSAGE",
        "owner": "123456789012",
        "logGroup": "/aws/sagemaker/TrainingJobs",
        "logStream": f"{job}/algo-{host}-1764583200",
        "subscriptionFilters": ["trainguard"],
        "logEvents": [
            {"id": str(i), "timestamp": int(t.timestamp() * 1000), "message": message}
            for i, (t, message) in enumerate(lines)
        ],
    }
    return {"awslogs": {"data": base64.b64encode(gzip.compress(json.dumps(payload).encode())).decode()}}


def deliver(ports: FakePorts, lines: list[tuple[datetime, str]], per_delivery: int = 6, job: str = JOB) -> None:
    for start in range(0, len(lines), per_delivery):
        batch = delivery(lines[start : start + per_delivery], job=job)
        log_activity.handle(batch, narrowed(LogActivityPorts, ports))


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


def reporting_chatty_job(hung_for: timedelta, *, busy_gpus: bool = True) -> FakePorts:
    """A job 2 h in training that printed a contract step every 10 s for 1 h, until `hung_for` ago."""
    ports = watched()
    first = NOW - hung_for - timedelta(seconds=3590)
    deliver(ports, step_lines(1, 360, timedelta(seconds=10), first, "trainguard:progress step={} loss=2.0"), 60)
    ports.gpu_metrics.value = 100.0 if busy_gpus else 0.0  # a hung collective keeps the GPUs busy
    return ports


def test_a_reporting_job_hung_with_busy_gpus_is_stopped_within_minutes_and_told_which_rule_fired() -> None:
    ports = reporting_chatty_job(timedelta(minutes=1))
    probe(ports)
    assert ports.alarms.published[-1][JOB] == pytest.approx(-1.0)  # a minute left before its 2 min floor
    later = at(ports, timedelta(minutes=2))
    probe(later)
    assert ports.alarms.published[-1][JOB] == pytest.approx(1.0)
    outcome = handle_stall_alarm(later, alarm())
    assert outcome.kind is OutcomeKind.STALL_STOPPED and ports.jobs.stops == [JOB]
    assert "no advancing step for 3 min" in outcome.reason and "step 360" in outcome.reason
    [message] = ports.notifier.sent
    assert "Progress rule for this job" in message.body and "Log-silence limit" not in message.body
    assert "10 s" in message.body and "2 min" in message.body


def test_a_heartbeat_through_a_wedge_does_not_hold_off_the_stop() -> None:
    ports = reporting_chatty_job(timedelta(minutes=8))
    beats = step_lines(1, 48, timedelta(seconds=10), NOW - timedelta(minutes=8), "heartbeat: phase=training {}")
    deliver(ports, beats, 12)
    ports.job_logs.newest, ports.job_logs.line = beats[-1][0], beats[-1][1]
    probe(ports)
    assert ports.alarms.published[-1][JOB] > 0
    assert handle_stall_alarm(ports, alarm()).kind is OutcomeKind.STALL_STOPPED and ports.jobs.stops == [JOB]


def test_a_long_announced_save_is_left_alone_and_overrunning_it_is_a_stall() -> None:
    ports = reporting_chatty_job(timedelta(minutes=20))
    deliver(
        ports, [(NOW - timedelta(minutes=20) + timedelta(seconds=6), "trainguard:phase begin=checkpoint expect=1200")]
    )
    probe(ports)
    assert ports.alarms.published[-1][JOB] == pytest.approx(-10.1)  # 1200 s x 1.5 = 30 min from its start
    outcome = handle_stall_alarm(ports, alarm())
    assert outcome.kind is OutcomeKind.SKIPPED and "phase 'checkpoint'" in outcome.reason and ports.jobs.stops == []
    assert ports.alarms.rearmed  # set back to OK: it fires again when the allowance runs out
    over = at(ports, timedelta(minutes=11))
    outcome = handle_stall_alarm(over, alarm())
    assert outcome.kind is OutcomeKind.STALL_STOPPED and "past its allowance of 30 min" in outcome.reason


def test_a_fresh_step_from_the_logs_api_is_progress() -> None:
    ports = reporting_chatty_job(timedelta(minutes=6))
    ports.job_logs.newest, ports.job_logs.line = NOW - timedelta(seconds=5), "trainguard:progress step=361"
    outcome = handle_stall_alarm(ports, alarm())
    assert outcome.kind is OutcomeKind.SKIPPED and "within" in outcome.reason and ports.jobs.stops == []


def test_a_reporting_job_with_idle_gpus_and_a_talking_heartbeat_is_stopped_by_the_idle_gpu_signal() -> None:
    ports = reporting_chatty_job(timedelta(minutes=25), busy_gpus=False)
    beats = step_lines(1, 150, timedelta(seconds=10), NOW - timedelta(minutes=25), "watchdog alive {}")
    deliver(ports, beats, 30)
    ports.job_logs.newest, ports.job_logs.line = beats[-1][0], beats[-1][1]
    outcome = handle_stall_alarm(ports, alarm(StallSignal.IDLE_GPU))
    assert outcome.kind is OutcomeKind.STALL_STOPPED, outcome.reason


def start_only_job() -> FakePorts:
    ports = watched()
    deliver(ports, [(NOW - timedelta(minutes=40), "trainguard:start"), (NOW - timedelta(minutes=39), "loading shards")])
    return ports


def phase_overrun_job() -> FakePorts:
    ports = reporting_chatty_job(timedelta(minutes=40))
    deliver(
        ports, [(NOW - timedelta(minutes=40) + timedelta(seconds=6), "trainguard:phase begin=checkpoint expect=1200")]
    )
    return ports


@pytest.mark.parametrize(
    ("make", "fired"),
    [
        (lambda: reporting_chatty_job(timedelta(minutes=40)), "no advancing step for 40 min"),
        (phase_overrun_job, "past its allowance of 30 min: 20 min expected"),
        (start_only_job, "no first step 40 min after its start marker"),
    ],
)
def test_each_progress_stall_message_names_its_rule_and_keeps_the_message_rules(make, fired: str) -> None:
    ports = make()
    outcome = handle_stall_alarm(ports, alarm())
    assert outcome.kind is OutcomeKind.STALL_STOPPED and fired in outcome.reason
    [message] = ports.notifier.sent
    user_text = (ports.stall_ledger.watched()[0].last_log_line,)
    breaks = [b for text, chat in channels(message).values() for b in rule_breaks(text, user_text, chat)]
    assert breaks == []
