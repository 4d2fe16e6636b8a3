"""A demo job, described as the trace describes one (simulation/trace.py: a JobSpec with its rhythm, a Fault),
and one launch of it played on the stand-in from the simulation core: the lines it logs and what its GPUs
read (simulation/activity.py), and its checkpoints, written through a team's fleet side
(stand_in/fleet_side.py) as the kernel moves the virtual clock. Every figure a demo prints about a job
comes from here."""

from __future__ import annotations

import math
from typing import Any

from trainguard.domain.instance_prices import ON_DEMAND_PRICES
from trainguard.domain.instance_types import gpus_per_host
from trainguard_local.simulation.activity import SECOND, LaunchActivity
from trainguard_local.simulation.clock import SimClock
from trainguard_local.simulation.fault_table import FAULT_TABLE, FaultKind
from trainguard_local.simulation.rhythm import JobRhythm
from trainguard_local.simulation.trace import Fault, JobSpec
from trainguard_local.stand_in.fleet_side import FleetSide, log_delivery

MINUTE = 1 / 60  # hours
DEMO_WORK_HOURS = 10.0  # longer than any act: no demo job finishes its work while it is watched
DEMO_MAX_RUNTIME_HOURS = 120.0  # training_request's MaxRuntimeInSeconds, 432000


def demo_job(name: str, instance_type: str, hosts: int, rhythm: JobRhythm, checkpoint_every_minutes: int) -> JobSpec:
    """A job of a demo act, training from the act's start (hour 0 of its trace)."""
    price, gpus = ON_DEMAND_PRICES[instance_type].per_instance_hour, gpus_per_host(instance_type) or 1
    every, hours = checkpoint_every_minutes, DEMO_MAX_RUNTIME_HOURS
    # submitted at hour 0, no Debugger hook, on-demand, not in a VPC, PyTorch; training as soon as it is launched
    return JobSpec(name, instance_type, hosts, gpus, price, 0.0, DEMO_WORK_HOURS, every, False, False, False, "pytorch",
                   hours, startup_minutes=0.0, rhythm=rhythm)  # fmt: skip


def demo_fault(job: JobSpec, kind: FaultKind, at_minutes: float, silent_minutes: float = 0.0) -> Fault:
    """`kind` strikes `job` `at_minutes` into its training (a silent kind: for good, or `silent_minutes`)."""
    return Fault(job.name, kind, at_minutes / 60, at_minutes / 60, None, silent_minutes=silent_minutes)


def cadence(rhythm: JobRhythm) -> str:
    """How often the job logs, in words: "a line every 10 s", "a line a minute", "a line every 40 min"."""
    seconds = rhythm.log_every_seconds
    if seconds == 60:
        return "a line a minute"
    return f"a line every {seconds:g} s" if seconds < 60 else f"a line every {seconds / 60:g} min"


def gpu_words(kind: FaultKind) -> str:
    """What the fault's row says its hosts' GPUs read while it holds."""
    level = FAULT_TABLE[kind].gpu_per_gpu()
    return "GPUs idle" if level == 0 else f"GPUs at {level:g}%"


class PlayedLaunch:
    """One launch of `job` as SageMaker job `name`, training from `since` (the kernel's hours), its work resumed
    at `progress` (hours: its newest checkpoint's), its checkpoints under `checkpoint_uri`."""

    def __init__(
        self,
        name: str,
        job: JobSpec,
        side: FleetSide,
        clock: SimClock,
        checkpoint_uri: str,
        *,
        since: float,
        progress: float = 0.0,
    ) -> None:
        self.name, self.job, self.side, self.clock, self.checkpoint_uri = name, job, side, clock, checkpoint_uri
        self.activity = LaunchActivity(job.rhythm, job.checkpoint_every_minutes, job.gpus_per_instance, since, progress)
        self.played_until = since - SECOND / 2  # the line as training starts is still to come
        self.checkpointed = progress  # the progress of its newest checkpoint
        self.lines_logged = 0

    def strike(self, fault: Fault, origin: float) -> float:
        """Strike the launch with `fault` (its strikes_at counted from `origin`); when, on the kernel's hours."""
        at = origin + fault.strikes_at
        self.activity.strike(fault.kind, at, fault.silent_minutes or fault.hung_minutes or math.inf)
        return at

    def play_until(self, until: float) -> dict[str, Any] | None:
        """Write what the launch did since the last call, up to `until`: its hosts' GPUUtilization half a minute
        before, the checkpoints it saved, its lines; the log subscription's delivery of the lines (None: none)."""
        sampled = until - MINUTE / 2
        if (gpu := self.activity.gpu_per_host(sampled)) is not None:
            self.side.put_gpu_utilization(self.name, self.job.instance_count, [(self.clock.at_hours(sampled), gpu)])
        self._save_checkpoints(until)
        found = self.activity.lines(self.played_until, until)
        self.played_until = until
        if not found:
            return None
        lines = [(self.clock.at_hours(at), text or self._step_line()) for at, text in found]
        stream, events = self.side.write_log_lines(self.name, self.clock.at_hours(self.activity.training_since), lines)
        return log_delivery(stream, [{"id": f"{self.name}-{event['timestamp']}", **event} for event in events])

    def _step_line(self) -> str:
        self.lines_logged += 1
        return f"step {self.lines_logged * 10} loss {1.5 + 1.0 / self.lines_logged:.4f}"

    def _save_checkpoints(self, until: float) -> None:
        """Each checkpoint the job's progress reaches by `until`, saved when its write ends, unless a fault keeps
        the launch silent then (no fault row lets a silent launch's checkpoints reach S3)."""
        activity, every = self.activity, self.job.checkpoint_every_minutes / 60
        write = self.job.rhythm.checkpoint_write_minutes / 60
        k = math.floor(self.checkpointed / every + 1e-9) + 1
        while (at := activity.training_since + k * every - activity.progress_at_start + write) <= until:
            if at > self.played_until and activity.silence_at(at) is None:
                minutes = round(k * every * 60)
                self.side.write_checkpoint(
                    self.checkpoint_uri, f"step-{minutes:06d}/model.pt", stamped_at=self.clock.at_hours(at)
                )
                self.checkpointed = k * every
            k += 1
