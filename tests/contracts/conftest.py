"""The contract suite: each port's behavioural tests run on its in-memory fake (tests/fakes.py) and on its
adapter, against moto or the simulated services of local/trainguard_local served on 127.0.0.1.

A module's subject fixture is parametrized over IMPLEMENTATIONS; the tests act and look through the port's
public methods only. Where a test must arrange what no port method does (a job's quota, AWS deciding a
request, an alarm made by someone else), the subject carries one small arrange function per implementation.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from trainguard.adapters.ledger import create_table_request

IMPLEMENTATIONS = ["fake", "adapter"]
REGION = "us-east-1"
TABLE = "ledger"


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws():
        yield


@pytest.fixture
def dynamodb(aws: None) -> Any:
    """moto's DynamoDB with a table like the stack's ledger."""
    client = boto3.client("dynamodb", region_name=REGION)
    client.create_table(**create_table_request(TABLE))
    return client


def local_client(service: str, endpoint_url: str) -> Any:
    """A client of a simulated service on 127.0.0.1 (never AWS)."""
    assert endpoint_url.startswith("http://127.0.0.1:"), endpoint_url
    return boto3.client(
        service,
        endpoint_url=endpoint_url,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
