"""A trace job's log lines under trainguard: its rhythm (fleet/rhythm.py) turned into lines, delivered to the
log-activity function as the log group's subscription filter would deliver them.

The lines of the running launch start when it trains: one every `log_every_seconds` of the job's clock,
none in its silent phases (a phase line just before, if the job announces its phases) nor while it is
quiet (a hang, from its start; a healthy silence, for its length). They are delivered lazily: before the
guard can judge the job (a stall window opens or ticks, a phase's silence is checked against the job's
limit), every line since the last delivery, in deliveries of at most MAX_EVENTS. The guard learns the
same rhythm whenever a line reaches it, as long as a stream's lines come in order (log_rhythm.py), so this
costs a run a few deliveries per job instead of one per line. In a stall window the lines are also
written to CloudWatch Logs, where the stall verdict's FilterLogEvents reads; the lines before a window
reach the subscription only (the verdict takes the newer of the two).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from trainguard_local.fleet.rhythm import line_offsets, phases
from trainguard_local.fleet.trace import JobSpec
from trainguard_local.fleet.trainguard_run.world import FleetWorld
from trainguard_local.stand_in.fleet_side import log_delivery

MAX_EVENTS = 5000


class JobLogs:
    def __init__(self, job: JobSpec, world: FleetWorld, running: Callable[[], str]) -> None:
        self.job, self.world = job, world
        self.running = running  # the SageMaker job of the running launch ('' before the first)
        self.training_since = 0.0  # trace hours: the running launch started training
        self.progress_at_start = 0.0  # its progress then (hours of work)
        self.delivered_until = 0.0  # trace hours: every line up to here has been delivered
        self.quiet: list[tuple[float, float]] = []  # (from, until) trace hours without lines (inf: for good)
        self._count = 0

    def start_launch(self, training_since: float, progress: float) -> None:
        self.training_since = self.delivered_until = training_since
        self.progress_at_start = progress
        self.quiet = []

    def silence(self, start: float, minutes: float = math.inf) -> None:
        """No lines from `start` (trace hours) for `minutes` (a hang: for good)."""
        self.quiet.append((start, start + minutes / 60))

    def lines(self, after: float, until: float) -> list[tuple[float, str]]:
        """The running launch's lines after `after` and up to `until` (trace hours), as (hours, message): its
        cadence's, none while it is silent, and one just before and one at the end of every silence (the step
        before a save, an evaluation's result), so that a silence is as long as the trace says."""
        job = self.job
        since, progress = self.training_since, self.progress_at_start
        silent = [
            (since + p.at_progress - progress, since + p.at_progress - progress + p.minutes / 60, p.line)
            for p in phases(
                job.rhythm, job.checkpoint_every_minutes, progress + (after - since) - 1.0, progress + until - since
            )
        ]
        quiet = self.quiet + [(start, end) for start, end, _ in silent]

        def heard(at: float, *, boundary: bool = False) -> bool:
            """A cadence line is not heard in any silence; a silence's own first and last lines are, unless
            the job has hung by then (a phase that starts inside another silence still ends with a line)."""
            hidden = [(start, end) for start, end in quiet if not boundary or math.isinf(end)]
            return after < at <= until and not any(start <= at < end for start, end in hidden)

        moments = [
            since + offset / 3600 for offset in line_offsets(job.rhythm, (after - since) * 3600, (until - since) * 3600)
        ]
        moments += [since] if after < since <= until else []  # a line as training starts
        found = [(at, "") for at in moments if heard(at)]
        for start, end, line in [*silent, *((start, end, "") for start, end in self.quiet)]:
            found += [(at, text) for at, text in ((start - 1 / 3600, line), (end, "")) if heard(at, boundary=True)]
        lines = []
        for at, text in sorted(found):
            self._count += 1
            lines.append((at, text or f"step {self._count * 10} loss {1.5 + 1.0 / self._count:.4f}"))
        return lines

    def deliver_until(self, until: float, *, write: bool = False) -> None:
        """Deliver every line of the running launch up to `until` (trace hours) that has not been; `write`:
        also into CloudWatch Logs (a stall window's lines)."""
        if until <= self.delivered_until or not self.running():
            self.delivered_until = max(self.delivered_until, until)
            return
        found = self.lines(self.delivered_until, until)
        self.delivered_until = until
        if not found:
            return
        from trainguard.handlers import log_activity

        world, clock, name = self.world, self.world.clock, self.running()
        if write:
            world.log_lines(name, [(clock.at_hours(at), message) for at, message in found], log_activity)
            return
        stream = f"{name}/algo-1-{int(clock.base.timestamp())}"
        for start in range(0, len(found), MAX_EVENTS):
            events = [
                {
                    "id": f"{name}-{round(at * 3.6e6)}",
                    "timestamp": round(clock.at_hours(at).timestamp() * 1000),
                    "message": message,
                }
                for at, message in found[start : start + MAX_EVENTS]
            ]
            world.call("log_activity", name, log_activity.handle, log_delivery(stream, events))
