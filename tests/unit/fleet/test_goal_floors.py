import random
from dataclasses import replace

import pytest

from tests.unit.fleet.cases import PERSON, fault, job
from trainguard_local.fleet.anchors import no_guard
from trainguard_local.fleet.goal_floors import (
    chatty_hang_floor,
    expected_min_with_response,
    floors,
    owners_hung_share,
    sync_loss_floor,
)
from trainguard_local.fleet.person import PersonOnCall
from trainguard_local.fleet.report import run_all
from trainguard_local.fleet.rhythm import JobRhythm
from trainguard_local.fleet.trace import FaultKind, Trace, TraceParameters, generate_trace

CHATTY, SLOW = JobRhythm(log_every_seconds=10.0), JobRhythm(log_every_seconds=1500.0)


def trace_of_many(*pairs):
    """A trace of (job, fault) pairs, each job with its own name."""
    return Trace(
        seed=1,
        hours=72.0,
        parameters=TraceParameters(0.2, 0.2, 0.3, 0.35),
        jobs=tuple(spec for spec, _ in pairs),
        faults=tuple(f for _, f in pairs if f is not None),
    )


def test_owners_share_is_the_part_of_no_guards_hung_time_on_parents_jobs():
    none = {"wasted_gpu_hours_hung_or_idle": 400.0, "wasted_gpu_hours_hung_or_idle_not_parent_owned": 100.0}
    assert owners_hung_share(none) == pytest.approx(0.75)
    assert owners_hung_share({**none, "wasted_gpu_hours_hung_or_idle": 0.0}) is None


def test_the_longest_healthy_busy_silence_of_a_chatty_job_sets_the_busy_hangs_floor():
    lookalike = job(name="healthy", rhythm=CHATTY, checkpoint_every_minutes=30)
    # silent 16 min from 1.1 h of work; its next checkpoint (1.5 h) is 24 min away: 16 min look like a hang
    silent = fault(lookalike, FaultKind.SLOW_BUT_HEALTHY, 1.1, silent_minutes=16.0)
    # its checkpoint lands 6 min into this 20-minute silence: after that it is no hang
    early = job(name="checkpointed", rhythm=CHATTY, checkpoint_every_minutes=30)
    caught = fault(early, FaultKind.SLOW_BUT_HEALTHY, 1.4, silent_minutes=20.0)
    owned = job(name="owned", rhythm=CHATTY, owner="pipelines")  # trainguard stops no parent's job anyway
    slow = job(name="slow", rhythm=SLOW)  # not in the chatty class
    busy, nccl, idle = (job(name=n, rhythm=CHATTY) for n in ("busy", "nccl", "idle"))
    trace = trace_of_many(
        (lookalike, silent),
        (early, caught),
        (owned, fault(owned, FaultKind.SLOW_BUT_HEALTHY, 2.1, silent_minutes=28.0)),
        (slow, fault(slow, FaultKind.SLOW_BUT_HEALTHY, 2.1, silent_minutes=28.0)),
        (busy, fault(busy, FaultKind.HANG_BUSY_GPU, 3.0)),
        (nccl, fault(nccl, FaultKind.NCCL_TIMEOUT, 3.0, hung_minutes=10.0)),
        (idle, fault(idle, FaultKind.HANG_IDLE_GPU, 3.0)),
    )
    found = chatty_hang_floor(trace)
    assert found.longest_lookalike is not None
    assert found.longest_lookalike.job_name == "healthy"
    assert found.longest_lookalike.minutes_to_next_checkpoint == pytest.approx(24.0)
    assert found.hangs == 3
    # per hang: busy 16, NCCL min(10, 16), idle 0; nearest-rank p95 of three is the largest
    assert found.p95_minutes == pytest.approx(16.0)


def test_a_silence_at_the_start_is_no_lookalike_and_without_one_the_floor_is_zero():
    chatty = job(name="loading", rhythm=CHATTY)
    busy = job(name="busy", rhythm=CHATTY)
    trace = trace_of_many(
        (chatty, fault(chatty, FaultKind.SLOW_BUT_HEALTHY, 0.0, silent_minutes=40.0)),  # the first load's grace
        (busy, fault(busy, FaultKind.HANG_BUSY_GPU, 3.0)),
    )
    found = chatty_hang_floor(trace)
    assert found.longest_lookalike is None
    assert found.p95_minutes == 0.0


def test_a_warning_at_once_saves_what_lies_beyond_the_persons_response():
    spec = job(checkpoint_every_minutes=30)
    # the sync stops at 2.25 h of work (last checkpoint in S3: 2.0 h); the failure strikes 6 h later
    late = fault(spec, FaultKind.CHECKPOINT_SYNC_STOPPED, 2.25, fails_at_work_hours=8.25)
    found = sync_loss_floor(trace_of_many((spec, late)), PERSON)  # every response takes 4 h
    assert found.none_gpu_hours == pytest.approx(6.25 * spec.gpus)
    assert found.warning_at_once_gpu_hours == pytest.approx(4.25 * spec.gpus, rel=1e-3)
    # a failure within the response: the warning saves nothing
    soon = replace(late, fails_at_work_hours=3.25)
    found = sync_loss_floor(trace_of_many((spec, soon)), PERSON)
    assert found.share == pytest.approx(1.0, rel=1e-3)


def test_the_expected_response_matches_the_persons_own_draws():
    person = PersonOnCall()
    rng = random.Random(5)
    for hours in (1.0, 4.0, 30.0):
        drawn = sum(min(hours, person.response_hours(rng)) for _ in range(100_000)) / 100_000
        assert expected_min_with_response(hours, person) == pytest.approx(drawn, rel=0.01)


def test_on_the_standard_trace_no_guards_sync_loss_is_what_the_simulator_measures():
    trace = generate_trace(200, 72, 7)
    none = run_all(trace, [no_guard()])["strategies"]["none"]
    found = floors(trace, none)
    measured = none["wasted_gpu_hours_lost_since_checkpoint_by_fault"]["checkpoint_sync_stopped"]
    assert found["sync_loss_gpu_hours"]["none"] == pytest.approx(measured, abs=0.01)
    assert (
        found["chatty_hangs_not_parent_owned"]
        == none["detect_minutes_by_cadence"]["under 1 min"]["not_parent_owned"]["hangs"]
    )
    assert 0 < found["sync_loss_share_of_none_at_least"] < 1
