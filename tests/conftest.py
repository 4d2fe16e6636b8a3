"""Shared test setup: no real AWS, ever. Fixtures load the shared real samples."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import iam_calls

FIXTURES = Path(__file__).parent / "fixtures"
# The frameworks' tier: real Hugging Face and Lightning Trainers, installed by `make test-frameworks` alone
# (requirements-frameworks.txt). `make test` does not collect it at all (pytest_ignore_collect below), so it needs
# neither framework and skips nothing silently; `pytest -m frameworks tests/frameworks` runs it.
FRAMEWORKS = Path(__file__).parent / "frameworks"
LEDGER_TABLE = "ledger"

# Nothing in the test suite may reach AWS: dummy credentials, a fixed region, no metadata lookups.
os.environ.update(
    {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "TrainGuardTests",
        "POWERTOOLS_SERVICE_NAME": "trainguard",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
    }
)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """tests/frameworks is collected only when the run selects its marker (`-m frameworks`)."""
    if collection_path == FRAMEWORKS and "frameworks" not in (config.getoption("markexpr") or ""):
        return True
    return None


def load_fixture(relative: str) -> Any:
    """A fixture file, with the keys that cite its source removed."""
    data = json.loads((FIXTURES / relative).read_text())
    if isinstance(data, dict):
        return {k: v for k, v in data.items() if not k.startswith("_")}
    return data


@pytest.fixture
def fixture() -> Any:
    return load_fixture


@pytest.fixture
def aws() -> Iterator[None]:
    """moto's AWS (mock_aws), in the region set above."""
    from moto import mock_aws

    with mock_aws():
        yield


@pytest.fixture
def dynamodb(aws: None) -> Any:
    """moto's DynamoDB with a table like the stack's ledger, LEDGER_TABLE."""
    import boto3

    from trainguard.adapters.ledger import create_table_request

    client = boto3.client("dynamodb", region_name="us-east-1")
    client.create_table(**create_table_request(LEDGER_TABLE))
    return client


iam_calls.install()


@pytest.fixture(autouse=True)
def adapters_call_only_what_they_declare() -> Any:
    iam_calls.undeclared.clear()
    yield
    assert not iam_calls.undeclared, sorted(set(iam_calls.undeclared))
