"""One budget for every launch (workflows/launch_budget.py), with in-memory ports: a unit taken when a job is
launched, on every path, given back when it was not, and at most `retry_budget_per_hour` in any 60 minutes."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from tests.fakes import NOW, FakePorts, described_job, fake_ports, with_config
from trainguard.domain.outcome import OutcomeKind
from trainguard.workflows.job_ended import handle_job_end
from trainguard.workflows.ports import LaunchRefused
from trainguard.workflows.quota_watch import check_quota_walls
from trainguard.workflows.scheduled_relaunch import handle_scheduled_relaunch

OPTED_IN = {"trainguard:enabled": "true"}
INTERNAL = "InternalServerError: We encountered an internal error. Please try again."
CAPACITY = "CapacityError: Unable to provision requested ML compute capacity. Please retry using a different type."
WALL = (
    "The account-level service limit 'ml.p4d.24xlarge for training job usage' is 0 Instances, with current "
    "utilization of 0 Instances and a request delta of 4 Instances. "
    "Please use AWS Service Quotas to request an increase for this quota."
)


def at(ports: FakePorts, hour: int, minute: int = 0) -> FakePorts:
    moment = NOW.replace(hour=hour, minute=minute)
    return replace(ports, clock=lambda: moment)


def failed(ports: FakePorts, name: str, reason: str = INTERNAL) -> str:
    ports.jobs.add(described_job(name, reason=reason), OPTED_IN)
    return name


def launched(ports: FakePorts) -> list[str]:
    return [request["TrainingJobName"] for request in ports.jobs.created]


def waiting_on_a_quota(ports: FakePorts, name: str) -> None:
    """`name` failed, its relaunch was refused by a quota and waits; the quota request is then approved."""
    ports.jobs.refuse_with = LaunchRefused("ResourceLimitExceeded", WALL)
    assert handle_job_end(ports, failed(ports, name)).kind is OutcomeKind.QUOTA_WALL
    ports.jobs.refuse_with = None
    ports.quotas.decide("req-1", "APPROVED")


def test_no_60_minutes_hold_more_launches_than_the_budget() -> None:
    # A count per clock hour launched 3 at 10:59 and 3 more at 11:00.
    ports = with_config(fake_ports(), retry_budget_per_hour=3)
    kinds = [handle_job_end(at(ports, 10, 59), failed(ports, f"a{n}")).kind for n in range(3)]
    assert kinds == [OutcomeKind.RELAUNCHED] * 3
    refused = handle_job_end(at(ports, 11, 0), failed(ports, "b"))
    assert refused.kind is OutcomeKind.NOT_RELAUNCHED and "budget of 3 launches in any 60 minutes" in refused.reason
    assert handle_job_end(at(ports, 12, 0), failed(ports, "c")).kind is OutcomeKind.RELAUNCHED
    assert launched(ports) == ["a0-retry1", "a1-retry1", "a2-retry1", "c-retry1"]


def test_a_waiting_launch_takes_a_unit_when_the_quota_watch_launches_it() -> None:
    # The quota watch launched waiting launches without a unit: a budget of 1 made 2 launches in an hour.
    ports = with_config(fake_ports(), retry_budget_per_hour=1)
    waiting_on_a_quota(ports, "walled")
    assert handle_job_end(at(ports, 12, 10), failed(ports, "other")).kind is OutcomeKind.RELAUNCHED
    assert check_quota_walls(at(ports, 12, 20)) == []  # the budget is spent: it waits, as for its quota
    assert launched(ports) == ["other-retry1"] and len(ports.quota_ledger.waiting()) == 1
    [outcome] = check_quota_walls(at(ports, 14, 0))  # 12:10 counts until 14:00 (a stricter slide)
    assert outcome.kind is OutcomeKind.RELAUNCHED and launched(ports) == ["other-retry1", "walled-retry1"]


def test_a_relaunch_that_waits_on_a_quota_gives_its_unit_back() -> None:
    # Job-events took the unit when it planned the relaunch, and kept it while the relaunch waited.
    ports = with_config(fake_ports(), retry_budget_per_hour=1)
    waiting_on_a_quota(ports, "walled")
    assert handle_job_end(ports, failed(ports, "other")).kind is OutcomeKind.RELAUNCHED


def test_a_waiting_launch_still_short_of_quota_gives_its_unit_back() -> None:
    ports = with_config(fake_ports(), retry_budget_per_hour=1)
    waiting_on_a_quota(ports, "walled")
    ports.jobs.refuse_with = LaunchRefused("ResourceLimitExceeded", WALL)
    assert check_quota_walls(at(ports, 12, 10)) == []
    ports.jobs.refuse_with = None
    assert handle_job_end(at(ports, 12, 20), failed(ports, "other")).kind is OutcomeKind.RELAUNCHED


def test_a_scheduled_relaunch_takes_its_unit_when_it_fires() -> None:
    # A schedule took the unit when it was made: the immediate relaunch of another job was refused for a launch
    # that had not happened yet, and would not for ten minutes.
    ports = with_config(fake_ports(), retry_budget_per_hour=1)
    assert handle_job_end(ports, failed(ports, "backoff", CAPACITY)).kind is OutcomeKind.RELAUNCH_SCHEDULED
    assert handle_job_end(ports, failed(ports, "other")).kind is OutcomeKind.RELAUNCHED
    fired = handle_scheduled_relaunch(at(ports, 12, 10), "backoff")
    assert fired.kind is OutcomeKind.NOT_RELAUNCHED and "budget" in fired.reason
    assert launched(ports) == ["other-retry1"]
    assert "budget" in ports.notifier.sent[-1].body  # its owner is told why


def test_a_launch_refused_by_sagemaker_gives_its_unit_back() -> None:
    ports = with_config(fake_ports(), retry_budget_per_hour=1)
    ports.jobs.refuse_with = LaunchRefused("ValidationException", "Value 'x' at 'resourceConfig.instanceType' failed")
    assert handle_job_end(ports, failed(ports, "refused")).kind is OutcomeKind.NOT_RELAUNCHED
    ports.jobs.refuse_with = None
    assert handle_job_end(ports, failed(ports, "other")).kind is OutcomeKind.RELAUNCHED


def test_a_redelivery_takes_no_second_unit() -> None:
    ports = with_config(fake_ports(), retry_budget_per_hour=2)
    name = failed(ports, "job")
    assert handle_job_end(ports, name).kind is OutcomeKind.RELAUNCHED
    ports.ledger.steps.clear()  # a redelivery that finds no record (its delivery died before the write)
    later = replace(ports, clock=lambda: NOW + timedelta(minutes=3))
    assert handle_job_end(later, name).details["launch"] == "already-exists"
    assert handle_job_end(later, failed(ports, "other")).kind is OutcomeKind.RELAUNCHED  # the second unit is free
