"""The ledger's lease (trainguard.adapters.ledger.LEASE) against the synthesized functions: it must outlast any
live invocation (the function's timeout) and expire before Lambda's last retry of a failed asynchronous
invocation (1 min, then 2 min later, per retry attempt configured; see
https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.infra.template_queries import ALL_HANDLERS, function_logical_id, resources_of_type
from trainguard.adapters.ledger import LEASE

pytestmark = pytest.mark.slow
LAMBDA_RETRY_WAITS = (timedelta(minutes=1), timedelta(minutes=2))


@pytest.mark.parametrize("handler", ALL_HANDLERS)
def test_the_lease_outlasts_an_invocation_and_expires_before_the_last_retry(synthesized: Any, handler: str) -> None:
    resources = synthesized.template["Resources"]
    function_id = function_logical_id(synthesized.template, handler)
    timeout = timedelta(seconds=resources[function_id]["Properties"]["Timeout"])
    [config] = [
        c["Properties"]
        for c in resources_of_type(synthesized.template, "AWS::Lambda::EventInvokeConfig").values()
        if c["Properties"]["FunctionName"] == {"Ref": function_id}
    ]
    last_retry = sum(LAMBDA_RETRY_WAITS[: config["MaximumRetryAttempts"]], timedelta(0))
    assert timeout < LEASE < last_retry
