"""Stall detection with in-memory ports: watch, probe, judge an alarm, stop once, relaunch on Stopped."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from tests.fakes import NOW, FakePorts, described_job, fake_ports
from trainguard.domain.outcome import OutcomeKind
from trainguard.domain.stalls import StallSignal, alarm_name
from trainguard.events.alarm_state_change import AlarmStateChange
from trainguard.workflows.job_ended import handle_job_end
from trainguard.workflows.stall_alarm import handle_stall_alarm
from trainguard.workflows.stall_prober import probe
from trainguard.workflows.stall_watch import follow_training_state, stop_watching

OPTED_IN = {"trainguard:enabled": "true"}


def training(
    ports: FakePorts,
    name: str = "llama-pretrain",
    *,
    for_: timedelta = timedelta(hours=2),
    tags: dict[str, str] | None = None,
    secondary: str = "Training",
    **extra: Any,
) -> None:
    description = described_job(name, status="InProgress", secondary=secondary)
    description["TrainingStartTime"] = NOW - for_
    description.update(extra)
    ports.jobs.add(description, tags or OPTED_IN)


def at(ports: FakePorts, delta: timedelta) -> FakePorts:
    return replace(ports, clock=lambda: NOW + delta)


def alarm(signal: StallSignal = StallSignal.LOG_SILENCE, job: str = "llama-pretrain", state: str = "ALARM"):
    return AlarmStateChange("evt-1", alarm_name(signal, job), state, "OK", "Threshold Crossed", NOW)


def test_a_training_job_is_watched_and_its_alarms_exist() -> None:
    ports = fake_ports()
    training(ports)
    outcome = follow_training_state(ports, "llama-pretrain")
    assert outcome.kind is OutcomeKind.WATCHING
    assert set(ports.alarms.list_owned()) == {
        alarm_name(StallSignal.LOG_SILENCE, "llama-pretrain"),
        alarm_name(StallSignal.IDLE_GPU, "llama-pretrain"),
    }
    [watched] = ports.stall_ledger.watched()
    assert (watched.instance_type, watched.host_count, watched.training_since) == (
        "ml.p4d.24xlarge",
        4,
        NOW - timedelta(hours=2),
    )


def test_a_job_that_is_not_training_yet_is_watched_without_alarms() -> None:
    ports = fake_ports()
    training(ports, secondary="Downloading")
    follow_training_state(ports, "llama-pretrain")
    assert ports.alarms.list_owned() == {} and ports.stall_ledger.watched()[0].training_since is None


def test_a_job_that_is_not_opted_in_is_not_watched() -> None:
    ports = fake_ports()
    training(ports, tags={"team": "x"})
    assert follow_training_state(ports, "llama-pretrain").kind is OutcomeKind.SKIPPED
    assert ports.stall_ledger.watched() == [] and ports.alarms.list_owned() == {}


def test_a_job_that_ends_loses_its_alarms() -> None:
    ports = fake_ports()
    training(ports)
    follow_training_state(ports, "llama-pretrain")
    stop_watching(ports, "llama-pretrain")
    assert ports.stall_ledger.watched() == [] and ports.alarms.list_owned() == {}


def test_the_prober_publishes_silence_over_the_limit_and_none_counted_in_the_grace() -> None:
    """Without rhythm the limit is the fixed 30 min: 12 min of silence is 18 min short of it; a job in its
    startup grace counts no silence, so it is the whole limit short."""
    ports = fake_ports()
    training(ports, "old-job", for_=timedelta(hours=2))
    training(ports, "new-job", for_=timedelta(minutes=10))
    for name in ("old-job", "new-job"):
        follow_training_state(ports, name)
    ports.stall_ledger.record_log_activity("old-job", NOW - timedelta(minutes=12), "step 100")
    report = probe(ports)
    assert report.watched == 2
    assert ports.alarms.published[-1] == {"old-job": -18.0, "new-job": -30.0}


def test_the_prober_reports_a_stop_stuck_for_30_minutes_once() -> None:
    ports = fake_ports()
    training(ports)
    follow_training_state(ports, "llama-pretrain")
    training(ports, secondary="Stopping", TrainingJobStatus="Stopping")  # a person stopped it
    follow_training_state(ports, "llama-pretrain")
    assert probe(at(ports, timedelta(minutes=10))).outcomes == []
    [stuck] = probe(at(ports, timedelta(minutes=31))).outcomes
    assert stuck.kind is OutcomeKind.STUCK_STOPPING and "Stopping for 31 min" in stuck.reason
    assert probe(at(ports, timedelta(minutes=45))).outcomes == []
    assert "stuck in Stopping" in ports.notifier.sent[-1].subject


def test_the_sweep_deletes_alarms_whose_job_is_not_watched() -> None:
    ports = fake_ports()
    for name in (alarm_name(StallSignal.LOG_SILENCE, "gone-job"), "trainguard-gpu-part-1-gone", "someone-elses-alarm"):
        ports.alarms.add_alarm(name)
    report = probe(replace(ports, clock=lambda: NOW.replace(minute=15)))
    assert sorted(report.swept) == sorted(
        [alarm_name(StallSignal.LOG_SILENCE, "gone-job"), "trainguard-gpu-part-1-gone"]
    )
    assert ports.alarms.list_owned() == {}  # and someone else's alarm is not trainguard's to delete


def test_a_verified_stall_is_stopped_once_recorded_and_told() -> None:
    ports = fake_ports()
    training(ports)
    follow_training_state(ports, "llama-pretrain")
    ports.job_logs.newest, ports.job_logs.line = NOW - timedelta(minutes=33), "step 9000 loss 1.71"
    ports.gpu_metrics.value = 800.0
    outcome = handle_stall_alarm(ports, alarm())
    assert outcome.kind is OutcomeKind.STALL_STOPPED and ports.jobs.stops == ["llama-pretrain"]
    again = handle_stall_alarm(ports, alarm())  # a duplicate event, after the stop took effect
    assert again.kind is OutcomeKind.SKIPPED and "Stopping" in again.reason
    training(ports)  # a duplicate that still sees InProgress (describe lags the stop): the ledger says done
    assert handle_stall_alarm(ports, alarm()).kind is OutcomeKind.ALREADY_HANDLED
    assert ports.jobs.stops == ["llama-pretrain"]
    evidence = ports.stall_ledger.stall_record("llama-pretrain")
    assert (
        evidence["last_log_line"] == "step 9000 loss 1.71" and evidence["gpu_by_host"]["llama-pretrain/algo-1"] == 800
    )
    [message] = ports.notifier.sent
    assert "stalled: stopped" in message.subject and "step 9000 loss 1.71" in message.body
    assert "algo-1: GPUUtilization peaked at 800% of a possible 800%" in message.body
    assert "Newest checkpoint" in message.body


def silent_for_40_minutes() -> FakePorts:
    """An opted-in job in training whose newest log line is 40 minutes old: past the stall threshold."""
    ports = fake_ports()
    training(ports)
    ports.job_logs.newest = NOW - timedelta(minutes=40)
    return ports


def instead_of_stop(
    monkeypatch: pytest.MonkeyPatch, ports: FakePorts, stand_in: Callable[[Callable[[str], bool], str], bool]
) -> None:
    """StopTrainingJob as `stand_in` does it, given the fake's own stop and the job's name."""
    stop = ports.jobs.stop
    monkeypatch.setattr(ports.jobs, "stop", lambda name: stand_in(stop, name))


def assert_relaunched_as_stalled_when_stopped(ports: FakePorts) -> None:
    """The job's Stopped event comes: the job-end workflow relaunches it, as a stall."""
    ports.jobs.add(described_job(status="Stopped", secondary="Stopped"), OPTED_IN)
    outcome = handle_job_end(ports, "llama-pretrain")
    assert outcome.kind is OutcomeKind.RELAUNCHED and outcome.category == "stall"


def test_the_stopped_job_is_relaunched_from_its_checkpoint() -> None:
    ports = silent_for_40_minutes()
    handle_stall_alarm(ports, alarm())
    assert_relaunched_as_stalled_when_stopped(ports)
    assert ports.jobs.created[0]["CheckpointConfig"]["S3Uri"] == "s3://ckpt-bucket/llama-pretrain/"


class ProcessDied(BaseException):
    """The Lambda process died (a timeout, out of memory): no `except Exception` block runs."""


def test_a_process_that_dies_right_after_the_stop_still_gets_the_job_relaunched(monkeypatch: Any) -> None:
    # Found by the chaos suite (local/trainguard_local/chaos, seed 4, 100 jobs): the stall was recorded after
    # StopTrainingJob, so a process that died between the two left a stopped job without a stall record; its
    # Stopped event then read as a person's stop, and the stalled job was never relaunched.
    ports = silent_for_40_minutes()

    def stop_then_die(stop: Callable[[str], bool], name: str) -> bool:
        stop(name)
        raise ProcessDied

    instead_of_stop(monkeypatch, ports, stop_then_die)
    with pytest.raises(ProcessDied):
        handle_stall_alarm(ports, alarm())
    assert_relaunched_as_stalled_when_stopped(ports)


def test_a_stop_whose_answer_was_lost_is_told_as_the_stop_it_was(monkeypatch: Any) -> None:
    # SageMaker stopped the job, but its answer was lost (a read timeout after it acted); botocore's retry of
    # StopTrainingJob found the job Stopping (ValidationException "...in status Stopping"), read as "no longer
    # InProgress", and the message said trainguard did nothing. The stall record written before the call says
    # the stop was trainguard's, as the relaunch that follows reads it.
    ports = silent_for_40_minutes()

    def answer_lost(stop: Callable[[str], bool], name: str) -> bool:
        stop(name)  # SageMaker acts; its answer never arrives
        return stop(name)  # the retried call finds the job Stopping

    instead_of_stop(monkeypatch, ports, answer_lost)
    assert handle_stall_alarm(ports, alarm()).kind is OutcomeKind.STALL_STOPPED
    [message] = ports.notifier.sent
    assert "Stopped it (StopTrainingJob)" in message.body and "already left InProgress" not in message.body
    assert_relaunched_as_stalled_when_stopped(ports)


def test_a_job_that_failed_on_its_own_just_before_the_stop_is_told_so(monkeypatch: Any) -> None:
    ports = silent_for_40_minutes()

    def failed_first(stop: Callable[[str], bool], name: str) -> bool:
        ports.jobs.add(described_job(status="Failed"), OPTED_IN)  # it failed between the describe and the stop
        return stop(name)

    instead_of_stop(monkeypatch, ports, failed_first)
    handle_stall_alarm(ports, alarm())
    [message] = ports.notifier.sent
    assert "Nothing: the job had already left InProgress" in message.body and "Stopped it" not in message.body


def test_a_job_that_logs_again_is_not_stopped() -> None:
    ports = fake_ports()
    training(ports)
    ports.job_logs.newest = NOW - timedelta(minutes=2)
    outcome = handle_stall_alarm(ports, alarm())
    assert outcome.kind is OutcomeKind.SKIPPED and "logged 2 min ago" in outcome.reason
    # Re-armed all the same: the prober's view of the job's limit may differ from the fresh one.
    assert ports.jobs.stops == [] and ports.alarms.rearmed == [alarm_name(StallSignal.LOG_SILENCE, "llama-pretrain")]


def test_idle_gpus_while_the_job_logs_are_not_a_stall() -> None:
    ports = fake_ports()
    training(ports)
    ports.job_logs.newest, ports.gpu_metrics.value = NOW - timedelta(minutes=1), 0.0
    assert handle_stall_alarm(ports, alarm(StallSignal.IDLE_GPU)).kind is OutcomeKind.SKIPPED
    assert ports.jobs.stops == []


def test_a_dry_run_job_is_told_and_keeps_running() -> None:
    ports = fake_ports()
    training(ports, tags={**OPTED_IN, "trainguard:actions": "notify"})
    ports.job_logs.newest = NOW - timedelta(hours=1)
    outcome = handle_stall_alarm(ports, alarm())
    assert outcome.kind is OutcomeKind.STALL_FOUND and ports.jobs.stops == []
    assert "dry run" in ports.notifier.sent[0].subject


def test_within_the_grace_nothing_is_stopped_and_the_alarm_is_rearmed() -> None:
    ports = fake_ports()
    training(ports, for_=timedelta(minutes=15))
    assert handle_stall_alarm(ports, alarm(StallSignal.IDLE_GPU)).kind is OutcomeKind.SKIPPED
    assert ports.jobs.stops == [] and ports.alarms.rearmed == [alarm_name(StallSignal.IDLE_GPU, "llama-pretrain")]


def test_alarms_that_are_not_ours_or_not_in_alarm_are_skipped() -> None:
    ports = fake_ports()
    training(ports)
    other = AlarmStateChange("e", "ServerCpuTooHigh", "ALARM", "OK", "", NOW)
    assert handle_stall_alarm(ports, other).kind is OutcomeKind.SKIPPED
    assert handle_stall_alarm(ports, alarm(state="OK")).kind is OutcomeKind.SKIPPED
    assert ports.jobs.stops == []


def test_an_alarm_for_a_job_that_opted_out_removes_its_alarms() -> None:
    ports = fake_ports()
    training(ports)
    follow_training_state(ports, "llama-pretrain")
    training(ports, tags={"trainguard:enabled": "false"})
    assert handle_stall_alarm(ports, alarm()).kind is OutcomeKind.SKIPPED
    assert ports.alarms.list_owned() == {} and ports.jobs.stops == []
