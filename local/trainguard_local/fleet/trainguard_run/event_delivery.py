"""How an event reaches a trainguard handler in the fleet's world: at once, in order (the benchmark), or up to some
minutes late (a delivery fault, issue 25): a job's state change, an alarm's, a schedule's firing. The prober's and
the quota check's schedules and the log subscription's deliveries stay on time. The chaos suite brings its own
delivery on this seam (chaos/fleet_deliveries.py: copies, Lambda's retries, dead letters, process deaths)."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from trainguard_local.simulation.kernel import Kernel

# What a rule or a one-time schedule invokes (the periodic ticks and the log subscription stay on time).
EVENT_HANDLERS = frozenset({"job_events", "failed_launches", "stall_alarms", "retry_launcher"})


@dataclass(frozen=True)
class HandlerCall:
    """One event for one of trainguard's functions: `handle(payload, ports)` of trainguard.handlers.<handler>."""

    handler: str  # the handler's module: job_events, stall_alarms, ...
    job: str  # the SageMaker job (or alarm) the event is about; '' for a schedule's tick
    handle: Callable[[Any, Any], Any]
    payload: Any


class Delivery(Protocol):
    """Takes each event and runs its handler (through the world's `attempt`) when and as often as it arrives."""

    in_flight: Counter[str]  # by job: the events about it on their way

    def __call__(self, call: HandlerCall) -> None: ...


# Runs a handler once, as one Lambda invocation: records what it raised as a problem of the run.
RunOnce = Callable[[HandlerCall], None]


class AtOnce:
    def __init__(self, run: RunOnce) -> None:
        self._run = run
        self.in_flight: Counter[str] = Counter()  # nothing is ever on its way

    def __call__(self, call: HandlerCall) -> None:
        self._run(call)


class LateDelivery:
    """Each event's invocation after a delay drawn uniformly up to `at_most_minutes`, so that events about one job
    can arrive in another order than they happened."""

    def __init__(self, run: RunOnce, kernel: Kernel, at_most_minutes: float, seed: int) -> None:
        self._run, self.kernel, self.at_most_minutes = run, kernel, at_most_minutes
        self._delays = random.Random(f"{seed}/late-deliveries")
        self.in_flight: Counter[str] = Counter()

    def __call__(self, call: HandlerCall) -> None:
        if call.handler not in EVENT_HANDLERS:
            self._run(call)
            return
        self.in_flight[call.job] += 1

        def arrive() -> None:
            self.in_flight[call.job] -= 1
            self._run(call)

        self.kernel.after(timedelta(minutes=self._delays.uniform(0.0, self.at_most_minutes)), arrive)
