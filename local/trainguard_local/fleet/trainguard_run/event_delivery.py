"""How an event reaches a trainguard handler in the fleet's world: at once, in order (the benchmark), or up to some
minutes late (the chaos suite's delivery fault, issue 25): a job's state change, an alarm's, a schedule's firing.
The prober's and the quota check's schedules and the log subscription's deliveries stay on time."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from datetime import timedelta

from trainguard_local.simulation.kernel import Kernel

LATE_HANDLERS = frozenset({"job_events", "stall_alarms", "retry_launcher"})  # what an event invokes


class AtOnce:
    def __init__(self) -> None:
        self.in_flight: Counter[str] = Counter()  # nothing is ever on its way

    def __call__(self, handler: str, job: str, invoke: Callable[[], None]) -> None:
        invoke()


class LateDelivery:
    """Each event's invocation after a delay drawn uniformly up to `at_most_minutes`, so that events about one job
    can arrive in another order than they happened."""

    def __init__(self, kernel: Kernel, at_most_minutes: float, seed: int) -> None:
        self.kernel, self.at_most_minutes = kernel, at_most_minutes
        self._delays = random.Random(f"{seed}/late-deliveries")
        self.in_flight: Counter[str] = Counter()  # by job: the events about it on their way

    def __call__(self, handler: str, job: str, invoke: Callable[[], None]) -> None:
        if handler not in LATE_HANDLERS:
            invoke()
            return
        self.in_flight[job] += 1

        def arrive() -> None:
            self.in_flight[job] -= 1
            invoke()

        self.kernel.after(timedelta(minutes=self._delays.uniform(0.0, self.at_most_minutes)), arrive)
