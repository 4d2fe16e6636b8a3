"""The ledger's lease against Lambda's retry schedule, on moto's DynamoDB.

Lambda retries a failed asynchronous invocation twice, one minute and then two more minutes after the
failure (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html). The chaos suite
(local/trainguard_local/chaos) found that a 5-minute lease kept both retries out when the process holding it
died after its side effect: every such event ended in the dead-letter queue instead of being finished by
Lambda's last retry, as docs/architecture.md's "Exactly once" says it is.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.conftest import LEDGER_TABLE
from tests.fakes import NOW
from trainguard.adapters.ledger import LEASE, Ledger
from trainguard.workflows.ports import StepInProgress, StepState

FUNCTION_TIMEOUT = timedelta(seconds=60)  # infra/guard_function.py; tests/infra checks the template against LEASE
LAMBDA_RETRY_WAITS = (timedelta(minutes=1), timedelta(minutes=2))


@pytest.fixture
def ledger(dynamodb: Any) -> Ledger:
    return Ledger(dynamodb, LEDGER_TABLE)


def test_a_holder_that_may_still_run_keeps_its_lease(ledger: Ledger) -> None:
    ledger.begin_step("job", "end", NOW)
    with pytest.raises(StepInProgress):
        ledger.begin_step("job", "end", NOW + FUNCTION_TIMEOUT - timedelta(seconds=1))


def test_lambdas_last_retry_takes_over_the_lease_of_a_process_that_died(ledger: Ledger) -> None:
    ledger.begin_step("job", "end", NOW)  # then the process dies (or the answer to this write is lost)
    third_attempt = NOW + sum(LAMBDA_RETRY_WAITS, timedelta(0))
    assert ledger.begin_step("job", "end", third_attempt).state is StepState.FIRST


def test_the_lease_sits_between_the_timeout_and_the_last_retry() -> None:
    assert FUNCTION_TIMEOUT < LEASE < sum(LAMBDA_RETRY_WAITS, timedelta(0))
