"""The anchor models follow their documented behaviour, on hand-made one-job traces."""

from dataclasses import replace

import pytest

from tests.tools.fleet.cases import PERSON, STARTUP, fault, hours_in, job, trace_of
from trainguard_local.fleet.anchor_rules import DEBUGGER_RULE, SAGEMAKER_RETRY
from trainguard_local.fleet.anchors import (
    anchor_strategies,
    aws_batch,
    debugger_rule,
    no_guard,
    sagemaker_retry,
)
from trainguard_local.fleet.life import CAPACITY_REFUSAL_MINUTES
from trainguard_local.fleet.model import ActionKind, JobOutcome, State
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.trace import JobSpec, Trace

NONE, RETRY, RULE = no_guard(PERSON), sagemaker_retry(PERSON), debugger_rule(PERSON)


def run(strategy, trace: Trace) -> JobOutcome:
    [outcome] = strategy.run(trace)
    return outcome


def actions(outcome: JobOutcome) -> list[tuple[str, str, bool]]:
    return [(a.kind.value, a.actor, a.right) for a in outcome.actions]


def test_no_fault_no_delay_under_every_anchor():
    spec = job()
    for strategy in (NONE, RETRY, RULE):
        outcome = run(strategy, trace_of(spec))
        assert outcome.completed_at == pytest.approx(spec.fault_free_completion_at)
        assert outcome.wasted_gpu_hours == 0 and not outcome.actions and not outcome.detections


def test_none_waits_for_the_person_after_a_failure():
    spec = job()
    outcome = run(NONE, trace_of(spec, fault(spec, FaultKind.HARDWARE_FAULT, 2.2)))
    assert outcome.lost_work_hours == pytest.approx(0.2)
    assert hours_in(outcome, State.WAITING_FOR_PERSON) == pytest.approx(4.0)
    assert outcome.completion_delay_hours == pytest.approx(4.0 + STARTUP + 0.2)
    assert actions(outcome) == [("relaunch", "person", True)]
    [detection] = outcome.detections
    assert detection.detector == "person" and detection.minutes == pytest.approx(240)


def test_none_lets_a_hang_bill_until_the_person_stops_it():
    spec = job()
    outcome = run(NONE, trace_of(spec, fault(spec, FaultKind.HANG_BUSY_GPU, 3.2)))
    assert outcome.hung_hours == pytest.approx(4.0)
    assert outcome.wasted_gpu_hours == pytest.approx((4.0 + 0.2) * 4 * 8)
    assert actions(outcome) == [("stop", "person", True), ("relaunch", "person", True)]


def test_none_lets_a_hang_bill_until_max_runtime_when_that_is_sooner():
    spec = job(work_hours=5.0, max_runtime_hours=6.0)
    outcome = run(NONE, trace_of(spec, fault(spec, FaultKind.HANG_IDLE_GPU, 3.0)))
    assert outcome.hung_hours == pytest.approx(6.0 - STARTUP - 3.0)  # MaxRuntime stops the job
    assert hours_in(outcome, State.WAITING_FOR_PERSON) == pytest.approx(4.0 - outcome.hung_hours)
    assert actions(outcome) == [("relaunch", "person", True)]  # no stop: it had stopped


def test_retry_strategy_retries_an_internal_error_at_once_from_the_checkpoint():
    spec = job()
    outcome = run(RETRY, trace_of(spec, fault(spec, FaultKind.INTERNAL_ERROR, 2.7)))
    assert outcome.lost_work_hours == pytest.approx(0.2)
    assert outcome.completion_delay_hours == pytest.approx(STARTUP + 0.2)
    assert actions(outcome) == [("relaunch", SAGEMAKER_RETRY, True)]
    assert outcome.detections[0].minutes == 0
    assert outcome.recoveries[0].minutes == pytest.approx(STARTUP * 60)
    none = run(NONE, trace_of(spec, fault(spec, FaultKind.INTERNAL_ERROR, 2.7)))
    assert none.completion_delay_hours == pytest.approx(4.0 + STARTUP + 0.2)


@pytest.mark.parametrize(
    "kind",
    [
        FaultKind.HANG_BUSY_GPU,
        FaultKind.CAPACITY_ERROR,
        FaultKind.HARDWARE_FAULT,
        FaultKind.NCCL_TIMEOUT,
        FaultKind.USER_CODE_ERROR,
        FaultKind.OUT_OF_MEMORY,
    ],
)
def test_retry_strategy_retries_nothing_but_internal_errors(kind):
    spec = job()
    trace = trace_of(spec, fault(spec, kind, 0.0 if kind is FaultKind.CAPACITY_ERROR else 2.7, hung_minutes=10))
    retried, alone = run(RETRY, trace), run(NONE, trace)
    assert SAGEMAKER_RETRY not in {a.actor for a in retried.actions}
    assert retried.segments == alone.segments and retried.actions == alone.actions


def test_retry_strategy_shares_max_runtime_across_its_attempts():
    spec = job(work_hours=20.0, max_runtime_hours=21.0, checkpoint_every_minutes=60)
    outcome = run(RETRY, trace_of(spec, fault(spec, FaultKind.INTERNAL_ERROR, 19.9)))
    # 20.07 h used when it fails; the retry starts (0.17 h) and trains 0.77 h before MaxRuntime stops it
    assert outcome.lost_work_hours == pytest.approx(0.9 + (21.0 - (STARTUP + 19.9) - STARTUP))
    assert actions(outcome) == [("relaunch", SAGEMAKER_RETRY, True), ("relaunch", "person", True)]
    assert outcome.segments[-1].attempt == 2 and outcome.completed_at is not None


def test_debugger_rule_stops_a_hang_after_30_minutes_and_never_relaunches():
    spec = job()
    outcome = run(RULE, trace_of(spec, fault(spec, FaultKind.HANG_IDLE_GPU, 3.2)))
    assert outcome.hung_hours == pytest.approx(0.5)
    assert actions(outcome) == [("stop", DEBUGGER_RULE, True), ("relaunch", "person", True)]
    assert outcome.detections[0].detector == DEBUGGER_RULE and outcome.detections[0].minutes == pytest.approx(30)
    assert hours_in(outcome, State.WAITING_FOR_PERSON) == pytest.approx(4.0)  # the person relaunches


@pytest.mark.parametrize(
    "spec",
    [job(spot=True), job(in_vpc=True), job(uses_debugger_hook=False, framework="pytorch-2.5")],
    ids=["spot", "vpc", "no-hook"],
)
def test_debugger_rule_cannot_act_on_spot_vpc_or_hookless_jobs(spec: JobSpec):
    trace = trace_of(spec, fault(spec, FaultKind.HANG_BUSY_GPU, 3.2))
    assert run(RULE, trace).hung_hours == pytest.approx(4.0)
    assert run(RULE, trace).segments == run(NONE, trace).segments


def test_debugger_rule_stops_a_healthy_job_silent_beyond_its_threshold():
    spec = job()
    long_load = run(RULE, trace_of(spec, fault(spec, FaultKind.SLOW_BUT_HEALTHY, 0.0, silent_minutes=40)))
    assert actions(long_load) == [("stop", DEBUGGER_RULE, False), ("relaunch", "person", True)]
    assert long_load.lost_work_hours == pytest.approx(0.5)  # 30 minutes, no checkpoint yet
    short_load = run(RULE, trace_of(spec, fault(spec, FaultKind.SLOW_BUT_HEALTHY, 0.0, silent_minutes=25)))
    assert not short_load.actions and short_load.completion_delay_hours == 0
    assert not run(NONE, trace_of(spec, fault(spec, FaultKind.SLOW_BUT_HEALTHY, 0.0, silent_minutes=40))).actions


def test_a_user_error_waits_for_the_person_and_the_fix():
    spec = job()
    for strategy in (NONE, RETRY, RULE):
        outcome = run(strategy, trace_of(spec, fault(spec, FaultKind.OUT_OF_MEMORY, 2.0)))
        assert hours_in(outcome, State.WAITING_FOR_PERSON) == pytest.approx(4.0 + 1.0)
        assert actions(outcome) == [("relaunch", "person", True)] and outcome.actions[0].note == "after a fix"


def test_a_quota_wall_waits_for_the_person_the_request_and_the_person_again():
    spec = job()
    wall = fault(
        spec,
        FaultKind.QUOTA_WALL,
        2.0,
        quota_name="ml.p4d.24xlarge for training job usage",
        launch_refusal="ResourceLimitExceeded",
        quota_approval_hours=6.0,
    )
    outcome = run(NONE, trace_of(spec, wall))
    assert hours_in(outcome, State.WAITING_FOR_PERSON) == pytest.approx(8.0)
    assert hours_in(outcome, State.WAITING_FOR_QUOTA) == pytest.approx(6.0)
    assert [(a.kind, a.succeeded) for a in outcome.actions] == [
        (ActionKind.RELAUNCH, False),
        (ActionKind.QUOTA_REQUEST, True),
        (ActionKind.RELAUNCH, True),
    ]
    assert outcome.actions[1].target == "ml.p4d.24xlarge for training job usage"
    assert outcome.completion_delay_hours == pytest.approx(4.0 + 6.0 + 4.0 + STARTUP)


def test_repeated_capacity_refusals_bill_nothing_and_each_waits_for_the_person():
    spec = job()
    outcome = run(NONE, trace_of(spec, fault(spec, FaultKind.CAPACITY_ERROR, 0.0, repeats=2)))
    assert hours_in(outcome, State.QUEUED) == pytest.approx(3 * CAPACITY_REFUSAL_MINUTES / 60)
    assert outcome.billed_instance_hours == pytest.approx((STARTUP + spec.work_hours) * spec.instance_count)
    assert len(outcome.detections) == 3 and len(outcome.recoveries) == 1
    assert outcome.completion_delay_hours == pytest.approx(3 * (CAPACITY_REFUSAL_MINUTES / 60 + 4.0))


def test_a_spot_interruption_waits_unbilled_until_max_wait_then_for_the_person():
    spec = job(spot=True)
    outcome = run(NONE, trace_of(spec, fault(spec, FaultKind.SPOT_INTERRUPTION, 2.2, spot_wait_hours=2.0)))
    assert hours_in(outcome, State.QUEUED) == pytest.approx(2.0) and outcome.lost_work_hours == pytest.approx(0.2)
    assert outcome.completion_delay_hours == pytest.approx(2.0 + 4.0 + STARTUP + 0.2)


def test_an_nccl_timeout_hangs_until_the_watchdog_then_fails():
    spec = job()
    outcome = run(NONE, trace_of(spec, fault(spec, FaultKind.NCCL_TIMEOUT, 2.0, hung_minutes=10)))
    assert outcome.hung_hours == pytest.approx(10 / 60)
    assert outcome.detections[0].minutes == pytest.approx(10 + 240)  # from the hang's start


def test_every_anchor_meets_the_same_person():
    spec = job()
    trace = trace_of(spec, fault(spec, FaultKind.HARDWARE_FAULT, 2.2))
    waits = {s.name: hours_in(run(s, trace), State.WAITING_FOR_PERSON) for s in anchor_strategies()}
    assert len(set(waits.values())) == 1 and next(iter(waits.values())) > 0


def test_anchors_say_they_are_models_and_cite_their_sources():
    for strategy in anchor_strategies():
        described = strategy.describe()
        assert described["model"] is True and described["sources"]
        assert any(source.startswith("https://docs.aws.amazon.com/") for source in described["sources"])


def test_aws_batch_retries_capacity_errors_itself_without_attempts_and_the_person_does_not_come() -> None:
    spec = job()
    trace = trace_of(spec, replace(fault(spec, FaultKind.CAPACITY_ERROR, 0.0), repeats=3))
    outcome = run(aws_batch(PERSON), trace)
    relaunches = [a for a in outcome.actions if a.kind is ActionKind.RELAUNCH]
    assert [a.actor for a in relaunches] == ["aws_batch"] * 4  # the first refusal and its three repeats
    assert hours_in(outcome, State.WAITING_FOR_PERSON) == 0
    none = run(NONE, trace)
    assert outcome.completion_delay_hours < none.completion_delay_hours


def test_aws_batch_retries_internal_errors_by_its_rule_and_leaves_hardware_to_the_person() -> None:
    spec = job()
    internal = run(aws_batch(PERSON), trace_of(spec, fault(spec, FaultKind.INTERNAL_ERROR, 2.2)))
    assert [a.actor for a in internal.actions if a.kind is ActionKind.RELAUNCH] == ["aws_batch"]
    hardware = run(aws_batch(PERSON), trace_of(spec, fault(spec, FaultKind.HARDWARE_FAULT, 2.2)))
    assert [a.actor for a in hardware.actions if a.kind is ActionKind.RELAUNCH] == ["person"]


def test_a_pipelines_retry_policy_relaunches_its_job_under_every_anchor() -> None:
    spec = replace(job(), owner="pipelines", owner_retries=True)
    trace = trace_of(spec, fault(spec, FaultKind.INTERNAL_ERROR, 2.2))
    for strategy in (NONE, RULE):
        actors = [a.actor for a in run(strategy, trace).actions if a.kind is ActionKind.RELAUNCH]
        assert actors == ["pipelines"], strategy.name


def test_a_job_launched_with_preferences_starts_on_an_alternative_with_capacity() -> None:
    spec = replace(job(), launched_with_preferences=True, fallback_types=(("ml.p5.48xlarge", 2),))
    short = replace(fault(spec, FaultKind.CAPACITY_ERROR, 0.0), alternatives_with_capacity=("ml.p5.48xlarge",))
    outcome = run(NONE, trace_of(spec, short))
    assert outcome.actions == () and outcome.completion_delay_hours == 0
