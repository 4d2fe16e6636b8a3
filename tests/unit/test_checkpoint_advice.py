"""Young/Daly checkpoint intervals (domain/checkpoint_advice.py), against values worked by hand."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from trainguard.domain.checkpoint_advice import advise, describe_advice, optimal_interval, waste_fraction

MINUTE, HOUR = timedelta(minutes=1), timedelta(hours=1)


def test_daly_is_young_corrected_and_close_to_it_when_writes_are_cheap() -> None:
    # C = 5 min, M = 24 h: Young's sqrt(2 * 300 * 86400) = 7,200 s; Daly adds the correction and subtracts C.
    young = math.sqrt(2 * 300 * 86_400)
    ratio = 300 / (2 * 86_400)
    expected = young * (1 + math.sqrt(ratio) / 3 + ratio / 9) - 300
    assert optimal_interval(5 * MINUTE, 24 * HOUR).total_seconds() == pytest.approx(expected)
    assert 6_900 < expected < 7_200  # a few minutes under Young's two hours


def test_failures_more_often_than_a_checkpoint_takes_mean_checkpoint_at_the_failure_rate() -> None:
    assert optimal_interval(3 * HOUR, 1 * HOUR) == 1 * HOUR


def test_the_optimum_wastes_less_than_checkpointing_much_more_or_much_less_often() -> None:
    """Modelled shares of a job's time, computed from the formula (no clock is read)."""
    cost, mtbf = 5 * MINUTE, 24 * HOUR
    share_at_the_optimum = waste_fraction(optimal_interval(cost, mtbf), cost, mtbf)
    share_checkpointing_every_ten_minutes = waste_fraction(10 * MINUTE, cost, mtbf)
    share_checkpointing_twice_a_day = waste_fraction(12 * HOUR, cost, mtbf)
    assert share_at_the_optimum < min(share_checkpointing_every_ten_minutes, share_checkpointing_twice_a_day)


def test_advice_is_given_only_when_it_changes_something() -> None:
    # Two failures in 48 hours (M = 24 h), writes of 5 min: the best interval is about 2 h.
    assert advise(failures=2, hours_observed=48, current_interval=2 * HOUR, checkpoint_cost=5 * MINUTE, gpus=64) is None
    rare = advise(failures=2, hours_observed=48, current_interval=12 * HOUR, checkpoint_cost=5 * MINUTE, gpus=64)
    assert rare is not None and rare.gpu_hours_saved_per_week > 0
    assert "instead of every 12.0 h" in describe_advice(rare)
    assert (
        advise(failures=0, hours_observed=48, current_interval=12 * HOUR, checkpoint_cost=5 * MINUTE, gpus=64) is None
    )


@pytest.mark.parametrize("cost, mtbf", [(0 * MINUTE, HOUR), (MINUTE, 0 * HOUR)])
def test_no_interval_without_a_cost_and_a_failure_rate(cost: timedelta, mtbf: timedelta) -> None:
    with pytest.raises(ValueError):
        optimal_interval(cost, mtbf)
