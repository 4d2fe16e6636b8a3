"""Quota walls: the check schedule and the optional CloudTrail rule. (Their targets, queue and alarms, wired
alike in every part: test_rule_targets_and_dead_letter_queues.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from infra.event_patterns import failed_training_job_launch_pattern
from tests.infra.template_queries import (
    CONFIGURED_CONTEXT,
    FAILED_LAUNCHES_HANDLER,
    QUOTA_WATCH_HANDLER,
    function_logical_id,
    resources_of_type,
    rule_targeting,
)

pytestmark = pytest.mark.slow

QUOTA_HANDLERS = [QUOTA_WATCH_HANDLER, FAILED_LAUNCHES_HANDLER]


def _function(template: dict[str, Any], handler: str) -> str:
    return function_logical_id(template, handler)


def _rule(template: dict[str, Any], handler: str) -> dict[str, Any]:
    return dict(template["Resources"][rule_targeting(template, _function(template, handler))]["Properties"])


def _handlers(template: dict[str, Any]) -> set[str]:
    return {r["Properties"]["Handler"] for r in resources_of_type(template, "AWS::Lambda::Function").values()}


@pytest.mark.parametrize(
    ("stack", "minutes"), [("template", CONFIGURED_CONTEXT["quota_check_minutes"]), ("defaults_template", 15)]
)
def test_quota_watch_runs_on_the_configured_schedule(synthesized: Any, stack: str, minutes: int) -> None:
    template = getattr(synthesized, stack)
    rule = _rule(template, QUOTA_WATCH_HANDLER)
    assert rule["ScheduleExpression"] == f"rate({minutes} minutes)"
    assert rule["State"] == "ENABLED"
    assert "EventPattern" not in rule


def test_failed_launch_rule_exists_only_when_watch_failed_launches_is_on(synthesized: Any) -> None:
    assert CONFIGURED_CONTEXT["watch_failed_launches"] is True
    assert FAILED_LAUNCHES_HANDLER in _handlers(synthesized.template)
    # Defaults: no trail is assumed, so neither the rule nor its function exists.
    assert FAILED_LAUNCHES_HANDLER not in _handlers(synthesized.defaults_template)
    patterns = [
        r["Properties"].get("EventPattern")
        for r in resources_of_type(synthesized.defaults_template, "AWS::Events::Rule").values()
    ]
    assert failed_training_job_launch_pattern() not in patterns
    # The job-state rule, the quota-check schedule, the stall-alarm rule and the probe schedule.
    assert len(patterns) == 4


def test_failed_launch_rule_matches_exactly_the_shared_pattern(synthesized: Any) -> None:
    rule = _rule(synthesized.template, FAILED_LAUNCHES_HANDLER)
    assert rule["EventPattern"] == failed_training_job_launch_pattern()
    assert rule["State"] == "ENABLED"
