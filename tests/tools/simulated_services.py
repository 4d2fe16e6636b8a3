"""What the tests of the simulated services (SageMaker, Service Quotas) share: a clock they move, reading a
botocore error, and posting a request botocore would not send (its own checks skipped), to see the server's."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from datetime import UTC, datetime
from typing import Any, Protocol

import pytest
from botocore.exceptions import ClientError

START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


class Served(Protocol):
    @property
    def endpoint_url(self) -> str: ...


def error_of(excinfo: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    error = excinfo.value.response["Error"]
    return error["Code"], error["Message"]


def post_raw(server: Served, target: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """POST a JSON 1.1 request straight to the server: its status and decoded answer."""
    request = urllib.request.Request(
        server.endpoint_url + "/",
        data=json.dumps(body).encode(),
        headers={"X-Amz-Target": target, "Content-Type": "application/x-amz-json-1.1"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
