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

from trainguard_local.simulation.fault_table import (
    FAULT_TABLE,
    SPINNING_PER_GPU,
    WORKING_PER_GPU,
    Ending,
    FaultKind,
    Logs,
)
from trainguard_local.simulation.reporting import LineKind, LineToken, word
from trainguard_local.simulation.rhythm import SAVE_LINE, JobRhythm, Phase, line_offsets, phases
from trainguard_local.simulation.steps import StepPlan

if TYPE_CHECKING:
    from trainguard_local.simulation.trace import JobSpec

SECOND = 1 / 3600  # hours
MILLISECOND = SECOND / 1000
# Float slack on a window's edges: a line at a window's `until` (whole minutes of hours lose their last bits)
# belongs to that window, once, never to none.
EDGE = 1e-12
PHASE_EDGE = 1e-9  # hours: a step's end and a phase's start computed apart differ by less


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

    @property
    def hung(self) -> bool:
        return FAULT_TABLE[self.kind].hung


@dataclass(frozen=True)
class Slowdown:
    """A degraded host's: from `start` (hours) the launch's work runs at 1/`factor`; `host`: the one it waits on,
    when its GPU shows it (None: a slow GPU, which reads as busy as the rest)."""

    start: float
    factor: float
    host: int | None = None


class LaunchActivity:
    def __init__(
        self,
        rhythm: JobRhythm,
        checkpoint_every_minutes: float,
        gpus_per_host: int,
        training_since: float,
        progress_at_start: float = 0.0,
        steps: StepPlan | None = None,
    ) -> None:
        self.rhythm, self.checkpoint_every_minutes = rhythm, checkpoint_every_minutes
        self.gpus_per_host = gpus_per_host
        self.training_since = training_since
        self.progress_at_start = progress_at_start
        self.steps = steps or StepPlan(rhythm.log_every_seconds)
        self.silences: list[Silence] = []
        self.slowed: Slowdown | None = None  # a degraded host's, from its strike to the launch's end
        self.diverged_from: float = math.inf  # hours: its loss is NaN in every line from then on

    def strike(
        self,
        kind: FaultKind,
        at: float,
        minutes: float = math.inf,
        *,
        factor: float = 1.0,
        slow_host: int | None = None,
    ) -> None:
        """The fault `kind` strikes at `at`: quiet from then on, or for `minutes`, if its row says so, the GPUs at
        its row's level (a healthy silence from the start of training is a first checkpoint load); a degraded host
        slows the launch by `factor` (`slow_host`: the host it waits on, when its GPU shows it); a divergence turns
        its loss into NaN."""
        row = FAULT_TABLE[kind]
        if row.ending is Ending.SLOWS:
            self.slowed = Slowdown(at, factor, slow_host)
            return
        if row.ending is Ending.DIVERGES:
            self.diverged_from = at
            return
        if row.logs is Logs.GO_ON:
            return
        first_load = abs(at - self.training_since) < 1e-6
        talks = row.logs is Logs.HEARTBEAT
        self.silences.append(Silence(kind, at, at + minutes / 60, row.gpu_per_gpu(first_load=first_load), talks))

    # ---- the launch's clock: its work runs at 1/factor from a degraded host's strike ---------------------------

    def progress_at(self, at: float) -> float:
        """The work done (hours) at `at`."""
        slowed, since = self.slowed, self.training_since
        if slowed is None or at <= slowed.start:
            return self.progress_at_start + at - since
        return self.progress_at_start + slowed.start - since + (at - slowed.start) / slowed.factor

    def at_progress(self, progress: float) -> float:
        """When the launch's work reaches `progress` (hours)."""
        return self.at_work(progress - self.progress_at_start)

    def at_work(self, hours: float) -> float:
        """When the launch has worked `hours` since it started training."""
        at, slowed = self.training_since + hours, self.slowed
        if slowed is None or at <= slowed.start:
            return at
        return slowed.start + (at - slowed.start) * slowed.factor

    def silence_at(self, at: float) -> Silence | None:
        return next((silence for silence in self.silences if silence.holds_at(at)), None)

    def hung_at(self, at: float) -> bool:
        """The truth: billed and making no progress at `at`."""
        silence = self.silence_at(at)
        return silence is not None and FAULT_TABLE[silence.kind].hung

    def gpu_per_host(self, at: float, host: int = 0) -> float | None:
        """Host `host`'s GPUUtilization at `at` (100 per GPU); None before the launch trains. A host that slows a
        launch by waiting on its own input computes 1/factor of the time, the others wait on it in a collective
        (fault_table.py); a slow GPU shows nothing."""
        if at < self.training_since:
            return None
        silence, slowed = self.silence_at(at), self.slowed
        if silence is not None:
            return silence.gpu_per_gpu * self.gpus_per_host
        if slowed is None or at < slowed.start or slowed.host is None:
            return WORKING_PER_GPU * self.gpus_per_host
        level = WORKING_PER_GPU / slowed.factor if host == slowed.host else SPINNING_PER_GPU
        return level * self.gpus_per_host

    def checkpoints(self, after: float, until: float) -> list[tuple[float, float]]:
        """The checkpoints that reach S3 after `after` and up to `until`, as (hours when the write ends, the
        progress it holds): one every `checkpoint_every_minutes` of work, each written in its rhythm's
        `checkpoint_write_minutes`; none while a fault holds (fault_table.py: none reaches S3 after a strike)."""
        every, write = self.checkpoint_every_minutes / 60, self.rhythm.checkpoint_write_minutes / 60
        first = math.floor(self.progress_at_start / every + 1e-9) + 1  # the first beyond the work it resumed at
        k = max(first, math.floor((self.progress_at(max(after, self.training_since)) - write) / every + 1e-9) + 1)
        found = []
        while (at := self.at_progress(k * every + write)) <= until + 1e-9:
            if at > after and self.silence_at(at) is None:
                found.append((at, k * every))
            k += 1
        return found

    def lines(self, after: float, until: float) -> list[tuple[float, LineToken]]:
        """The lines after `after` and up to `until`, as (hours, what each is): reporting.py words them."""
        since = self.training_since
        # The phases after the work the launch resumed at: the save at that point was its previous launch's.
        looked_from = max(self.progress_at(after) - 1.0, self.progress_at_start)
        found_phases = phases(self.rhythm, self.checkpoint_every_minutes, looked_from, self.progress_at(until))
        silent = [(self.at_progress(p.at_progress), p) for p in found_phases]
        talking = [(s.start, s.end) for s in self.silences if s.talks]
        # A step that ends as a phase or a healthy silence begins still prints its line, just after the phase's first
        # (before: dropped): the work runs on through a phase in this model, only its lines are silent. A hang that
        # strikes then silences it.
        quiet = [(s.start + (0.0 if s.hung else PHASE_EDGE), s.end) for s in self.silences if not s.talks]
        quiet += [(start + PHASE_EDGE, self.at_progress(p.at_progress + p.minutes / 60)) for start, p in silent]
        endless = [(s.start, s.end) for s in self.silences if math.isinf(s.end)]

        def within(at: float, spans: list[tuple[float, float]]) -> bool:
            return any(start <= at < end for start, end in spans)

        def heard(at: float, *, boundary: bool = False) -> bool:
            """A cadence line is not heard in any silence; a silence's own first and last lines are, unless
            the job has hung by then (a phase that starts inside another silence still ends with a line)."""
            return after + EDGE < at <= until + EDGE and not within(at, endless if boundary else quiet)

        moments = [at for at in self._step_moments(after, until) if heard(at)]  # the start's line is added below
        found = [(at, self._token(LineKind.HEARTBEAT if within(at, talking) else LineKind.STEP, at)) for at in moments]
        found += [(since, LineToken(LineKind.START))] if heard(since) else []  # a line as training starts
        for start, phase in silent:
            found += [(at, token) for at, token in self._phase_tokens(start, phase) if heard(at, boundary=True)]
        for silence in self.silences:
            bounds = (silence.start - SECOND, silence.end)
            found += [(at, self._token(LineKind.STEP, at)) for at in bounds if heard(at, boundary=True)]
        return sorted(found, key=lambda line: line[0])

    def _step_moments(self, after: float, until: float) -> list[float]:
        """When the launch ends a step (hours), after `after` and up to `until`: an exact job every cadence of the
        launch's work from its start, as before issue 28; another at its plan's steps (steps.py)."""
        start = self.progress_at_start * 3600
        first, last = (self.progress_at(at) * 3600 - start for at in (after, until))
        if self.steps.exact:
            offsets = line_offsets(self.rhythm, first, last)
        else:
            steps = range(self.steps.step_at(start + first) + 1, self.steps.step_at(start + last) + 1)
            offsets = [self.steps.ends_at(step) - start for step in steps]
        return [self.at_work(offset / 3600) for offset in offsets if offset > 0]

    def step_at(self, at: float) -> int:
        """The job's step at `at`: one per step line of work done (a relaunch resumes at its checkpoint's)."""
        return self.steps.step_at(self.progress_at(at) * 3600)

    def _token(self, kind: LineKind, at: float, phase: str = "", expect_seconds: int = 0) -> LineToken:
        """A line's token at `at`: its step, the loss and batch size its step line prints."""
        step = self.step_at(at)
        loss = math.nan if at >= self.diverged_from else None
        return LineToken(kind, step, phase, expect_seconds, loss=loss, batch=self.steps.batch_at(step))

    def _phase_tokens(self, start: float, phase: Phase) -> list[tuple[float, LineToken]]:
        """A phase's lines: its begin (a save, or an evaluation alone), the save's end when an evaluation follows,
        and its end."""
        save = min(self.rhythm.checkpoint_write_minutes, phase.minutes)
        evaluation = phase.minutes - save
        saved, end = (self.at_progress(phase.at_progress + minutes / 60) for minutes in (save, phase.minutes))
        first = "checkpoint" if save > 0 else "evaluation"
        expect = round(3600 * ((saved - start) if save > 0 else (end - start)))  # as long as it takes (reporting.py)
        tokens = [(start - SECOND, self._token(LineKind.PHASE_BEGIN, start - SECOND, first, expect))]
        if save > 0 and evaluation > 1e-9:
            rest = round(3600 * (end - saved))
            tokens.append((saved, self._token(LineKind.SAVE_END, start - SECOND, "evaluation", rest)))
        last = "evaluation" if evaluation > 1e-9 else "checkpoint"
        tokens.append((end, self._token(LineKind.PHASE_END, end, last)))
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
