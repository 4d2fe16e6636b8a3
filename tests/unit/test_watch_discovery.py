"""A job opted in while it trains is watched within a prober cycle (domain/watch_discovery.py, the prober's
workflow), and a job whose GPUs no alarm can watch is told, never skipped in silence."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from tests.fakes import NOW, FakePorts, described_job, fake_ports
from trainguard.domain.message_kinds import MessageKind
from trainguard.domain.outcome import OutcomeKind
from trainguard.domain.stalls import StallSignal, alarm_name
from trainguard.domain.watch_discovery import CHECKS_PER_CYCLE, STARTS_PER_CYCLE, ListedJob, plan_discovery
from trainguard.workflows.stall_prober import SWEEP_EVERY_MINUTES, probe
from trainguard.workflows.stall_watch import follow_training_state

OPTED_IN = {"trainguard:enabled": "true"}
NOT_OPTED_IN = {"team": "vision"}


def listed(name: str, secondary: str = "Training") -> ListedJob:
    return ListedJob(name, f"arn:aws:sagemaker:us-east-1:123456789012:training-job/{name}", secondary)


def running(ports: FakePorts, name: str, tags: dict[str, str], hosts: int = 4, secondary: str = "Training") -> None:
    description: dict[str, Any] = described_job(name, status="InProgress", secondary=secondary)
    description["ResourceConfig"]["InstanceCount"] = hosts
    description["TrainingStartTime"] = NOW - timedelta(hours=1)
    ports.jobs.add(description, tags)


# --- the plan: which jobs a cycle reads -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("jobs", "watched", "expected"),
    [
        ([], set(), []),
        ([listed("a"), listed("b")], set(), ["a", "b"]),
        ([listed("a"), listed("b")], {"a"}, ["b"]),
        ([listed("a", "Downloading"), listed("b", "Starting"), listed("c")], set(), ["c"]),
        ([listed("a", "Uploading"), listed("b", "Stopping")], set(), []),
        ([listed("b"), listed("a")], set(), ["a", "b"]),  # in name order
    ],
)
def test_a_cycle_reads_the_unwatched_training_jobs(
    jobs: list[ListedJob], watched: set[str], expected: list[str]
) -> None:
    plan = plan_discovery(jobs, watched, NOW)
    assert [job.name for job in plan.to_check] == expected and plan.candidates == len(expected)


@pytest.mark.parametrize("count", [CHECKS_PER_CYCLE + 1, 2 * CHECKS_PER_CYCLE, 7 * CHECKS_PER_CYCLE + 3])
def test_many_unwatched_jobs_are_read_in_turns_and_each_within_its_bound(count: int) -> None:
    jobs = [listed(f"job-{i:04d}") for i in range(count)]
    cycles = -(-count // CHECKS_PER_CYCLE)
    seen: set[str] = set()
    for minute in range(cycles):
        plan = plan_discovery(jobs, set(), NOW + timedelta(minutes=minute))
        assert len(plan.to_check) == CHECKS_PER_CYCLE and plan.candidates == count
        seen |= {job.name for job in plan.to_check}
    assert seen == {job.name for job in jobs}, f"every job read within {cycles} cycles"


# --- the prober: a job opted in while it trains -----------------------------------------------------------------


def test_a_job_opted_in_while_training_is_watched_at_the_next_cycle() -> None:
    ports = fake_ports()
    running(ports, "opted-late", OPTED_IN)
    report = probe(ports)
    assert report.started == ["opted-late"]
    assert [job.job_name for job in ports.stall_ledger.watched()] == ["opted-late"]
    assert set(ports.alarms.list_owned()) == {
        alarm_name(StallSignal.LOG_SILENCE, "opted-late"),
        alarm_name(StallSignal.IDLE_GPU, "opted-late"),
    }


def test_a_job_not_opted_in_is_read_and_left_alone() -> None:
    ports = fake_ports()
    running(ports, "someone-elses", NOT_OPTED_IN)
    report = probe(ports)
    assert report.started == [] and ports.stall_ledger.watched() == [] and ports.alarms.list_owned() == {}
    assert len(ports.jobs.tags_read) == 1


def test_a_watched_job_is_not_read_again_and_a_second_cycle_adds_nothing() -> None:
    ports = fake_ports()
    running(ports, "opted-late", OPTED_IN)
    probe(ports)
    alarms, reads = dict(ports.alarms.alarms), list(ports.jobs.tags_read)
    report = probe(replace(ports, clock=lambda: NOW + timedelta(minutes=1)))
    assert report.started == [] and ports.jobs.tags_read == reads
    assert ports.alarms.alarms == alarms and len(ports.stall_ledger.watched()) == 1


def test_a_job_the_state_change_path_already_watches_is_not_started_twice() -> None:
    ports = fake_ports()
    running(ports, "tagged-at-launch", OPTED_IN)
    follow_training_state(ports, "tagged-at-launch")
    report = probe(ports)
    assert report.started == [] and ports.jobs.tags_read == []


def test_a_job_that_is_not_training_is_left_to_its_state_change() -> None:
    ports = fake_ports()
    running(ports, "downloading", OPTED_IN, secondary="Downloading")
    assert probe(ports).started == [] and ports.jobs.tags_read == []


def test_a_cycle_reads_and_starts_no_more_than_its_bounds() -> None:
    ports = fake_ports()
    for i in range(CHECKS_PER_CYCLE + 10):
        running(ports, f"opted-{i:03d}", OPTED_IN)
    report = probe(ports)
    assert len(report.started) == STARTS_PER_CYCLE
    assert len(ports.jobs.tags_read) == STARTS_PER_CYCLE  # it stops reading once its starts are spent
    assert ports.jobs.listings == 1


def test_a_job_started_in_a_sweep_cycle_keeps_its_alarms() -> None:
    ports = fake_ports()
    running(ports, "opted-late", OPTED_IN)
    sweep_minute = NOW.replace(minute=SWEEP_EVERY_MINUTES)
    report = probe(replace(ports, clock=lambda: sweep_minute))
    assert report.started == ["opted-late"] and report.swept == []
    assert len(ports.alarms.list_owned()) == 2


# --- a job whose GPUs no alarm can watch ------------------------------------------------------------------------


@pytest.mark.parametrize(("hosts", "parts"), [(64, 7), (65, 7), (256, 26), (1000, 100)])
def test_a_large_job_is_watched_on_every_host(hosts: int, parts: int) -> None:
    ports = fake_ports()
    running(ports, "big", OPTED_IN, hosts=hosts)
    assert follow_training_state(ports, "big").kind is OutcomeKind.WATCHING
    owned = set(ports.alarms.list_owned())
    assert len([name for name in owned if name.startswith("trainguard-gpu-part-")]) == parts
    assert {alarm_name(StallSignal.IDLE_GPU, "big"), alarm_name(StallSignal.LOG_SILENCE, "big")} <= owned
    assert ports.notifier.sent == []


def test_a_job_beyond_the_alarms_reach_is_watched_on_log_silence_and_told_once() -> None:
    ports = fake_ports()
    running(ports, "huge", OPTED_IN, hosts=1200)
    first = follow_training_state(ports, "huge")
    again = follow_training_state(ports, "huge")  # a duplicate delivery, or the next state change
    assert first.kind is OutcomeKind.PARTLY_WATCHED and first.notifies
    assert again.kind is OutcomeKind.WATCHING and "log silence only" in again.reason
    assert set(ports.alarms.list_owned()) == {alarm_name(StallSignal.LOG_SILENCE, "huge")}
    assert [job.host_count for job in ports.stall_ledger.watched()] == [1200]
    [told] = ports.notifier.sent
    assert told.kind is MessageKind.GPUS_NOT_WATCHED and "1,200 hosts" in told.body
