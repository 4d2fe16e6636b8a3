"""One launch played on the stand-in: what the simulation core says it emits (simulation/activity.py: its lines,
its GPU level, its checkpoints), written through a fleet side (fleet_side.py) up to a moment of the run's
clock, with the log subscription's delivery of its lines. The demos and the sandbox write every launch
through it."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

from botocore.exceptions import ClientError

from trainguard_local.simulation.activity import SECOND, LaunchActivity, worded
from trainguard_local.simulation.clock import SimClock
from trainguard_local.simulation.reporting import LineKind, LineToken
from trainguard_local.simulation.rhythm import SAVE_LINE
from trainguard_local.simulation.trace import Fault, JobSpec
from trainguard_local.stand_in.fleet_side import FleetSide, log_delivery

MINUTE = 1 / 60  # hours
CHECKPOINT_KEY = re.compile(r"(?:^|/)step-(\d{6})/model\.pt$")  # the minutes of work it holds (_save_checkpoints)


def resumed_progress(side: FleetSide, checkpoint_uri: str) -> float:
    """The work (hours) of the newest checkpoint a launch finds under its prefix: what a relaunch resumes from,
    as SageMaker restores the prefix into the job's checkpoint directory (0 when there is none to read)."""
    parsed = urlparse(checkpoint_uri)
    if not checkpoint_uri or parsed.scheme != "s3":
        return 0.0
    try:
        listed = side.client("s3").list_objects_v2(Bucket=parsed.netloc, Prefix=parsed.path.lstrip("/"))
    except ClientError:
        return 0.0  # a bucket that is missing: the launch finds nothing, as on AWS
    found = [int(m[1]) for item in listed.get("Contents", []) if (m := CHECKPOINT_KEY.search(item["Key"]))]
    return max(found, default=0) / 60


class PlayedLaunch:
    """One launch as SageMaker job `name` on `hosts` hosts, doing what `activity` says, its checkpoints under
    `checkpoint_uri` (none when empty). A trace job's launch words its lines as the job reports (reporting.py);
    another words each line with `words(at)` (default: a step count and a loss)."""

    def __init__(
        self,
        name: str,
        hosts: int,
        activity: LaunchActivity,
        side: FleetSide,
        clock: SimClock,
        checkpoint_uri: str,
        words: Callable[[float], str] | None = None,
        job: JobSpec | None = None,
    ) -> None:
        self.name, self.hosts, self.activity, self.side, self.clock = name, hosts, activity, side, clock
        self.checkpoint_uri = checkpoint_uri
        self.played_until = activity.training_since - SECOND / 2  # the line as training starts is still to come
        self.checkpointed = activity.progress_at_start  # the progress of its newest checkpoint
        self.checkpoints_saved = 0
        self.checkpoint_refused: ClientError | None = None  # the first refused write (a bucket that is missing)
        self.lines_logged = 0
        self.words = words or self._step_line
        self.job = job

    @classmethod
    def of_job(
        cls, name: str, job: JobSpec, side: FleetSide, clock: SimClock, uri: str, *, since: float, progress: float = 0.0
    ) -> PlayedLaunch:
        """A launch of a trace job, training from `since` (hours on `clock`), its work resumed at `progress`."""
        activity = LaunchActivity(job.rhythm, job.checkpoint_every_minutes, job.gpus_per_instance, since, progress)
        return cls(name, job.instance_count, activity, side, clock, uri, job=job)

    def strike(self, fault: Fault, origin: float) -> float:
        """Strike the launch with `fault` (its strikes_at counted from `origin`); when, on the kernel's hours."""
        at = origin + fault.strikes_at
        self.activity.strike(fault.kind, at, fault.silent_minutes or fault.hung_minutes or math.inf)
        return at

    def play_until(self, until: float) -> dict[str, Any] | None:
        """Write what the launch did since the last call, up to `until`: its hosts' GPUUtilization half a minute
        before, the checkpoints it saved, its lines; the log subscription's delivery of the lines (None: none)."""
        sampled = until - MINUTE / 2
        gpu = self.activity.gpu_per_host(sampled)
        if gpu is not None and self.activity.gpus_per_host:  # no GPU, no GPUUtilization: only log silence tells
            self.side.put_gpu_utilization(self.name, self.hosts, [(self.clock.at_hours(sampled), gpu)])
        if self.checkpoint_uri:
            self._save_checkpoints(until)
        found = self.activity.lines(self.played_until, until)
        self.played_until = until
        if not found:
            return None
        if self.job is not None:
            texts = worded(found, self.job)
        else:
            texts = [(at, self._plain(at, token)) for at, token in found]
        lines = [(self.clock.at_hours(at), text) for at, text in texts]
        stream, events = self.side.write_log_lines(self.name, self.clock.at_hours(self.activity.training_since), lines)
        return log_delivery(stream, [{"id": f"{self.name}-{event['timestamp']}", **event} for event in events])

    def _plain(self, at: float, token: LineToken) -> str:
        if token.kind is LineKind.PHASE_BEGIN and self.activity.rhythm.announces_phases:
            return SAVE_LINE
        return self.words(at)

    def _step_line(self, at: float) -> str:
        self.lines_logged += 1
        return f"step {self.lines_logged * 10} loss {1.5 + 1.0 / self.lines_logged:.4f}"

    def _save_checkpoints(self, until: float) -> None:
        """Each checkpoint the launch saved since the last call, stamped when its write ended."""
        for at, work in self.activity.checkpoints(self.played_until, until):
            name = f"step-{round(work * 60):06d}/model.pt"  # minutes of work
            try:
                self.side.write_checkpoint(self.checkpoint_uri, name, stamped_at=self.clock.at_hours(at))
            except ClientError as refused:
                self.checkpoint_refused = self.checkpoint_refused or refused
                return
            self.checkpointed, self.checkpoints_saved = work, self.checkpoints_saved + 1
