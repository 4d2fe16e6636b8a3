"""QuotaLedgerPort: FakeQuotaLedger and adapters/ledger.py's QuotaLedger on moto's DynamoDB."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from tests.contracts.conftest import IMPLEMENTATIONS, fake_or_on_the_ledger
from tests.fakes import NOW, FakeQuotaLedger
from trainguard.adapters.quota_ledger import QuotaLedger
from trainguard.domain.quotas import WaitingLaunch
from trainguard.workflows.ports import QuotaLedgerPort, QuotaRequestState

P4D = "ml.p4d.24xlarge for training job usage"
G5 = "ml.g5.12xlarge for training job usage"
PENDING = QuotaRequestState("req-1", "L-1", P4D, 8.0, "PENDING")


def waiting(job_name: str, quota_name: str = P4D) -> WaitingLaunch:
    request = {"TrainingJobName": job_name, "ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2}}
    return WaitingLaunch(
        job_name, quota_name, request, "relaunch", "job", NOW, NOW + timedelta(days=3), lineage_root="job", attempt=1
    )


@pytest.fixture(params=IMPLEMENTATIONS)
def quota_ledger(request: pytest.FixtureRequest) -> QuotaLedgerPort:
    return fake_or_on_the_ledger(request, FakeQuotaLedger, QuotaLedger)


def test_nothing_is_saved_at_first(quota_ledger: QuotaLedgerPort) -> None:
    assert quota_ledger.requests() == [] and quota_ledger.waiting() == []


def test_one_request_is_kept_per_quota_the_newest_state_wins(quota_ledger: QuotaLedgerPort) -> None:
    quota_ledger.save_request(PENDING, NOW)
    quota_ledger.save_request(QuotaRequestState("req-9", "L-2", G5, 2.0, "PENDING"), NOW)
    approved = replace(PENDING, status="APPROVED", case_id="1234567890")
    quota_ledger.save_request(approved, NOW + timedelta(hours=4))
    assert quota_ledger.requests() == [QuotaRequestState("req-9", "L-2", G5, 2.0, "PENDING"), approved]  # by name


def test_waiting_launches_are_saved_listed_by_name_and_removed(quota_ledger: QuotaLedgerPort) -> None:
    for name in ("job-b-retry1", "job-a-retry1"):
        quota_ledger.save_waiting(waiting(name))
    quota_ledger.save_waiting(waiting("job-b-retry1", G5))  # saved again: replaced
    assert quota_ledger.waiting() == [waiting("job-a-retry1"), waiting("job-b-retry1", G5)]
    quota_ledger.remove_waiting("job-a-retry1")
    quota_ledger.remove_waiting("never-waited")  # no error
    assert quota_ledger.waiting() == [waiting("job-b-retry1", G5)]
