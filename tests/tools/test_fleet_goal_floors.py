"""The floors of issue 14's goals (fleet/goal_floors.py) against what trainguard's run measures on hand-made
traces: each floor is at or below trainguard's figure, and each is met where the floor says it must be."""

from __future__ import annotations

import pytest

from tests.tools.fleet.cases import PERSON, fault, job, trace_of, trace_of_many
from trainguard_local.fleet.anchors import no_guard
from trainguard_local.fleet.goal_floors import chatty_hang_floor, sync_loss_floor
from trainguard_local.fleet.report import build_report
from trainguard_local.fleet.trainguard_strategy import TrainguardStrategy
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.rhythm import JobRhythm
from trainguard_local.simulation.trace import Trace

pytestmark = pytest.mark.slow

CHATTY = JobRhythm(log_every_seconds=10.0)


def figures(trace: Trace) -> dict[str, dict]:
    """The report's figures of no guard and trainguard on `trace`, with a person of no spread."""
    strategies = [no_guard(PERSON), TrainguardStrategy(person=PERSON)]
    outcomes = {s.name: s.run(trace) for s in strategies}
    return build_report(trace, strategies, outcomes)["strategies"]


def test_trainguard_stops_a_parents_verified_hang_as_its_own_and_counts_the_stop_right():
    owned = job(name="owned", owner="pipelines")
    ours = job(name="ours", submitted_at=2.0)
    trace = trace_of_many(
        (owned, fault(owned, FaultKind.HANG_IDLE_GPU, 2.0)), (ours, fault(ours, FaultKind.HANG_IDLE_GPU, 2.0))
    )
    found = figures(trace)
    none, guard = found["none"], found["trainguard"]

    def owned_hours(figures: dict) -> float:
        return figures["wasted_gpu_hours_hung_or_idle"] - figures["wasted_gpu_hours_hung_or_idle_not_parent_owned"]

    assert 0 < owned_hours(guard) < owned_hours(none) / 4  # stopped about 40 min in, where the person takes hours
    assert guard["wrong_actions"] == 0 and guard["actions_by_actor"]["trainguard"]["taken"]["stop"] == 2


def test_a_busy_hang_runs_at_least_as_long_as_the_healthy_silence_left_alone():
    healthy = job(name="healthy", rhythm=CHATTY)
    hung = job(name="hung", rhythm=CHATTY, submitted_at=2.0)
    silence = fault(healthy, FaultKind.SLOW_BUT_HEALTHY, 2.1, silent_minutes=16.0)
    trace = trace_of_many((healthy, silence), (hung, fault(hung, FaultKind.HANG_BUSY_GPU, 3.0)))
    guard = figures(trace)["trainguard"]
    floor = chatty_hang_floor(trace)
    assert guard["wrong_actions"] == 0
    measured = guard["detect_minutes_by_cadence"]["under 1 min"]["not_parent_owned"]
    assert measured["hangs"] == floor.hangs == 1
    assert floor.p95_minutes == 16.0
    assert measured["p95"] >= floor.p95_minutes


def test_trainguards_sync_loss_is_at_least_a_warning_at_onces():
    spec = job(checkpoint_every_minutes=30)
    # the sync stops at 2.25 h of work; the failure strikes 6 h later, after the person's 4 h response
    stopped = fault(spec, FaultKind.CHECKPOINT_SYNC_STOPPED, 2.25, fails_at_work_hours=8.25)
    trace = trace_of(spec, stopped)
    found = figures(trace)
    floor = sync_loss_floor(trace, PERSON)

    def lost(name: str) -> float:
        return found[name]["wasted_gpu_hours_lost_since_checkpoint_by_fault"]["checkpoint_sync_stopped"]

    assert lost("none") == pytest.approx(floor.none_gpu_hours, abs=0.01)
    assert floor.warning_at_once_gpu_hours <= lost("trainguard") < lost("none")
