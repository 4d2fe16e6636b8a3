"""The one event kernel of every local tool: processes and callbacks on the run's virtual clock (clock.py).

A process is a generator that yields `Sleep(until)` (resume at that time) or `Park(deadline)` (resume when
another process wakes it with a value, or at the deadline with None); a callback (`at`, `after`) is a
process of one step. Times are hours since the clock's base. Events run in time order, and in the order
they were scheduled at the same time; while one runs the clock stands at its time, so that no handler sees
time move under it. Nothing waits in real time.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Generator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from trainguard_local.simulation.clock import SimClock


@dataclass(frozen=True)
class Sleep:
    until: float  # hours


@dataclass(frozen=True)
class Park:
    deadline: float  # hours


Process = Generator[Sleep | Park, Any, Any]


class Kernel:
    def __init__(self, clock: SimClock, on_resume: Callable[[str], None] | None = None) -> None:
        """`on_resume(acting)`: called before each step with the name the process was spawned for."""
        self.clock = clock
        self.now = clock.hours_of(clock.now)
        self.on_resume = on_resume
        self._heap: list[tuple[float, int, int, int, Any]] = []
        self._seq = itertools.count()
        self._processes: dict[int, tuple[Process, str]] = {}
        self._tokens: dict[int, int] = {}
        self._ids: dict[int, int] = {}  # id(generator) -> process id

    def spawn(self, process: Process, at: float, acting: str = "") -> None:
        pid = next(self._seq)
        self._processes[pid] = (process, acting)
        self._ids[id(process)] = pid
        self._tokens[pid] = 0
        heapq.heappush(self._heap, (at, next(self._seq), pid, 0, None))

    def at(self, moment: datetime, action: Callable[[], None], acting: str = "") -> None:
        """Run `action` at `moment` (now, if that has passed)."""

        def once() -> Process:
            action()
            yield from ()

        self.spawn(once(), max(self.clock.hours_of(moment), self.now), acting)

    def after(self, delay: timedelta, action: Callable[[], None], acting: str = "") -> None:
        self.at(self.clock.at_hours(self.now) + delay, action, acting)

    def wake(self, process: Process, value: Any) -> None:
        """Resume a parked process now, with `value` (its deadline no longer counts)."""
        pid = self._ids[id(process)]
        heapq.heappush(self._heap, (self.now, next(self._seq), pid, self._tokens[pid], value))

    def run(self, on_step: Callable[[], None] | None = None, until: float | None = None) -> None:
        """Run every event (before `until`, hours, when given; the clock then stands at `until`)."""
        while self._heap and (until is None or self._heap[0][0] < until):
            at, _, pid, token, value = heapq.heappop(self._heap)
            if pid not in self._processes or token != self._tokens[pid]:
                continue  # a deadline or a wake that another resumption has overtaken
            process, acting = self._processes[pid]
            self.now = max(self.now, at)
            self.clock.set_hours(self.now)
            if self.on_resume is not None:
                self.on_resume(acting)
            try:
                request = process.send(value)
            except StopIteration:
                del self._processes[pid]
                if on_step is not None:
                    on_step()
                continue
            token = self._tokens[pid] = self._tokens[pid] + 1
            resume = request.until if isinstance(request, Sleep) else request.deadline
            heapq.heappush(self._heap, (max(resume, self.now), next(self._seq), pid, token, None))
            if on_step is not None:
                on_step()
        if until is not None and until > self.now:
            self.now = until
            self.clock.set_hours(until)
