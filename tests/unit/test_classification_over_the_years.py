"""Texts AWS uses today and used before: real ones, each with its source, in
tests/fixtures/failure_reasons_over_the_years.json.

- ResourceLimitExceeded from 2017 on (the unquoted "training-job/<type>" name of the SDK's first months, the
  quoted name with "Please contact AWS support", today's "Please use AWS Service Quotas", line-wrapped, spot,
  HTML-escaped in a report): each is read as a quota and sized from the message (usage + delta).
- The network fabric that kills collectives (EFA, libfabric, the OFI plugin): failures under a running
  collective are relaunched like a collective timeout; the stack failing to start is configuration.
- Capacity texts as FailureReason, SDK wrappers and status messages.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.unit.test_classification import assert_classified_as_the_fixture_says
from trainguard.domain.model import TextSource
from trainguard.domain.quotas import read_quota_error
from trainguard_cli.explain import explain_reason

FIXTURE = Path(__file__).parents[1] / "fixtures" / "failure_reasons_over_the_years.json"
ENTRIES: list[dict[str, Any]] = json.loads(FIXTURE.read_text(encoding="utf-8"))
QUOTA = [e for e in ENTRIES if "quota_name" in e]
CLASSIFIED = [e for e in ENTRIES if "category" in e]


@pytest.mark.parametrize("entry", CLASSIFIED, ids=lambda e: e["text"][:60])
def test_each_text_gets_its_category_and_decision(entry: dict[str, Any]) -> None:
    assert_classified_as_the_fixture_says(entry)


@pytest.mark.parametrize("entry", QUOTA, ids=lambda e: e["text"][:60])
def test_every_wording_of_a_quota_wall_gives_a_sized_request(entry: dict[str, Any]) -> None:
    demand = read_quota_error(entry["text"])
    assert demand is not None and demand.quota_name == entry["quota_name"]
    assert demand.needed == entry["needed"]
    answer = explain_reason(entry["text"], TextSource.API_ERROR, quota_ceiling=64)
    assert answer["decision"] == "quota"
    assert answer["quota_request"]["quota_name"] == entry["quota_name"]
    assert answer["quota_request"]["desired_value"] == entry["needed"]


def test_every_text_says_where_it_comes_from_and_the_groups_are_covered() -> None:
    assert all(e["source"] for e in ENTRIES)
    assert len(QUOTA) >= 10
    fabric = [e for e in CLASSIFIED if "NET/OFI" in e["text"] or "libfabric" in e["text"]]
    assert {"retry", "notify"} <= {e["decision"] for e in fabric}  # runtime failures retried, start-up ones not


def test_a_fabric_error_inside_the_toolkits_wrapper_is_still_relaunched() -> None:
    """As a FailureReason shows it: the training toolkit's ExecuteUserScriptError around the rank's stderr."""
    wrapped = (
        'AlgorithmError: ExecuteUserScriptError:\nExitCode 1\nErrorMessage "[rank3]: ncclRemoteError\n'
        '[rank3]: Last error: NET/OFI Request 0x7f2a completed with error. RC: 113. Error: 2 (UNDELIVERABLE)"'
    )
    answer = explain_reason(wrapped, TextSource.SAGEMAKER)
    assert answer["category"] == "collective-timeout" and answer["decision"] == "retry"
