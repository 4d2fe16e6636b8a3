"""A trace job's log lines under trainguard: the running launch's lines (simulation/activity.py), delivered to
the log-activity function as the log group's subscription filter would deliver them.

They are delivered lazily: before the guard can judge the job (a stall window opens or ticks, a phase's
silence is checked against the job's limit), every line since the last delivery, in deliveries of at most
MAX_EVENTS. The guard learns the same rhythm whenever a line reaches it, as long as a stream's lines come in
order (log_rhythm.py), so this costs a run a few deliveries per job instead of one per line. In a stall
window the lines are also written to CloudWatch Logs, where the stall verdict's FilterLogEvents reads; the
lines before a window reach the subscription only (the verdict takes the newer of the two), but for the newest of
them (`write_newest_delivered`): the subscription's delivery may be late (chaos's), while CloudWatch Logs holds a
line from when it was logged, and the verdict reads only the newest event there (adapters/job_activity.py). For a
verdict outside a window (`show_until`), the lines are written too, with the hosts' GPUUtilization the launch's
activity shows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from trainguard_local.fleet.trainguard_run.world import FleetWorld
from trainguard_local.simulation.activity import SECOND, LaunchActivity, worded
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.trace import JobSpec
from trainguard_local.stand_in.fleet_side import log_delivery

MAX_EVENTS = 5000


class JobLogs:
    def __init__(self, job: JobSpec, world: FleetWorld, running: Callable[[], str]) -> None:
        self.job, self.world = job, world
        self.running = running  # the SageMaker job of the running launch ('' before the first)
        self.activity = LaunchActivity(
            job.rhythm, job.checkpoint_every_minutes, job.gpus_per_instance, 0.0, steps=job.step_plan
        )
        self.activities: dict[str, LaunchActivity] = {}  # SageMaker job -> its launch's activity, kept for audits
        self.delivered_until = 0.0  # trace hours: every line up to here has been delivered
        self.gpus_written_to = -1  # the last minute (index from the clock's base) of the hosts' GPUs written
        self.newest_written = -math.inf  # trace hours: the running launch's newest line in CloudWatch Logs

    def start_launch(self, training_since: float, progress: float) -> None:
        job = self.job
        self.activity = LaunchActivity(
            job.rhythm, job.checkpoint_every_minutes, job.gpus_per_instance, training_since, progress, job.step_plan
        )
        self.activities[self.running()] = self.activity
        self.delivered_until = training_since - SECOND / 2  # the line as training starts is still to come
        self.gpus_written_to = math.ceil(training_since * 60 - 1e-9) - 1
        self.newest_written = -math.inf

    def silence(self, kind: FaultKind, start: float, minutes: float = math.inf) -> None:
        """No lines from `start` (trace hours) for `minutes` (a hang: for good)."""
        self.activity.strike(kind, start, minutes)

    def lines(self, after: float, until: float) -> list[tuple[float, str]]:
        """The running launch's lines after `after` and up to `until` (trace hours), as (hours, message)."""
        return worded(self.activity.lines(after, until), self.job)

    def show_until(self, until: float, look_back_minutes: float) -> None:
        """What a verdict reads of the running launch up to `until` (trace hours): every line not yet delivered,
        written to CloudWatch Logs too, and its hosts' GPUs over at most the last `look_back_minutes`, after what a
        window wrote."""
        self.write_newest_delivered(look_back_minutes)
        self.deliver_until(until, write=True)
        first = max(self.gpus_written_to + 1, math.ceil((until - look_back_minutes / 60) * 60 - 1e-9))
        self.write_gpus(first, math.floor(until * 60 - 0.5 + 1e-9))  # each minute's datapoint at its half minute

    def write_newest_delivered(self, look_back_minutes: float) -> None:
        """The newest line delivered to the subscription over the last `look_back_minutes`, written to CloudWatch
        Logs as well (the module's docstring says why only it), unless it or a newer line is there already."""
        after = max(self.delivered_until - look_back_minutes / 60, self.newest_written)
        found = self.lines(after, self.delivered_until) if self.running() else []
        if found:
            at, message = found[-1]
            self.newest_written = at
            self.world.fleet.write_log_lines(
                self.running(), self.world.clock.base, [(self.world.clock.at_hours(at), message)]
            )

    def write_gpus(self, first: int, last: int) -> None:
        """Each host's GPUUtilization for the minutes `first` to `last` (indexes from the clock's base, stamped at
        the half minute), as the launch's activity reads it: its phases, its fault once struck, a host waiting on
        its own input reading low while the others wait on it."""
        activity, clock, hosts = self.activity, self.world.clock, self.job.instance_count
        values: list[tuple[datetime, Sequence[float]]] = []
        for minute in range(first, last + 1):
            moment = clock.base + timedelta(minutes=minute, seconds=30)
            values.append(
                (moment, [activity.gpu_per_host(clock.hours_of(moment), host) or 0.0 for host in range(hosts)])
            )
        self.gpus_written_to = max(self.gpus_written_to, last)
        if values and self.running():
            self.world.fleet.put_gpu_utilization(self.running(), hosts, values)

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
            self.newest_written = found[-1][0]
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
