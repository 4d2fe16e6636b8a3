"""The replay's time: a heap of actions on a virtual clock that stands still while an action runs.

The stand-in's SageMaker and Service Quotas read `LocalAWS.clock`; the handlers read the same clock
through their ports. Time must not move while a handler runs, or two runs of one seed could differ at an
hour or a lease boundary; so the clock is switched to `SteppedClock`, which returns the time of the action
being run.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from datetime import datetime, timedelta

from trainguard_local.stand_in.local_aws import VirtualClock


class SteppedClock(VirtualClock):
    """A VirtualClock that returns `current` (set by the timeline), whatever the wall clock says."""

    current: datetime

    def __call__(self) -> datetime:
        return self.current

    def skip(self, delta: timedelta) -> None:
        self.current += delta


def step_clock(clock: VirtualClock, start: datetime) -> SteppedClock:
    """Turn the stand-in's clock (the object its simulated services hold) into a stepped one."""
    clock.__class__ = SteppedClock
    assert isinstance(clock, SteppedClock)
    clock.current = start
    return clock


class Timeline:
    def __init__(self, clock: SteppedClock) -> None:
        self.clock = clock
        self._heap: list[tuple[datetime, int, Callable[[], None]]] = []
        self._order = itertools.count()
        self.actions_run = 0

    def at(self, when: datetime, action: Callable[[], None]) -> None:
        heapq.heappush(self._heap, (max(when, self.clock()), next(self._order), action))

    def after(self, delay: timedelta, action: Callable[[], None]) -> None:
        self.at(self.clock() + delay, action)

    def run_until(self, horizon: datetime, after_each: Callable[[], None]) -> None:
        """Run every action due before `horizon`, in time order; `after_each` runs after each one."""
        while self._heap and self._heap[0][0] < horizon:
            when, _, action = heapq.heappop(self._heap)
            self.clock.current = max(self.clock.current, when)
            action()
            after_each()
            self.actions_run += 1
        self.clock.current = max(self.clock.current, horizon)

    @property
    def pending(self) -> int:
        return len(self._heap)
