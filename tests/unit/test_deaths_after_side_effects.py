"""A process that dies right after a side effect (CreateSchedule, CreateTrainingJob), before its ledger writes,
and the redelivery that finishes its work: what it records and tells must match what SageMaker and the scheduler
will do. The chaos suite (docs/local-tools.md) kills processes at these points; these are its gaps, in fakes."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from tests.fakes import NOW, after_the_lease, described_job, fake_ports, with_config
from trainguard.domain.outcome import OutcomeKind
from trainguard.workflows.job_ended import handle_job_end
from trainguard.workflows.ports import LaunchRefused
from trainguard.workflows.quota_watch import check_quota_walls
from trainguard.workflows.scheduled_relaunch import handle_scheduled_relaunch

OPTED_IN = {"trainguard:enabled": "true"}
CAPACITY = (
    "CapacityError: Unable to provision requested ML compute capacity. Please retry using a different ML instance type."
)
WALL = (
    "The account-level service limit 'ml.p4d.24xlarge for training job usage' is 0 Instances, with current "
    "utilization of 0 Instances and a request delta of 4 Instances. "
    "Please use AWS Service Quotas to request an increase for this quota."
)


class ProcessDied(BaseException):
    """The Lambda process died (a timeout, out of memory): no `except Exception` block runs."""


def die_after(monkeypatch: pytest.MonkeyPatch, port: Any, method: str) -> None:
    """`port.method` does its work, then the process dies."""
    act = getattr(port, method)

    def act_then_die(*args: Any) -> Any:
        act(*args)
        raise ProcessDied

    monkeypatch.setattr(port, method, act_then_die)


def test_a_redelivery_after_a_death_after_create_schedule_reports_the_schedule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The capacity-backoff twin of test_job_ended's CreateTrainingJob case: the dead delivery scheduled the
    # relaunch; the retry must record and tell the schedule, which goes on to relaunch the job. (A schedule takes
    # no unit of the budget: the relaunch takes one when it fires, test_launch_budget.py.)
    ports = with_config(fake_ports(), retry_budget_per_hour=1)
    ports.jobs.add(described_job(reason=CAPACITY), OPTED_IN)
    die_after(monkeypatch, ports.scheduler, "schedule_relaunch")
    with pytest.raises(ProcessDied):
        handle_job_end(ports, "llama-pretrain")
    monkeypatch.undo()
    ports = after_the_lease(ports)

    outcome = handle_job_end(ports, "llama-pretrain")
    assert outcome.kind is OutcomeKind.RELAUNCH_SCHEDULED and outcome.new_job_name == "llama-pretrain-retry1"
    assert ports.ledger.begin_step("llama-pretrain", "end", NOW).recorded["kind"] == "relaunch-scheduled"
    [message] = ports.notifier.sent
    assert "not relaunched" not in message.subject.lower() and "budget" not in message.body
    fired = handle_scheduled_relaunch(ports, "llama-pretrain")
    assert fired.kind is OutcomeKind.RELAUNCHED
    assert [r["TrainingJobName"] for r in ports.jobs.created] == ["llama-pretrain-retry1"]


def test_a_redelivery_that_finds_the_relaunch_created_records_its_lineage(monkeypatch: pytest.MonkeyPatch) -> None:
    # The dead delivery created the relaunch and died before the lineage write; the retry found the job
    # ("already-exists") and wrote no lineage, so `trainguard history` missed the attempt.
    ports = fake_ports()
    ports.jobs.add(described_job(), OPTED_IN)
    die_after(monkeypatch, ports.jobs, "create")
    with pytest.raises(ProcessDied):
        handle_job_end(ports, "llama-pretrain")
    monkeypatch.undo()
    assert ports.ledger.lineage == []
    ports = after_the_lease(ports)

    outcome = handle_job_end(ports, "llama-pretrain")
    assert outcome.kind is OutcomeKind.RELAUNCHED and outcome.details["launch"] == "already-exists"
    assert ports.ledger.lineage == [("llama-pretrain", 1, "llama-pretrain-retry1", "llama-pretrain")]


def test_a_quota_check_that_finds_the_waiting_relaunch_created_records_its_lineage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ports = fake_ports()
    ports.jobs.refuse_with = LaunchRefused("ResourceLimitExceeded", WALL)
    ports.jobs.add(described_job(), OPTED_IN)
    assert handle_job_end(ports, "llama-pretrain").kind is OutcomeKind.QUOTA_WALL
    ports.jobs.refuse_with = None
    ports.quotas.decide("req-1", "APPROVED")
    die_after(monkeypatch, ports.jobs, "create")
    later = replace(ports, clock=lambda: NOW + timedelta(hours=1))
    with pytest.raises(ProcessDied):
        check_quota_walls(later)
    monkeypatch.undo()
    later = after_the_lease(later)

    [outcome] = check_quota_walls(later)
    assert outcome.kind is OutcomeKind.RELAUNCHED
    assert [r["TrainingJobName"] for r in ports.jobs.created] == ["llama-pretrain-retry1"]
    assert ports.ledger.lineage == [("llama-pretrain", 1, "llama-pretrain-retry1", "llama-pretrain")]
