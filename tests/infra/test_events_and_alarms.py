"""Job events: the rule, the functions' runtime and environment, the retry schedules' group. (The rule's
target, the dead-letter queue, the async settings and the alarms, wired alike in every part:
test_rule_targets_and_dead_letter_queues.py. The quota walls: test_quota_walls.py; stall detection:
test_stall_detection.py.)"""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Match

from infra.event_patterns import training_job_state_pattern
from tests.infra.template_queries import (
    ALL_HANDLERS,
    JOB_EVENTS_HANDLER,
    function_logical_id,
    rule_targeting,
)

pytestmark = pytest.mark.slow


def _keys_anywhere(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys_anywhere(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys_anywhere(v)}
    return set()


def _rule(template: dict[str, Any]) -> dict[str, Any]:
    rule_id = rule_targeting(template, function_logical_id(template, JOB_EVENTS_HANDLER))
    return dict(template["Resources"][rule_id])


def test_rule_matches_exactly_the_shared_pattern_and_never_tags(synthesized: Any, template: Any) -> None:
    template.has_resource_properties(
        "AWS::Events::Rule", {"EventPattern": Match.exact(training_job_state_pattern()), "State": "ENABLED"}
    )
    rule = _rule(synthesized.template)
    assert rule["Properties"]["EventPattern"] == training_job_state_pattern()
    assert rule["Properties"]["EventPattern"]["detail"]["TrainingJobStatus"] == [
        "InProgress",
        "Stopping",
        "Completed",
        "Failed",
        "Stopped",
    ]
    assert "Tags" not in _keys_anywhere(rule["Properties"]["EventPattern"])


@pytest.mark.parametrize("handler", ALL_HANDLERS)
def test_functions_run_python_3_14_on_arm64_with_their_own_log_group(
    synthesized: Any, template: Any, handler: str
) -> None:
    function = synthesized.template["Resources"][function_logical_id(synthesized.template, handler)]
    props = function["Properties"]
    assert (props["Runtime"], props["Architectures"]) == ("python3.14", ["arm64"])
    assert (props["MemorySize"], props["Timeout"]) == (256, 60)
    log_group = synthesized.template["Resources"][props["LoggingConfig"]["LogGroup"]["Ref"]]
    assert log_group["Type"] == "AWS::Logs::LogGroup"
    assert log_group["Properties"]["RetentionInDays"] > 0
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": handler,
            "Environment": {
                "Variables": Match.object_like(
                    {"POWERTOOLS_SERVICE_NAME": "trainguard", "POWERTOOLS_METRICS_NAMESPACE": "TrainGuard"}
                )
            },
        },
    )


def test_retry_schedules_have_their_own_group(template: Any) -> None:
    template.has_resource("AWS::Scheduler::ScheduleGroup", {"Properties": {"Name": "trainguard"}})
