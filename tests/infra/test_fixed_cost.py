"""The fixed monthly cost on docs/deploying.md is the one the stack's template gives (commands/fixed_cost.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from trainguard_local.commands import fixed_cost
from trainguard_local.fleet import prices

pytestmark = pytest.mark.slow


def test_the_page_s_table_is_the_template_s(synthesized: Any) -> None:
    """cdk.json states the defaults but for dry_run, which changes no resource: the defaults stack is its template."""
    assert fixed_cost.page_table() == fixed_cost.table(synthesized.defaults_template), (
        "run `python -m trainguard_local.commands.fixed_cost --write` after `make synth`"
    )


def test_each_item_is_counted_in_the_template(synthesized: Any) -> None:
    template = copy.deepcopy(synthesized.defaults_template)
    items = {item.what: item for item in fixed_cost.fixed_items(template)}
    alarms = [lid for lid, r in template["Resources"].items() if r["Type"] == "AWS::CloudWatch::Alarm"]
    assert items["the stack's own alarms"].quantity == len(alarms) > 0
    assert items["KMS key (the topics' encryption)"].monthly == prices.KMS_KEY_MONTH
    # The prober every minute and the quota check every 15 minutes (cdk.json's quota_check_minutes).
    assert items["Lambda requests of the schedules"].quantity == 730 * 60 + 730 * 4
    del template["Resources"][alarms[0]]
    fewer = {item.what: item for item in fixed_cost.fixed_items(template)}
    assert fewer["the stack's own alarms"].quantity == len(alarms) - 1


@pytest.mark.parametrize(
    ("alarm", "metrics"),
    [
        ({"MetricName": "Errors", "Namespace": "AWS/Lambda"}, 1),
        (
            {
                "Metrics": [
                    {"Id": "m1", "MetricStat": {}},
                    {"Id": "m2", "MetricStat": {}},
                    {"Id": "e", "Expression": "m1+m2"},
                ]
            },
            2,
        ),
    ],
)
def test_an_alarm_is_billed_per_metric_it_reads(alarm: dict[str, Any], metrics: int) -> None:
    assert fixed_cost.alarm_metrics(alarm) == metrics


def test_the_readme_states_the_same_total(synthesized: Any) -> None:
    total = sum(item.monthly for item in fixed_cost.fixed_items(synthesized.defaults_template))
    assert f"about ${total:.2f} a month" in (fixed_cost.ROOT / "README.md").read_text()
