"""Lambda's asynchronous invocation, as the stack configures every trainguard function (infra/guard_function.py):
two retries after a function error, one minute before the second attempt and two minutes before the
third ("How Lambda handles errors and retries with asynchronous invocation",
https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html), then an invocation record
to the function's on-failure destination, an SQS dead-letter queue. The record has the documented shape
(version, timestamp, requestContext with condition RetriesExhausted and approximateInvokeCount,
requestPayload, responseContext, responsePayload:
https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html).
stack_wiring.py checks these settings against the synthesized template.

Each attempt runs the production handler module's `handle(event, ports)` with the ports handlers/wiring.py
builds (through `chaos_session`, so every AWS call goes through the fault injector), on the replay's clock.
A `ProcessDeath` ends the execution environment: the next attempt builds new ports (a cold start).
"""

from __future__ import annotations

import importlib
import json
import logging
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from trainguard.handlers.wiring import PortSet, boto3_ports
from trainguard_local.chaos.faults import FaultInjector, ProcessDeath, chaos_session
from trainguard_local.stand_in.stack_resources import ACCOUNT, REGION

RETRY_ATTEMPTS = 2
RETRY_WAITS = (timedelta(minutes=1), timedelta(minutes=2))
# The functions the replay invokes: name -> handler (as in the template's Handler property).
FUNCTIONS = {
    "job-events": "trainguard.handlers.job_events.handler",
    "retry-launcher": "trainguard.handlers.retry_launcher.handler",
    "stall-alarms": "trainguard.handlers.stall_alarms.handler",
    "failed-launches": "trainguard.handlers.failed_launches.handler",
    "quota-watch": "trainguard.handlers.quota_watch.handler",
}


@dataclass
class Invocation:
    function: str
    payload: Any
    event_key: str  # the event this is a delivery of (one event, several deliveries)
    delivery: int
    attempt: int = 1
    request_id: str = field(default_factory=lambda: str(uuid.uuid4()))


@dataclass(frozen=True)
class AttemptResult:
    invocation: Invocation
    at: datetime
    result: Any = None  # what the handler returned (an Outcome, or a list for quota-watch)
    error: str = ""  # the error type and message when the attempt failed
    retry_at: datetime | None = None
    dead_lettered: bool = False

    @property
    def ok(self) -> bool:
        return not self.error


class LambdaRuntime:
    def __init__(
        self,
        injector: FaultInjector,
        clock: Callable[[], datetime],
        sqs: Any,
        dead_letter_queues: dict[str, str],  # function -> queue URL
    ) -> None:
        self._injector = injector
        self._clock = clock
        self._sqs = sqs
        self._dead_letter_queues = dead_letter_queues
        self._ports: PortSet | None = None
        self.cold_starts = 0
        self.dead_letters: list[tuple[datetime, str, Invocation]] = []  # (when, function, invocation)

    def run(self, invocation: Invocation) -> AttemptResult:
        now = self._clock()
        handle = _handle_of(invocation.function)
        try:
            result = handle(invocation.payload, self._environment())
        except ProcessDeath as death:
            self._ports = None  # the execution environment is gone
            return self._failed(invocation, now, "ProcessDeath", str(death))
        except Exception as error:  # a function error: Lambda retries, then the destination
            return self._failed(invocation, now, type(error).__name__, str(error))
        finally:
            _clear_metrics()
        return AttemptResult(invocation, now, result=result)

    def _environment(self) -> PortSet:
        if self._ports is None:
            with chaos_session(self._injector):  # the session, made here, carries the injector
                self._ports = boto3_ports(clock=self._clock)
            self.cold_starts += 1
        return self._ports

    def _failed(self, invocation: Invocation, now: datetime, error_type: str, message: str) -> AttemptResult:
        error = f"{error_type}: {message}"
        if invocation.attempt <= RETRY_ATTEMPTS:
            retry_at = now + RETRY_WAITS[invocation.attempt - 1]
            return AttemptResult(invocation, now, error=error, retry_at=retry_at)
        self._sqs.send_message(
            QueueUrl=self._dead_letter_queues[invocation.function],
            MessageBody=json.dumps(invocation_record(invocation, now, error_type, message)),
        )
        self.dead_letters.append((now, invocation.function, invocation))
        return AttemptResult(invocation, now, error=error, dead_lettered=True)


def next_attempt(result: AttemptResult) -> Invocation:
    return replace(result.invocation, attempt=result.invocation.attempt + 1)


def function_arn(function: str) -> str:
    return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:trainguard-{function}"


def invocation_record(invocation: Invocation, now: datetime, error_type: str, message: str) -> dict[str, Any]:
    """What Lambda sends to the on-failure destination when the retries are exhausted."""
    if error_type == "ProcessDeath":  # the documented example's text for a process that died
        payload = {"errorMessage": f"RequestId: {invocation.request_id} Process exited before completing request"}
    else:
        payload = {"errorMessage": message[:1000], "errorType": error_type}
    return {
        "version": "1.0",
        "timestamp": now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z",
        "requestContext": {
            "requestId": invocation.request_id,
            "functionArn": f"{function_arn(invocation.function)}:$LATEST",
            "condition": "RetriesExhausted",
            "approximateInvokeCount": invocation.attempt,
        },
        "requestPayload": invocation.payload,
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "responsePayload": payload,
    }


def function_of_arn(arn: str) -> str:
    """The replay's function name from a record's functionArn (`...:function:trainguard-<name>:$LATEST`)."""
    name = arn.split(":function:", 1)[1].split(":", 1)[0]
    return name.removeprefix("trainguard-")


def _handle_of(function: str) -> Callable[[Any, Any], Any]:
    module = importlib.import_module(FUNCTIONS[function].rsplit(".", 1)[0])
    handle: Callable[[Any, Any], Any] = module.handle
    return handle


def _clear_metrics() -> None:
    from trainguard.handlers.observability import metrics

    metrics.clear_metrics()  # handle() adds metrics that only the Lambda decorator would flush


@contextmanager
def quiet_handler_logs() -> Iterator[None]:
    """The handlers log each outcome as a JSON line; the replay reports figures instead."""
    from trainguard.handlers.observability import logger

    level = logger.log_level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)
