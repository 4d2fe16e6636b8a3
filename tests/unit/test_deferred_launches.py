"""Launches made later than their decision (workflows/recheck.py): the quota watch's waiting launches and the
scheduled relaunch read the kill switches again before they act, and the retry launcher acts only on a relaunch
that job-events scheduled."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from tests.fakes import NOW, FakePorts, described_job, fake_ports, with_config
from tests.unit.test_quota_walls import WALL, failed_launch
from trainguard.domain.outcome import OutcomeKind
from trainguard.handlers import failed_launches, retry_launcher
from trainguard.workflows.job_ended import handle_job_end
from trainguard.workflows.ports import LaunchRefused
from trainguard.workflows.quota_watch import check_quota_walls
from trainguard.workflows.scheduled_relaunch import handle_scheduled_relaunch

OPTED_IN = {"trainguard:enabled": "true"}
CAPACITY = "CapacityError: Unable to provision requested ML compute capacity. Please retry using a different type."


def later(ports: FakePorts, hours: int = 5) -> FakePorts:
    return replace(ports, clock=lambda: NOW + timedelta(hours=hours))


def a_waiting_relaunch(ports: FakePorts) -> None:
    """llama-pretrain failed; its relaunch was refused by a quota and waits; the request is approved."""
    ports.jobs.refuse_with = LaunchRefused("ResourceLimitExceeded", WALL)
    ports.jobs.add(described_job(), OPTED_IN)
    assert handle_job_end(ports, "llama-pretrain").kind is OutcomeKind.QUOTA_WALL
    ports.jobs.refuse_with = None
    ports.quotas.decide("req-1", "APPROVED")


def retag(ports: FakePorts, tags: dict[str, str]) -> FakePorts:
    job = ports.jobs.jobs["llama-pretrain"]
    ports.jobs.jobs["llama-pretrain"] = replace(job, tags=tags)
    return ports


def forget(ports: FakePorts) -> FakePorts:
    del ports.jobs.jobs["llama-pretrain"]
    return ports


THROWN = [
    ("global dry run", lambda ports: with_config(ports, dry_run=True), "the setting dry_run"),
    ("opt-in tag removed", lambda ports: retag(ports, {}), "no longer opted in"),
    ("opted out", lambda ports: retag(ports, {"trainguard:enabled": "false"}), "no longer opted in"),
    ("dry-run tag", lambda ports: retag(ports, {**OPTED_IN, "trainguard:dry-run": "true"}), "in dry run now"),
    ("notify only", lambda ports: retag(ports, {**OPTED_IN, "trainguard:actions": "notify"}), "in dry run now"),
    ("no retry", lambda ports: retag(ports, {**OPTED_IN, "trainguard:actions": "quota"}), "no longer allows retry"),
    ("no quota", lambda ports: retag(ports, {**OPTED_IN, "trainguard:actions": "retry"}), "no longer allows quota"),
    ("job gone", forget, "no longer exists"),
]


@pytest.mark.parametrize(("switch", "throw", "said"), THROWN, ids=[t[0] for t in THROWN])
def test_a_waiting_relaunch_is_given_up_when_a_kill_switch_was_thrown_while_it_waited(
    switch: str, throw: Any, said: str
) -> None:
    # The quota watch launched the stored request without reading any of them again.
    ports = fake_ports()
    a_waiting_relaunch(ports)
    thrown = throw(ports)

    [outcome] = check_quota_walls(later(thrown))

    assert outcome.kind is OutcomeKind.NOT_RELAUNCHED and said in outcome.reason, outcome.reason
    assert ports.jobs.attempts == [ports.jobs.attempts[0]]  # job-events' refused attempt; nothing since
    assert ports.quota_ledger.waiting() == []
    told = ports.notifier.sent[-1]
    assert "gave up" in told.body and said in told.body
    assert check_quota_walls(later(thrown, 6)) == [] and ports.notifier.sent[-1] == told  # told once


def test_a_waiting_user_launch_is_not_launched_in_a_global_dry_run() -> None:
    # No job exists (its CreateTrainingJob was refused): the stored request's tags are read, and the global switch.
    ports = fake_ports()
    assert failed_launches.handle(failed_launch(), ports).kind is OutcomeKind.QUOTA_WALL
    ports.quotas.decide("req-1", "APPROVED")

    [outcome] = check_quota_walls(later(with_config(ports, dry_run=True)))

    assert outcome.kind is OutcomeKind.NOT_RELAUNCHED and "the setting dry_run" in outcome.reason
    assert ports.jobs.attempts == [] and ports.quota_ledger.waiting() == []


def test_a_waiting_user_launch_still_wanted_is_launched() -> None:
    ports = fake_ports()
    assert failed_launches.handle(failed_launch(), ports).kind is OutcomeKind.QUOTA_WALL
    ports.quotas.decide("req-1", "APPROVED")
    [outcome] = check_quota_walls(later(ports))
    assert outcome.kind is OutcomeKind.RELAUNCHED and len(ports.jobs.created) == 1


def scheduled(ports: FakePorts) -> None:
    ports.jobs.add(described_job(reason=CAPACITY), OPTED_IN)
    assert handle_job_end(ports, "llama-pretrain").kind is OutcomeKind.RELAUNCH_SCHEDULED


FOR_A_RELAUNCH = [t for t in THROWN if t[0] != "no quota"]  # a relaunch that did not wait for a quota needs retry


@pytest.mark.parametrize(("switch", "throw", "said"), FOR_A_RELAUNCH, ids=[t[0] for t in FOR_A_RELAUNCH])
def test_a_scheduled_relaunch_reads_the_kill_switches_when_it_fires(switch: str, throw: Any, said: str) -> None:
    # It did before, through the job's policy; now through the same re-check as the quota watch. A job no longer
    # opted in, or gone, is skipped silently, as job-events skips it.
    ports = fake_ports()
    scheduled(ports)
    outcome = handle_scheduled_relaunch(later(throw(ports), 1), "llama-pretrain")
    assert ports.jobs.attempts == []
    if outcome.kind is OutcomeKind.NOT_RELAUNCHED:
        assert said in outcome.reason and said in ports.notifier.sent[-1].body
    else:
        assert outcome.kind is OutcomeKind.SKIPPED and switch in ("opt-in tag removed", "opted out", "job gone")


def test_the_retry_launcher_invoked_for_a_relaunch_job_events_never_scheduled_launches_nothing() -> None:
    # Anyone allowed lambda:InvokeFunction could have it re-plan and launch any opted-in failed job.
    ports = fake_ports()
    ports.jobs.add(described_job(reason=CAPACITY), OPTED_IN)
    outcome = retry_launcher.handle({"failed_job_name": "llama-pretrain", "reason": "forged"}, ports)
    assert outcome.kind is OutcomeKind.SKIPPED and "scheduled no relaunch" in outcome.reason
    assert ports.jobs.attempts == [] and ports.notifier.sent == []


def test_the_retry_launcher_launches_nothing_after_job_events_refused_for_a_spent_budget() -> None:
    ports = with_config(fake_ports(), retry_budget_per_hour=1)
    ports.jobs.add(described_job("first"), OPTED_IN)
    assert handle_job_end(ports, "first").kind is OutcomeKind.RELAUNCHED
    ports.jobs.add(described_job("second"), OPTED_IN)
    assert handle_job_end(ports, "second").kind is OutcomeKind.NOT_RELAUNCHED  # the budget is spent
    outcome = retry_launcher.handle({"failed_job_name": "second", "reason": "forged"}, ports)
    assert outcome.kind is OutcomeKind.SKIPPED and [r["TrainingJobName"] for r in ports.jobs.created] == [
        "first-retry1"
    ]


def test_the_retry_launcher_launches_the_relaunch_job_events_scheduled() -> None:
    ports = fake_ports()
    scheduled(ports)
    outcome = retry_launcher.handle({"failed_job_name": "llama-pretrain", "reason": "capacity"}, later(ports, 1))
    assert outcome.kind is OutcomeKind.RELAUNCHED and outcome.new_job_name == "llama-pretrain-retry1"
