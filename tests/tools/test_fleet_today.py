"""The fleet simulator on today's SageMaker, with trainguard's real code: parents with their own retries,
fallback tags, InstancePreferences, alternatives with capacity or quota room (hand-made one-job traces)."""

from __future__ import annotations

import pytest

from tests.tools.fleet.cases import PERSON, STARTUP, fault, hours_in, job, trace_of
from trainguard_local.fleet.anchors import aws_batch, no_guard
from trainguard_local.fleet.life import CAPACITY_REFUSAL_MINUTES
from trainguard_local.fleet.model import JobOutcome, State
from trainguard_local.fleet.trainguard_strategy import RunRecord, TrainguardStrategy
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.trace import Trace

pytestmark = pytest.mark.slow


def run(trace: Trace) -> tuple[JobOutcome, RunRecord]:
    strategy = TrainguardStrategy(person=PERSON)
    [outcome] = strategy.run(trace)
    assert strategy.last_run is not None and strategy.last_run.problems == []
    return outcome, strategy.last_run


def creates(record: RunRecord) -> list[dict]:
    return [c.params for c in record.guard_log if c.operation == "CreateTrainingJob" and c.succeeded]


def test_a_pipelines_job_is_left_to_its_retry_policy_and_trainguard_acts_on_nothing() -> None:
    spec = job(owner="pipelines", owner_retries=True)
    outcome, record = run(trace_of(spec, fault(spec, FaultKind.INTERNAL_ERROR, 2.2)))
    assert creates(record) == [] and not any(c.operation == "StopTrainingJob" for c in record.guard_log)
    assert [(a.kind.value, a.actor) for a in outcome.actions] == [("notify", "trainguard"), ("relaunch", "pipelines")]
    assert all(a.right for a in outcome.actions)
    assert hours_in(outcome, State.WAITING_FOR_PERSON) == 0


def test_a_batch_job_that_hangs_is_stopped_by_trainguard_and_never_relaunched() -> None:
    spec = job(name="AWSBatchjob-a", owner="aws_batch")
    outcome, record = run(trace_of(spec, fault(spec, FaultKind.HANG_BUSY_GPU, 2.0)))
    assert [c.operation for c in record.guard_log if c.operation == "StopTrainingJob"] == ["StopTrainingJob"]
    assert not any(c.operation == "CreateTrainingJob" for c in record.guard_log)  # its parent decides what follows
    assert [(a.actor, a.right) for a in outcome.actions if a.kind.value == "stop"] == [("trainguard", True)]


def test_a_capacity_error_with_an_alternative_that_has_capacity_runs_there_at_once() -> None:
    spec = job(fallback_types=(("ml.p5.48xlarge", 2),))
    short = fault(spec, FaultKind.CAPACITY_ERROR, 0.0, repeats=2, alternatives_with_capacity=("ml.p5.48xlarge",))
    outcome, record = run(trace_of(spec, short))
    [relaunch] = creates(record)
    assert [p["InstanceType"] for p in relaunch["ResourceConfig"]["InstancePreferences"]] == [
        "ml.p4d.24xlarge",
        "ml.p5.48xlarge",
    ]
    assert record.calls.get("scheduler:CreateSchedule", 0) == 0  # no backoff
    assert hours_in(outcome, State.QUEUED) == pytest.approx(CAPACITY_REFUSAL_MINUTES / 60)  # the first refusal only
    none = no_guard(PERSON).run(trace_of(spec, short))[0]
    assert outcome.completion_delay_hours < none.completion_delay_hours


def test_a_spot_job_tagged_on_demand_after_one_moves_to_on_demand_without_the_backoff() -> None:
    spec = job(spot=True, on_demand_after=1)
    outcome, record = run(trace_of(spec, fault(spec, FaultKind.SPOT_INTERRUPTION, 2.2, spot_wait_hours=2.0)))
    [relaunch] = creates(record)
    assert "EnableManagedSpotTraining" not in relaunch and "MaxWaitTimeInSeconds" not in relaunch["StoppingCondition"]
    assert hours_in(outcome, State.STOPPED) == 0  # no backoff: relaunched at once
    assert outcome.completion_delay_hours == pytest.approx(2.0 + STARTUP + 0.2)


def test_a_quota_wall_with_an_alternative_with_room_runs_there_while_the_request_is_pending() -> None:
    spec = job(fallback_types=(("ml.p5.48xlarge", 2),))
    quota = "ml.p4d.24xlarge for training job usage"
    wall = fault(
        spec,
        FaultKind.QUOTA_WALL,
        2.0,
        quota_name=quota,
        quota_approval_hours=20.0,
        alternatives_with_quota_room=("ml.p5.48xlarge",),
    )
    outcome, record = run(trace_of(spec, wall))
    [relaunch] = creates(record)
    assert (
        relaunch["ResourceConfig"]["InstanceType"] == "ml.p5.48xlarge"
        and relaunch["ResourceConfig"]["InstanceCount"] == 2
    )
    assert hours_in(outcome, State.WAITING_FOR_QUOTA) == 0
    assert [c.params["QuotaCode"] for c in record.guard_log if c.operation == "RequestServiceQuotaIncrease"]
    assert outcome.completion_delay_hours < 1.0  # not the 20 h approval


def test_a_quota_wall_whose_alternatives_have_no_room_launches_once_the_increases_make_room() -> None:
    """A job launched with InstancePreferences, walled on its own type, its alternative's quota used up by others:
    each refusal names a quota, trainguard asks once for each, and the relaunch runs once both are approved (the
    alternative's by Service Quotas' default, its own type's 20 h on). The world refused the alternative for good
    before, whatever its quota became (seed 20 of the chaos suite's short shape)."""
    spec = job(fallback_types=(("ml.p5.48xlarge", 2),), launched_with_preferences=True)
    quota = "ml.p4d.24xlarge for training job usage"
    wall = fault(spec, FaultKind.QUOTA_WALL, 2.0, quota_name=quota, quota_approval_hours=20.0)
    outcome, record = run(trace_of(spec, wall))
    requested = [c.params["QuotaCode"] for c in record.guard_log if c.operation == "RequestServiceQuotaIncrease"]
    assert sorted(requested) == ["L-63A4D624", "L-E4019031"]  # ml.p5.48xlarge's, ml.p4d.24xlarge's
    assert len(creates(record)) == 1
    assert 20.0 < hours_in(outcome, State.WAITING_FOR_QUOTA) < 30.0


def test_aws_batch_and_trainguard_on_the_same_capacity_error() -> None:
    spec = job()
    short = fault(spec, FaultKind.CAPACITY_ERROR, 0.0, repeats=1)
    batch = aws_batch(PERSON).run(trace_of(spec, short))[0]
    guard, _ = run(trace_of(spec, short))
    # Batch retries at once, each refusal 5 min; trainguard waits its backoff (10 then 20 min) without fallbacks.
    assert batch.completion_delay_hours == pytest.approx(2 * CAPACITY_REFUSAL_MINUTES / 60 + 2 / 60)
    assert guard.completion_delay_hours > batch.completion_delay_hours
