"""guard_cost: trainguard's own AWS cost from what a run counted, at the list prices of prices.py."""

from __future__ import annotations

from dataclasses import replace

import pytest

from trainguard_local.fleet import prices
from trainguard_local.fleet.guard_cost import (
    ITEMS,
    AlarmLife,
    Deployment,
    HandlerUsage,
    UsageSummary,
    guard_cost,
)

NO_SCHEDULES = Deployment(prober_runs_per_hour=0, quota_checks_per_hour=0, log_deliveries_per_watched_job_hour=0)


def handler(invocations: int, calls: dict[str, int] | None = None, **quantities: float) -> HandlerUsage:
    usage = HandlerUsage(invocations=invocations)
    usage.calls.update(calls or {})
    for item, quantity in quantities.items():
        usage.add(item, quantity)
    return usage


def summary(**changes: object) -> UsageSummary:
    base = UsageSummary(
        span_hours=10.0,
        handlers={
            "job_events": handler(
                4,
                {"sagemaker:DescribeTrainingJob": 4, "dynamodb:PutItem": 2, "sns:Publish": 2},
                dynamodb_write_units=2,
                sns_publish_requests=2,
            ),
            "stall_prober": handler(
                5,
                {"dynamodb:Query": 5, "cloudwatch:PutMetricData": 5},
                put_metric_data_requests=5,
                dynamodb_read_units=2.5,
            ),
            "retry_launcher": handler(1, {"sagemaker:CreateTrainingJob": 1}),
        },
        alarm_lives=(
            AlarmLife("trainguard-stall-log-silence-a", 1.0, 3.5, 1, False, "a"),
            AlarmLife("trainguard-stall-idle-gpu-a", 1.0, 3.5, 8, False),
            AlarmLife("trainguard-stall-idle-gpu-b", 2.0, 2.1, 0, True),
        ),
        log_silence_metric_hours=3.0,
        powertools_metric_hours=12.0,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def cost(usage: UsageSummary, deployment: Deployment = NO_SCHEDULES) -> dict:
    return guard_cost(usage, guarded_instance_hours=100.0, guarded_compute_dollars=3_769.0, deployment=deployment)


def test_the_breakdown_sums_to_the_total_and_the_ratios_follow_from_it() -> None:
    result = cost(summary(), Deployment())

    assert set(result["breakdown"]) == set(ITEMS)
    assert result["total_dollars"] == pytest.approx(sum(e["dollars"] for e in result["breakdown"].values()), abs=1e-9)
    assert result["total_dollars"] > 0
    assert result["dollars_per_guarded_instance_hour"] == pytest.approx(result["total_dollars"] / 100.0, abs=1e-8)
    assert result["share_of_guarded_compute_percent"] == pytest.approx(
        result["total_dollars"] / 3_769.0 * 100, abs=1e-6
    )
    assert result["meets_goal"] is (result["share_of_guarded_compute_percent"] <= 0.05)
    for entry in result["breakdown"].values():
        assert entry["quantity"] == pytest.approx(
            entry["counted_in_run"] + entry["estimated_for_the_deployed_schedules"], abs=2e-3
        )


def test_a_counted_call_changes_the_cost_by_its_price() -> None:
    before = cost(summary())
    usage = summary()
    usage.handlers["stall_prober"].add("put_metric_data_requests", 1000)  # a thousand more PutMetricData calls
    after = cost(usage)

    delta = after["total_dollars"] - before["total_dollars"]
    assert delta == pytest.approx(prices.PUT_METRIC_DATA_PER_1000, abs=2e-6)
    assert after["breakdown"]["put_metric_data_requests"]["counted_in_run"] == 1005


def test_lambda_requests_and_duration_follow_the_invocations_and_their_calls() -> None:
    result = cost(summary())["breakdown"]
    deployment = NO_SCHEDULES

    assert result["lambda_requests"]["quantity"] == 10  # 4 + 5 + 1 invocations
    calls = 8 + 10 + 1
    seconds = (10 * deployment.handler_ms + calls * deployment.aws_call_ms) / 1000
    assert result["lambda_gb_seconds"]["quantity"] == pytest.approx(seconds * 0.25, abs=1e-3)
    assert result["scheduler_invocations"]["quantity"] == 1  # the retry launcher is run by a schedule only


def test_alarms_are_billed_per_metric_for_each_started_hour_of_their_life() -> None:
    result = cost(summary())["breakdown"]

    assert result["alarm_metric_hours"]["quantity"] == (1 + 8) * 3  # 2.5 hours, billed as 3
    assert result["composite_alarm_hours"]["quantity"] == 1  # 6 minutes, billed as an hour
    assert result["alarm_metric_hours"]["dollars"] == pytest.approx(27 * prices.ALARM_METRIC_MONTH / 730, abs=1e-6)
    assert result["custom_metric_hours"]["quantity"] == 3 + 12


def test_the_deployed_prober_cycles_are_priced_at_the_average_of_those_that_ran() -> None:
    deployment = Deployment(prober_runs_per_hour=60, quota_checks_per_hour=4, log_deliveries_per_watched_job_hour=0)
    result = cost(summary(), deployment)

    puts = result["breakdown"]["put_metric_data_requests"]
    assert puts["counted_in_run"] == 5
    assert puts["estimated_for_the_deployed_schedules"] == pytest.approx(600 - 5)  # 10 h x 60, one put a cycle
    assert result["breakdown"]["lambda_requests"]["estimated_for_the_deployed_schedules"] == pytest.approx(595)
    assert result["deployment"]["not_estimated"] == ["quota_watch", "log_activity"]  # they never ran


def test_log_deliveries_are_estimated_from_the_watched_job_hours() -> None:
    usage = summary(handlers={"log_activity": handler(2, {"dynamodb:UpdateItem": 2}, dynamodb_write_units=2)})
    deployment = Deployment(prober_runs_per_hour=0, quota_checks_per_hour=0, log_deliveries_per_watched_job_hour=60)
    result = cost(usage, deployment)

    assert usage.watched_job_hours == pytest.approx(2.5)  # the log-silence alarm's life
    assert result["breakdown"]["dynamodb_write_units"]["quantity"] == pytest.approx(150)  # 2.5 h x 60, one unit each


def test_without_compute_the_share_is_unknown() -> None:
    result = guard_cost(summary(), guarded_instance_hours=0.0, guarded_compute_dollars=0.0)
    assert result["share_of_guarded_compute_percent"] is None and result["meets_goal"] is None
    assert result["dollars_per_guarded_instance_hour"] is None
