"""At-least-once delivery, as EventBridge, EventBridge Scheduler and Lambda's event queue give it: every
event reaches its function 1-3 times, each copy after its own random delay (so copies and events arrive
in any order), and each copy is an asynchronous invocation with Lambda's retries (lambda_runtime.py).
Every attempt is kept, so the audit can tell what became of each event."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from trainguard_local.chaos.lambda_runtime import AttemptResult, Invocation, LambdaRuntime, next_attempt
from trainguard_local.simulation.kernel import Kernel

COPIES = (1, 2, 3)
COPY_WEIGHTS = (0.5, 0.3, 0.2)


@dataclass
class DeliveryLog:
    events: dict[str, str] = field(default_factory=dict)  # event key -> function
    attempts: list[AttemptResult] = field(default_factory=list)
    by_event: dict[str, list[AttemptResult]] = field(default_factory=lambda: defaultdict(list))
    copies: int = 0
    redriven: int = 0

    def handled(self, event_key: str) -> bool:
        return any(attempt.ok for attempt in self.by_event.get(event_key, []))


class Deliveries:
    def __init__(
        self,
        timeline: Kernel,
        runtime: LambdaRuntime,
        seed: int,
        max_delay: timedelta,
        before_attempt: Callable[[Invocation], None],
    ) -> None:
        self._timeline = timeline
        self._runtime = runtime
        self._rng = random.Random(f"deliveries-{seed}")
        self._max_delay = max_delay
        self._before_attempt = before_attempt
        self.log = DeliveryLog()
        self._keys = 0

    def deliver(self, function: str, payload: Any, label: str) -> str:
        """Hand one event to `function`, 1-3 times, after random delays; returns the event's key."""
        self._keys += 1
        key = f"{function}#{self._keys}:{label}"
        self.log.events[key] = function
        copies = self._rng.choices(COPIES, weights=COPY_WEIGHTS)[0]
        for copy in range(copies):
            delay = timedelta(seconds=self._rng.uniform(0, self._max_delay.total_seconds()))
            invocation = Invocation(function, payload, key, delivery=copy + 1)
            self._timeline.after(delay, lambda invocation=invocation: self._attempt(invocation))  # type: ignore[misc]
        self.log.copies += copies
        return key

    def redeliver(self, function: str, payload: Any, event_key: str) -> None:
        """A redrive from the dead-letter queue: one new asynchronous invocation of the same event."""
        self.log.redriven += 1
        self._timeline.after(timedelta(0), lambda: self._attempt(Invocation(function, payload, event_key, delivery=0)))

    def _attempt(self, invocation: Invocation) -> None:
        self._before_attempt(invocation)
        result = self._runtime.run(invocation)
        self.log.attempts.append(result)
        self.log.by_event[invocation.event_key].append(result)
        if result.retry_at is not None:
            retry = next_attempt(result)
            self._timeline.at(result.retry_at, lambda: self._attempt(retry))
