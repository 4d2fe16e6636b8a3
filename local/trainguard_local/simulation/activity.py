"""What one launch does while it trains, on the run's clock (hours since its base): the lines it logs, its
hosts' GPUUtilization, and whether it is hung. The ground truth: every harness writes what a job emits from
here, and every audit judges trainguard against it, never against a copy of a product rule.

The lines follow the job's rhythm (rhythm.py): one every `log_every_seconds` of the launch's clock, none in
its silent phases (a checkpoint save, an evaluation; a phase line just before, if the job announces its
phases) nor while a fault keeps it quiet (a hang, from its start; a healthy silence, for its length); one
as training starts, and one just before and one at the end of every silence, so that a silence lasts what
the trace says. Silences run on the job's progress, as its checkpoints do. While a fault keeps it quiet, a
host reads its row's GPU level (fault_table.py); otherwise `WORKING_PER_GPU`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trainguard_local.simulation.fault_table import FAULT_TABLE, WORKING_PER_GPU, FaultKind, Logs
from trainguard_local.simulation.reporting import LineKind, LineToken, word
from trainguard_local.simulation.rhythm import SAVE_LINE, JobRhythm, Phase, line_offsets, phases

if TYPE_CHECKING:
    from trainguard_local.simulation.trace import JobSpec

SECOND = 1 / 3600  # hours
MILLISECOND = SECOND / 1000
# Float slack on a window's edges: a line at a window's `until` (whole minutes of hours lose their last bits)
# belongs to that window, once, never to none.
EDGE = 1e-12


@dataclass(frozen=True)
class Silence:
    """A fault's quiet time: from `start` to `end` (hours; math.inf: for good), its hosts at `gpu_per_gpu`."""

    kind: FaultKind
    start: float
    end: float
    gpu_per_gpu: float
    talks: bool = False  # a heartbeat goes on through it: lines come, the step does not advance (a livelock)

    def holds_at(self, at: float) -> bool:
        return self.start <= at < self.end


class LaunchActivity:
    def __init__(
        self,
        rhythm: JobRhythm,
        checkpoint_every_minutes: float,
        gpus_per_host: int,
        training_since: float,
        progress_at_start: float = 0.0,
    ) -> None:
        self.rhythm, self.checkpoint_every_minutes = rhythm, checkpoint_every_minutes
        self.gpus_per_host = gpus_per_host
        self.training_since = training_since
        self.progress_at_start = progress_at_start
        self.silences: list[Silence] = []

    def strike(self, kind: FaultKind, at: float, minutes: float = math.inf) -> None:
        """The fault `kind` strikes at `at`: quiet from then on, or for `minutes`, if its row says so. The
        GPUs read its row's level (a healthy silence from the start of training is a first checkpoint load)."""
        row = FAULT_TABLE[kind]
        if row.logs is Logs.GO_ON:
            return
        first_load = abs(at - self.training_since) < 1e-6
        talks = row.logs is Logs.HEARTBEAT
        self.silences.append(Silence(kind, at, at + minutes / 60, row.gpu_per_gpu(first_load=first_load), talks))

    def silence_at(self, at: float) -> Silence | None:
        return next((silence for silence in self.silences if silence.holds_at(at)), None)

    def hung_at(self, at: float) -> bool:
        """The truth: billed and making no progress at `at`."""
        silence = self.silence_at(at)
        return silence is not None and FAULT_TABLE[silence.kind].hung

    def gpu_per_host(self, at: float) -> float | None:
        """A host's GPUUtilization at `at` (100 per GPU); None before the launch trains."""
        if at < self.training_since:
            return None
        silence = self.silence_at(at)
        return (WORKING_PER_GPU if silence is None else silence.gpu_per_gpu) * self.gpus_per_host

    def checkpoints(self, after: float, until: float) -> list[tuple[float, float]]:
        """The checkpoints that reach S3 after `after` and up to `until`, as (hours when the write ends, the
        progress it holds): one every `checkpoint_every_minutes` of work, each written in its rhythm's
        `checkpoint_write_minutes`; none while a fault holds (fault_table.py: none reaches S3 after a strike)."""
        every, write = self.checkpoint_every_minutes / 60, self.rhythm.checkpoint_write_minutes / 60
        origin = self.training_since - self.progress_at_start  # when its work would have begun
        first = math.floor(self.progress_at_start / every + 1e-9) + 1  # the first beyond the work it resumed at
        k = max(first, math.floor((max(after, self.training_since) - write - origin) / every + 1e-9) + 1)
        found = []
        while (at := origin + k * every + write) <= until + 1e-9:
            if at > after and self.silence_at(at) is None:
                found.append((at, k * every))
            k += 1
        return found

    def lines(self, after: float, until: float) -> list[tuple[float, LineToken]]:
        """The lines after `after` and up to `until`, as (hours, what each is): reporting.py words them."""
        since, progress = self.training_since, self.progress_at_start
        silent = [
            (since + p.at_progress - progress, p)
            for p in phases(
                self.rhythm,
                self.checkpoint_every_minutes,
                progress + (after - since) - 1.0,
                progress + until - since,
            )
        ]
        talking = [(s.start, s.end) for s in self.silences if s.talks]
        quiet = [(s.start, s.end) for s in self.silences if not s.talks]
        quiet += [(start, start + p.minutes / 60) for start, p in silent]
        endless = [(s.start, s.end) for s in self.silences if math.isinf(s.end)]

        def within(at: float, spans: list[tuple[float, float]]) -> bool:
            return any(start <= at < end for start, end in spans)

        def heard(at: float, *, boundary: bool = False) -> bool:
            """A cadence line is not heard in any silence; a silence's own first and last lines are, unless
            the job has hung by then (a phase that starts inside another silence still ends with a line)."""
            return after + EDGE < at <= until + EDGE and not within(at, endless if boundary else quiet)

        offsets = line_offsets(self.rhythm, (after - since) * 3600, (until - since) * 3600)
        moments = [since + offset / 3600 for offset in offsets if offset > 0]  # the start's line is added below
        found = [
            (at, LineToken(LineKind.HEARTBEAT if within(at, talking) else LineKind.STEP, self.step_at(at)))
            for at in moments
            if heard(at)
        ]
        found += [(since, LineToken(LineKind.START))] if heard(since) else []  # a line as training starts
        for start, phase in silent:
            found += [(at, token) for at, token in self._phase_tokens(start, phase) if heard(at, boundary=True)]
        for silence in self.silences:
            bounds = (silence.start - SECOND, silence.end)
            found += [(at, LineToken(LineKind.STEP, self.step_at(at))) for at in bounds if heard(at, boundary=True)]
        return sorted(found, key=lambda line: line[0])

    def step_at(self, at: float) -> int:
        """The job's step at `at`: one per cadence line of work done (a relaunch resumes at its checkpoint's)."""
        work_seconds = (self.progress_at_start + at - self.training_since) * 3600
        return math.floor(work_seconds / self.rhythm.log_every_seconds + 1e-6)

    def _phase_tokens(self, start: float, phase: Phase) -> list[tuple[float, LineToken]]:
        """A phase's lines: its begin (a save, or an evaluation alone), the save's end when an evaluation follows,
        and its end."""
        save = min(self.rhythm.checkpoint_write_minutes, phase.minutes)
        evaluation = phase.minutes - save
        step = self.step_at(start - SECOND)
        first = "checkpoint" if save > 0 else "evaluation"
        tokens = [(start - SECOND, LineToken(LineKind.PHASE_BEGIN, step, first, round(60 * (save or evaluation))))]
        if save > 0 and evaluation > 1e-9:
            tokens.append((start + save / 60, LineToken(LineKind.SAVE_END, step, "evaluation", round(60 * evaluation))))
        last = "evaluation" if evaluation > 1e-9 else "checkpoint"
        end = start + phase.minutes / 60
        tokens.append((end, LineToken(LineKind.PHASE_END, self.step_at(end), last)))
        return tokens

    def newest_line(self, at: float) -> float | None:
        """When the launch last logged, at or before `at` (None: not yet)."""
        look_back = max(self.rhythm.log_every_seconds * SECOND * 2, 1.0)
        start = at
        while start > self.training_since - SECOND:
            start = max(start - look_back, self.training_since - SECOND)
            found = self.lines(start, at)
            if found:
                return found[-1][0]
            look_back *= 2
        return None


def worded(tokens: list[tuple[float, LineToken]], job: JobSpec) -> list[tuple[float, str]]:
    """The lines of `tokens` in the job's words (reporting.py), as (hours, text). A token printed as several lines
    stamps them a millisecond apart, ending at its moment, so that they reach the guard in their order."""
    phase_line = SAVE_LINE if job.rhythm.announces_phases else ""
    found = []
    for at, token in tokens:
        texts = word(job.reporting.dialect, token, phase_line)
        found += [(at - (len(texts) - 1 - index) * MILLISECOND, text) for index, text in enumerate(texts)]
    return sorted(found, key=lambda line: line[0])  # stable: a moment's lines keep their order
