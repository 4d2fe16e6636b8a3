"""How an event reaches a trainguard function: at least once, as EventBridge, Scheduler and Lambda's event
queue deliver (`Deliveries`: 1-3 copies, each after its own random delay, so copies and events arrive in any
order), each copy an asynchronous invocation as the stack configures it (infra/guard_function.py): two
retries after a function error, 1 then 2 minutes apart
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html), then an invocation
record of the documented shape to the function's dead-letter queue
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html); stack_wiring.py checks
these settings against the template. An attempt runs the production handler's `handle(event, ports)` with
the fleet's world's ports (chaos/fleet_deliveries.py); a `ProcessDeath` forces a cold start.
"""

from __future__ import annotations

import importlib
import json
import random
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from trainguard_local.chaos.call_faults import ProcessDeath
from trainguard_local.simulation.kernel import Kernel
from trainguard_local.stand_in.stack_resources import ACCOUNT, REGION

RETRY_ATTEMPTS = 2
RETRY_WAITS = (timedelta(minutes=1), timedelta(minutes=2))
COPIES, COPY_WEIGHTS = (1, 2, 3), (0.5, 0.3, 0.2)
# The functions the chaos suite invokes, by the name their ARN ends with; each one's handler is
# trainguard.handlers.<name with underscores>.handler, as in the template's Handler property.
FUNCTIONS = {
    name: f"trainguard.handlers.{name.replace('-', '_')}.handler"
    for name in (
        "job-events",
        "retry-launcher",
        "stall-alarms",
        "failed-launches",
        "quota-watch",
        "log-activity",
        "stall-prober",
    )
}


@dataclass
class Invocation:
    function: str
    payload: Any
    event_key: str  # the event this is a delivery of (one event, several deliveries)
    delivery: int
    subject: str = ""  # the SageMaker job (or alarm) the event is about, if one
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


class FunctionProcess(Protocol):
    """Where an attempt runs: the function's execution environment, built again after a process died."""

    cold_starts: int

    def invoke(self, invocation: Invocation) -> Any: ...

    def cold_start(self) -> None: ...


class LambdaRuntime:
    def __init__(self, process: FunctionProcess, clock: Callable[[], datetime], sqs: Any, queues: dict[str, str]):
        """`queues`: each function's dead-letter queue URL."""
        self.process, self._clock, self.sqs, self._dead_letter_queues = process, clock, sqs, queues
        self.dead_letters: list[tuple[datetime, str, Invocation]] = []  # (when, function, invocation)
        self.on_dead_letter: Callable[[Invocation], None] = lambda _: None  # the queue's alarm, to its reader

    @property
    def cold_starts(self) -> int:
        return self.process.cold_starts

    def run(self, invocation: Invocation, before: Callable[[Invocation], None] = lambda _: None) -> AttemptResult:
        """One attempt; `before` is part of it (what the world does just before the handler runs)."""
        now = self._clock()
        try:
            before(invocation)
            result = self.process.invoke(invocation)
        except ProcessDeath as death:
            self.process.cold_start()  # the execution environment is gone
            return self._failed(invocation, now, "ProcessDeath", str(death))
        except Exception as error:  # a function error: Lambda retries, then the destination
            return self._failed(invocation, now, type(error).__name__, str(error))
        return AttemptResult(invocation, now, result=result)

    def _failed(self, invocation: Invocation, now: datetime, error_type: str, message: str) -> AttemptResult:
        error = f"{error_type}: {message}"
        if invocation.attempt <= RETRY_ATTEMPTS:
            retry_at = now + RETRY_WAITS[invocation.attempt - 1]
            return AttemptResult(invocation, now, error=error, retry_at=retry_at)
        self.sqs.send_message(
            QueueUrl=self._dead_letter_queues[invocation.function],
            MessageBody=json.dumps(invocation_record(invocation, now, error_type, message)),
        )
        self.dead_letters.append((now, invocation.function, invocation))
        self.on_dead_letter(invocation)
        return AttemptResult(invocation, now, error=error, dead_lettered=True)


@dataclass
class DeliveryLog:
    events: dict[str, str] = field(default_factory=dict)  # event key -> function
    attempts: list[AttemptResult] = field(default_factory=list)
    by_event: dict[str, list[AttemptResult]] = field(default_factory=lambda: defaultdict(list))
    copies: int = 0

    def handled(self, event_key: str) -> bool:
        return any(attempt.ok for attempt in self.by_event.get(event_key, []))


class Deliveries:
    """Every attempt is kept in `log`, so the audit can tell what became of each event."""

    def __init__(
        self,
        timeline: Kernel,
        runtime: LambdaRuntime,
        seed: int,
        max_delay: timedelta,
        before: Callable[[Invocation], None],
    ) -> None:
        self._timeline, self._runtime, self._max_delay, self._before_attempt = timeline, runtime, max_delay, before
        self._rng = random.Random(f"deliveries-{seed}")
        self.log = DeliveryLog()
        self._keys = 0
        self.in_flight: Counter[str] = Counter()  # by subject: the attempts on their way (copies, retries)

    def deliver(self, function: str, payload: Any, label: str, subject: str = "") -> str:
        """Hand one event to `function`, 1-3 times, after random delays; returns the event's key."""
        key = self._key(function, label)
        copies = self._rng.choices(COPIES, weights=COPY_WEIGHTS)[0]
        for copy in range(copies):
            delay = timedelta(seconds=self._rng.uniform(0, self._max_delay.total_seconds()))
            self._later(delay, Invocation(function, payload, key, delivery=copy + 1, subject=subject))
        self.log.copies += copies
        return key

    def invoke_now(self, function: str, payload: Any, label: str, subject: str = "") -> None:
        """One delivery at once (a log subscription's batch, a periodic schedule's tick), with Lambda's retries."""
        self.log.copies += 1
        self._attempt(Invocation(function, payload, self._key(function, label), delivery=1, subject=subject))

    def redeliver(self, function: str, payload: Any, event_key: str, subject: str = "") -> None:
        """A redrive from the dead-letter queue: one new asynchronous invocation of the same event."""
        self._later(timedelta(0), Invocation(function, payload, event_key, delivery=0, subject=subject))

    def _key(self, function: str, label: str) -> str:
        self._keys += 1
        key = f"{function}#{self._keys}:{label}"
        self.log.events[key] = function
        return key

    def _later(self, delay: timedelta, invocation: Invocation) -> None:
        self.in_flight[invocation.subject] += 1

        def arrive() -> None:
            self.in_flight[invocation.subject] -= 1
            self._attempt(invocation)

        self._timeline.after(delay, arrive)

    def _attempt(self, invocation: Invocation) -> None:
        result = self._runtime.run(invocation, self._before_attempt)
        self.log.attempts.append(result)
        self.log.by_event[invocation.event_key].append(result)
        if result.retry_at is not None:
            self._later(result.retry_at - self._timeline.clock(), next_attempt(result))


def next_attempt(result: AttemptResult) -> Invocation:
    return replace(result.invocation, attempt=result.invocation.attempt + 1)


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
            "functionArn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:trainguard-{invocation.function}:$LATEST",
            "condition": "RetriesExhausted",
            "approximateInvokeCount": invocation.attempt,
        },
        "requestPayload": invocation.payload,
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "responsePayload": payload,
    }


def function_of_arn(arn: str) -> str:
    """The function's name from a record's functionArn (`...:function:trainguard-<name>:$LATEST`)."""
    name = arn.split(":function:", 1)[1].split(":", 1)[0]
    return name.removeprefix("trainguard-")


def handle_of(function: str) -> Callable[[Any, Any], Any]:
    module = importlib.import_module(FUNCTIONS[function].rsplit(".", 1)[0])
    handle: Callable[[Any, Any], Any] = module.handle
    return handle
