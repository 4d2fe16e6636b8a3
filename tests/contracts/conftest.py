"""The contract suite: each port's behavioural tests run on its in-memory fake (tests/fakes.py) and on its
adapter, against moto or the simulated services of local/trainguard_local served on 127.0.0.1.

A module's subject fixture is parametrized over IMPLEMENTATIONS; the tests act and look through the port's
public methods only. Where a test must arrange what no port method does (a job's quota, AWS deciding a
request, an alarm made by someone else), the subject carries one small arrange function per implementation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import boto3
import pytest

from tests.conftest import LEDGER_TABLE

IMPLEMENTATIONS = ["fake", "adapter"]
REGION = "us-east-1"
TABLE = LEDGER_TABLE
Port = TypeVar("Port")


def fake_or_on_the_ledger(
    request: pytest.FixtureRequest, fake: Callable[[], Port], adapter: Callable[[Any, str], Port]
) -> Port:
    """For a subject fixture over IMPLEMENTATIONS: the port's fake, or its adapter on moto's ledger table."""
    if request.param == "fake":
        return fake()
    return adapter(request.getfixturevalue("dynamodb"), TABLE)


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
