"""LedgerPort: FakeLedger and adapters/ledger.py's Ledger on moto's DynamoDB, held to the same behaviour."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest

from tests.contracts.conftest import IMPLEMENTATIONS, TABLE
from tests.fakes import NOW, FakeLedger
from trainguard.adapters.ledger import LEASE, Ledger
from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard.workflows.ports import LedgerPort, StepInProgress, StepState
from trainguard_cli.ledger_reader import LedgerReader

RELAUNCHED = Outcome(OutcomeKind.RELAUNCHED, "job", "an internal error", new_job_name="job-retry1")


@dataclass
class Subject:
    ledger: LedgerPort
    lineage: Callable[[str], list[tuple[int, str, str]]]  # a root's records: (attempt, job, retry_of)


@pytest.fixture(params=IMPLEMENTATIONS)
def subject(request: pytest.FixtureRequest) -> Subject:
    if request.param == "fake":
        fake = FakeLedger()
        return Subject(fake, lambda root: sorted((a, j, r) for (rt, a, j, r) in fake.lineage if rt == root))
    client = request.getfixturevalue("dynamodb")
    reader = LedgerReader(client, TABLE)  # what `trainguard history` reads of the lineage
    return Subject(
        Ledger(client, TABLE), lambda root: [(a.attempt, a.job_name, a.retry_of) for a in reader.lineage(root)]
    )


@pytest.fixture
def ledger(subject: Subject) -> LedgerPort:
    return subject.ledger


def test_the_first_delivery_holds_the_step_a_second_sees_it_in_progress(ledger: LedgerPort) -> None:
    assert ledger.begin_step("job", "end", NOW).state is StepState.FIRST
    with pytest.raises(StepInProgress):
        ledger.begin_step("job", "end", NOW + timedelta(seconds=30))


def test_a_finished_step_is_done_with_its_outcome(ledger: LedgerPort) -> None:
    ledger.begin_step("job", "end", NOW)
    ledger.finish_step("job", "end", RELAUNCHED, NOW)
    done = ledger.begin_step("job", "end", NOW + timedelta(minutes=1))
    assert done.state is StepState.DONE
    assert done.recorded == {**RELAUNCHED.as_dict(), "kind": "relaunched"}
    assert ledger.begin_step("job", "end", NOW + LEASE * 10).state is StepState.DONE  # done never expires


def test_a_decision_without_action_is_recorded_without_a_lease(ledger: LedgerPort) -> None:
    ledger.finish_step("job", "end", Outcome(OutcomeKind.SKIPPED, "job", "a person stopped it"), NOW)
    done = ledger.begin_step("job", "end", NOW)
    assert done.state is StepState.DONE and done.recorded["reason"] == "a person stopped it"


@pytest.mark.parametrize(
    ("later", "taken_over"),
    [(LEASE - timedelta(seconds=1), False), (LEASE, False), (LEASE + timedelta(seconds=1), True)],
    ids=["within", "at-expiry", "expired"],
)
def test_a_lease_older_than_its_expiry_can_be_taken_again(
    ledger: LedgerPort, later: timedelta, taken_over: bool
) -> None:
    ledger.begin_step("job", "end", NOW)  # then the holder dies
    if taken_over:
        assert ledger.begin_step("job", "end", NOW + later).state is StepState.FIRST
        with pytest.raises(StepInProgress):  # and the new holder has a lease of its own
            ledger.begin_step("job", "end", NOW + later + LEASE - timedelta(seconds=1))
    else:
        with pytest.raises(StepInProgress):
            ledger.begin_step("job", "end", NOW + later)


def test_an_abandoned_step_can_be_started_again_at_once(ledger: LedgerPort) -> None:
    ledger.begin_step("job", "end", NOW)
    ledger.abandon_step("job", "end")
    assert ledger.begin_step("job", "end", NOW).state is StepState.FIRST


def test_steps_of_different_jobs_and_kinds_are_independent(ledger: LedgerPort) -> None:
    assert ledger.begin_step("a", "end", NOW).state is StepState.FIRST
    assert ledger.begin_step("b", "end", NOW).state is StepState.FIRST
    assert ledger.begin_step("a", "relaunch", NOW).state is StepState.FIRST


def take(ledger: LedgerPort, at: datetime, limit: int, *launches: str) -> list[bool]:
    return [ledger.take_launch_budget(launch, at, limit) for launch in launches]


def test_the_budget_counts_each_launch_once_within_the_hour(ledger: LedgerPort) -> None:
    assert take(ledger, NOW, 2, "a", "b", "c") == [True, True, False]
    assert take(ledger, NOW + timedelta(minutes=59), 2, "c") == [False]  # NOW is 12:00: the same hour
    assert take(ledger, NOW + timedelta(minutes=30), 2, "a", "b") == [True, True]  # a redelivery: no second unit
    assert take(ledger, NOW + timedelta(hours=2), 2, "c", "d", "e") == [True, True, False]
    assert take(ledger, NOW + timedelta(hours=2), 3, "e") == [True]  # a higher limit leaves room


def test_no_60_minutes_hold_more_than_the_limit_across_the_turn_of_an_hour(ledger: LedgerPort) -> None:
    # A count per clock hour granted `limit` at 10:59 and `limit` more at 11:00.
    ten_to_eleven = NOW.replace(hour=10, minute=59)
    assert take(ledger, ten_to_eleven, 3, "a", "b", "c") == [True, True, True]
    assert take(ledger, ten_to_eleven + timedelta(minutes=1), 3, "d") == [False]  # 11:00
    assert take(ledger, ten_to_eleven + timedelta(minutes=60), 3, "d") == [False]  # 11:59
    assert take(ledger, ten_to_eleven + timedelta(minutes=61), 3, "d", "e", "f", "g") == [True, True, True, False]
    # 12:00: stricter than a true sliding window, never looser: 10:59's units stop counting only now, an hour and
    # a minute after they were taken.


def test_a_launch_holding_a_unit_from_the_previous_hour_takes_no_second_one(ledger: LedgerPort) -> None:
    assert take(ledger, NOW - timedelta(minutes=1), 1, "a") == [True]  # 11:59
    assert take(ledger, NOW + timedelta(minutes=1), 1, "a", "b") == [True, False]  # 12:01: its redelivery


def test_a_unit_given_back_makes_room_once(ledger: LedgerPort) -> None:
    assert take(ledger, NOW - timedelta(minutes=1), 2, "a", "b", "c") == [True, True, False]
    ledger.give_back_launch_budget("a", NOW + timedelta(minutes=1))  # found in the previous hour
    ledger.give_back_launch_budget("a", NOW + timedelta(minutes=1))  # a second give-back: nothing more
    ledger.give_back_launch_budget("never-taken", NOW)
    assert take(ledger, NOW + timedelta(minutes=2), 2, "c", "d") == [True, False]


@pytest.mark.parametrize("limit", [0, 1, 5])
def test_a_budget_of_n_grants_n_launches_an_hour(ledger: LedgerPort, limit: int) -> None:
    # A budget of 0 once granted the hour's first relaunch on the adapter (its condition lets a first count
    # through); the adapter now refuses it before the call.
    assert sum(take(ledger, NOW, limit, *(f"job-{n}" for n in range(limit + 2)))) == limit


def test_a_finished_steps_record_is_read_without_a_lease(ledger: LedgerPort) -> None:
    assert ledger.step_record("job", "end") is None
    ledger.begin_step("job", "end", NOW)
    assert ledger.step_record("job", "end") is None  # in progress: nothing recorded yet
    ledger.finish_step("job", "end", RELAUNCHED, NOW)
    assert ledger.step_record("job", "end") == {**RELAUNCHED.as_dict(), "kind": "relaunched"}
    assert ledger.step_record("other", "end") is None
    assert ledger.begin_step("other", "end", NOW).state is StepState.FIRST  # reading took no lease


def test_lineage_records_are_kept_per_root_and_the_first_stays(subject: Subject) -> None:
    subject.ledger.record_lineage("job", 1, "job-retry1", "job", NOW)
    subject.ledger.record_lineage("job", 2, "job-retry2", "job-retry1", NOW + timedelta(hours=1))
    subject.ledger.record_lineage("job", 1, "job-retry1", "not-the-first", NOW + timedelta(minutes=3))  # redelivery
    subject.ledger.record_lineage("other", 1, "other-retry1", "other", NOW)
    assert subject.lineage("job") == [(1, "job-retry1", "job"), (2, "job-retry2", "job-retry1")]
    assert subject.lineage("nobody") == []
