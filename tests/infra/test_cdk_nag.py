"""cdk-nag AwsSolutions, through CDK's Validations API (cdk-nag v3), as `cdk synth` runs it.

v3 reports through the cloud assembly: an unacknowledged finding makes `app.synth()` raise
`ValidationFailed`, and `validation-report.json` lists each plugin's `violations` and its
`suppressedViolations` (the acknowledged ones, with `acknowledgedId`, `reason`, `acknowledgedAt`).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.infra.template_queries import CONFIGURED_STACK, DEFAULTS_STACK

pytestmark = pytest.mark.slow

ACKNOWLEDGED_RULES = "aws:cdk:acknowledged-rules"
_SENTENCE = re.compile(r"^[A-Z].{30,}[.!]$", re.DOTALL)


def _nag_report(synthesized: Any) -> dict[str, Any]:
    (report,) = [r for r in synthesized.validation_report()["pluginReports"] if r["pluginName"] == "AwsSolutions"]
    return report


def _acknowledgments(synthesized: Any) -> dict[tuple[str, str], str]:
    """(construct path, acknowledged id) -> reason, for every acknowledgment in both stacks."""
    found: dict[tuple[str, str], str] = {}
    for stack in (CONFIGURED_STACK, DEFAULTS_STACK):
        for path, entries in synthesized.construct_metadata(stack).items():
            for entry in entries:
                if entry["type"] == ACKNOWLEDGED_RULES:
                    for rule_id, reason in entry["data"].items():
                        found[(path, rule_id)] = reason
    return found


def test_synth_passes_the_aws_solutions_checks(synthesized: Any) -> None:
    report = _nag_report(synthesized)
    unacknowledged = [
        (v["ruleName"], c["constructPath"]) for v in report["violations"] for c in v["violatingConstructs"]
    ]
    assert unacknowledged == [], unacknowledged
    assert synthesized.validation_error is None
    assert report["conclusion"] == "success"


def test_every_acknowledgment_gives_a_reason_of_at_least_a_sentence(synthesized: Any) -> None:
    suppressed = _nag_report(synthesized)["suppressedViolations"]
    assert suppressed, "expected the reasoned acknowledgments of this stack"
    for finding in suppressed:
        assert _SENTENCE.match(finding["reason"]), finding
    for (path, rule_id), reason in _acknowledgments(synthesized).items():
        assert _SENTENCE.match(reason), (path, rule_id, reason)


def test_acknowledgments_are_on_resources_never_on_the_stack_or_app(synthesized: Any) -> None:
    for path, rule_id in _acknowledgments(synthesized):
        assert path.count("/") >= 3, f"{rule_id} acknowledged at {path}: attach it to the resource it is about"
        if "IAM5" in rule_id:
            assert "[" in rule_id, f"{rule_id} at {path}: acknowledge the one finding, not the rule"
    for finding in _nag_report(synthesized)["suppressedViolations"]:
        assert finding["acknowledgedAt"].count("/") >= 2, finding


def test_no_acknowledgment_is_stale(synthesized: Any) -> None:
    """Each acknowledgment still matches a finding; one that no longer does hides nothing and misleads."""
    used = {(f["acknowledgedAt"], f["acknowledgedId"]) for f in _nag_report(synthesized)["suppressedViolations"]}
    for path, rule_id in _acknowledgments(synthesized):
        assert (path.lstrip("/"), rule_id) in used, f"{rule_id} at {path} suppresses nothing"
