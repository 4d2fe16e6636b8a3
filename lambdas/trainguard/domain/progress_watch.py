"""What trainguard keeps of a job's progress between deliveries of its log lines, and how each line moves it.

Kept: the last step and when it last advanced, a bounded sample of the intervals between advancing steps, the open
phase, the longest each named phase has taken, the start marker, and what the advancing steps say of the job's pace
(step_pace.py) and loss (loss_watch.py).

`advance(state, reading, at)` folds one line's reading (progress_reading.ProgressReading) into the state, in the
order of the lines' own timestamps (docs/progress.md, "How a reporting job is judged"):
- a higher step advances: the interval since the last advance is learned, unless a phase was announced inside it
  (a checkpoint save is no step interval) or it is the first step;
- the same step does not advance: a heartbeat repeating it is no progress;
- a lower step stamped after the last advance is a restart from a checkpoint: the intervals learned are forgotten;
  stamped before it, it is another host's line delivered late, and is ignored. A start marker forgets them too,
  and the pace and loss learned with them;
- a phase's begin opens it; its end line closes it, and how long it took is learned (the longest per phase name:
  `phase_seconds`), as nvidia-resiliency-ext learns its sections' timeouts. A phase closed by no end line (DeepSpeed
  prints none after a save) is not learned: from its begin to the next step, it would hold what the job does next
  without a word (an evaluation after every other save), and the next, longer one would be stopped. The step limit
  counts from a phase's end too (`quiet_since`); a begin of the
  phase already open, with no step since and no expectation, is the same phase going on (NeMo prints
  "Validation: iteration N/M" through an evaluation), not a new one.
Hugging Face Trainer's lines carry no step (progress_markers.py), so its readings are left out: its start marker
must not make a job wait for a first step that its lines will never show.

The state is stored in the job's watch entry (under a kilobyte as JSON: MAX_INTERVALS intervals, and the pace's
and loss's bounded samples, at most).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from trainguard.domain.log_rhythm import epoch_ms, from_epoch_ms
from trainguard.domain.loss_watch import LossState, with_loss
from trainguard.domain.progress_lines import LineRule, read_progress_line
from trainguard.domain.progress_markers import PHASES_NO_LINE_ENDS
from trainguard.domain.progress_reading import Phase, ProgressReading, Reader
from trainguard.domain.progress_settings import ProgressSettings
from trainguard.domain.step_pace import PaceState, restarted, with_interval

MAX_INTERVALS = 32  # the newest intervals kept: the sample the step limit's quantile is taken from
MAX_PHASE_NAMES = 8  # the phase names whose longest duration is kept (a job names a few: checkpoint, evaluation)
READERS_WITHOUT_STEPS = frozenset({Reader.HUGGING_FACE})
DEFAULT_SETTINGS = ProgressSettings()  # a job with no tags, under the defaults
_MAX_PHASE_NAME = 64  # progress_lines._PHASE_NAME's bound; framework phases are named by trainguard


@dataclass(frozen=True)
class OpenPhase:
    """A long phase the job announced and has not ended: its name, when it began, the seconds it should take."""

    name: str
    began: datetime
    expect_seconds: float | None = None


@dataclass(frozen=True)
class ProgressState:
    """A job's progress as its lines have told it (docs/progress.md)."""

    reader: Reader | None = None  # the reader of the job's first progress line
    last_step: int | None = None
    advanced_at: datetime | None = None  # when the step last advanced (the first step's time, at first)
    intervals: tuple[float, ...] = ()  # seconds between advancing steps, the newest MAX_INTERVALS
    longest_seconds: float = 0.0  # the longest learned interval since the job (re)started
    phase: OpenPhase | None = None
    phased: bool = False  # a phase was announced (begun or ended) since the last advance
    started_at: datetime | None = None  # the newest start marker
    phase_seconds: tuple[tuple[str, float], ...] = ()  # the longest each named phase has taken, newest name last
    phase_ended_at: datetime | None = None  # the newest end of a phase: the step limit counts from it too
    pace: PaceState = field(default_factory=PaceState)  # the seconds per step against the job's baseline
    loss: LossState = field(default_factory=LossState)  # the reported losses, and a run of bad ones

    @property
    def quiet_since(self) -> datetime | None:
        """Since when the job has been outside an announced phase without an advancing step: the last advance, or
        the end of a phase after it (a save's time is not the step's)."""
        if self.advanced_at is None or self.phase_ended_at is None:
            return self.advanced_at
        return max(self.advanced_at, self.phase_ended_at)

    def longest_phase_seconds(self, name: str) -> float | None:
        """The longest the phase `name` has taken so far (None: it has not ended yet)."""
        return dict(self.phase_seconds).get(name)

    @property
    def reports(self) -> bool:
        """The job's lines have given a step or a start marker: it is judged by its progress."""
        return self.last_step is not None or self.started_at is not None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"reader": self.reader.value if self.reader else None, "step": self.last_step}
        data |= {
            "advanced_ms": epoch_ms(self.advanced_at),
            "started_ms": epoch_ms(self.started_at),
            "phase_end_ms": epoch_ms(self.phase_ended_at),
            "phased": self.phased,
        }
        data |= {"intervals": [round(s, 1) for s in self.intervals], "longest_s": round(self.longest_seconds, 1)}
        if self.phase_seconds:
            data["phase_s"] = {name: round(seconds, 1) for name, seconds in self.phase_seconds}
        if self.pace != PaceState():
            data["pace"] = self.pace.to_json()
        if self.loss != LossState():
            data["loss"] = self.loss.to_json()
        if self.phase is not None:
            data["phase"] = {
                "name": self.phase.name,
                "began_ms": epoch_ms(self.phase.began),
                "expect_s": self.phase.expect_seconds,
            }
        return data

    @classmethod
    def from_json(cls, data: object) -> ProgressState:
        """A state from its stored form; an empty one for anything that does not read as one."""
        if not isinstance(data, Mapping):
            return cls()
        intervals = data.get("intervals")
        if not isinstance(intervals, list) or not all(_seconds(s) is not None for s in intervals):
            intervals = []
        step = data.get("step")
        return cls(
            reader=Reader(data["reader"]) if data.get("reader") in Reader._value2member_map_ else None,
            last_step=step if isinstance(step, int) and not isinstance(step, bool) and step >= 0 else None,
            advanced_at=from_epoch_ms(data.get("advanced_ms")),
            intervals=tuple(float(s) for s in intervals[-MAX_INTERVALS:]),
            longest_seconds=_seconds(data.get("longest_s")) or 0.0,
            phase=_phase_from_json(data.get("phase")),
            phased=data.get("phased") is True,
            started_at=from_epoch_ms(data.get("started_ms")),
            phase_seconds=_phase_seconds_from_json(data.get("phase_s")),
            phase_ended_at=from_epoch_ms(data.get("phase_end_ms")),
            pace=PaceState.from_json(data.get("pace")),
            loss=LossState.from_json(data.get("loss")),
        )


def advance(
    state: ProgressState, reading: ProgressReading, at: datetime, settings: ProgressSettings = DEFAULT_SETTINGS
) -> ProgressState:
    """`state` with one line's reading, stamped `at`, folded in (the module's docstring says how); `settings`: the
    job's figures for its pace and loss."""
    if reading.source is None or reading.source in READERS_WITHOUT_STEPS:
        return state
    if state.reader is None and (reading.step is not None or reading.start or reading.phase is not None):
        state = replace(state, reader=reading.source)
    if reading.start and (state.advanced_at is None or at > state.advanced_at):
        state = ProgressState(reader=state.reader, started_at=at)
    if reading.step is not None:
        state = _with_health(state, _with_step(state, reading.step, at), reading, settings)
    if reading.phase is Phase.BEGIN and reading.phase_name and (state.phase is None or at >= state.phase.began):
        name = reading.phase_name[:_MAX_PHASE_NAME]
        if not _goes_on(state, name, reading.expect_seconds):
            state = replace(state, phase=OpenPhase(name, at, reading.expect_seconds), phased=True)
    elif reading.phase is Phase.END:
        open_phase = state.phase
        if open_phase is not None and at >= open_phase.began:
            state = _with_phase_seconds(replace(state, phase=None), open_phase, at)
        ended = at if state.phase_ended_at is None else max(at, state.phase_ended_at)
        state = replace(state, phased=True, phase_ended_at=ended)
    return state


def _goes_on(state: ProgressState, name: str, expect_seconds: float | None) -> bool:
    """Whether a begin of `name` is the open phase going on: the same name, no step since it began, no expectation."""
    phase = state.phase
    if phase is None or phase.name != name or expect_seconds is not None:
        return False
    return state.advanced_at is None or phase.began >= state.advanced_at


def _with_phase_seconds(state: ProgressState, phase: OpenPhase, ended: datetime) -> ProgressState:
    """`state` having learned that `phase` took until `ended` (the longest per name, MAX_PHASE_NAMES names)."""
    seconds = (ended - phase.began).total_seconds()
    known = dict(state.phase_seconds)
    longest = max(seconds, known.pop(phase.name, 0.0))
    kept = (*known.items(), (phase.name, round(longest, 1)))[-MAX_PHASE_NAMES:]
    return replace(state, phase_seconds=kept)


def with_lines(
    state: ProgressState,
    lines: Iterable[tuple[datetime, str]],
    rule: LineRule | None,
    settings: ProgressSettings = DEFAULT_SETTINGS,
) -> ProgressState:
    """`state` with a delivery's lines (time, message) read and folded in, in time order."""
    for at, line in sorted(lines, key=lambda pair: pair[0]):
        state = advance(state, read_progress_line(line, rule), at, settings)
    return state


def _with_health(
    before: ProgressState, after: ProgressState, reading: ProgressReading, settings: ProgressSettings
) -> ProgressState:
    """`after` (one step line folded in) with its pace and loss: an advance's interval is a step's time unless a
    phase was announced in it or is open; a restart learns both again."""
    if after.advanced_at is None or (after.advanced_at, after.last_step) == (before.advanced_at, before.last_step):
        return after  # no advance: a repeated step, or another host's late line
    last, began = before.last_step, before.advanced_at
    if last is None or began is None or (after.last_step is not None and after.last_step < last):
        return replace(after, pace=restarted(reading.batch), loss=_with_loss(after, LossState(), reading, settings))
    pace = before.pace
    if reading.batch is not None and reading.batch != pace.batch:
        pace = restarted(reading.batch)  # a planned change: the new pace is learned from its warm-up on
    elif not before.phased and not _phase_holds_pace(before, settings) and after.last_step is not None:
        pace = with_interval(pace, began, after.advanced_at, after.last_step - last, settings.slowdown_factor)
    return replace(after, pace=pace, loss=_with_loss(after, before.loss, reading, settings))


def _phase_holds_pace(state: ProgressState, settings: ProgressSettings) -> bool:
    """Whether the steps now are inside an announced phase (an asynchronous save), which slows them on purpose: up to
    the phase's expectation and its margin, or the default phase minutes for one announced without. A phase no line
    of its reader ever ends (a DeepSpeed save, NeMo's validation: PHASES_NO_LINE_ENDS) holds no step after it: the
    interval that held it is no step's time (`phased`), and the steps after it are the job's own pace."""
    phase = state.phase
    if phase is None or state.advanced_at is None or (state.reader, phase.name) in PHASES_NO_LINE_ENDS:
        return False
    if phase.expect_seconds is not None:
        allowance = phase.expect_seconds * (1 + settings.phase_margin_percent / 100)
    else:
        allowance = settings.phase_minutes * 60.0
    return (state.advanced_at - phase.began).total_seconds() < allowance


def _with_loss(
    state: ProgressState, loss: LossState, reading: ProgressReading, settings: ProgressSettings
) -> LossState:
    if reading.loss is None or state.last_step is None or state.advanced_at is None:
        return loss
    return with_loss(loss, state.last_step, reading.loss, state.advanced_at, settings.divergence_jump)


def _with_step(state: ProgressState, step: int, at: datetime) -> ProgressState:
    if state.last_step is None or state.advanced_at is None:
        return replace(state, last_step=step, advanced_at=at, phased=False)
    if step == state.last_step:
        return state  # no progress: a heartbeat, a watchdog, another host repeating the step
    if step < state.last_step:
        if at <= state.advanced_at:
            return state  # another host's line, delivered after newer ones
        return replace(state, last_step=step, advanced_at=at, intervals=(), longest_seconds=0.0, phased=False)
    interval = (at - state.advanced_at).total_seconds()
    intervals, longest = state.intervals, state.longest_seconds
    if interval > 0 and not state.phased:
        intervals, longest = (*intervals, round(interval, 1))[-MAX_INTERVALS:], max(longest, interval)
    advanced = max(at, state.advanced_at)
    return replace(
        state, last_step=step, advanced_at=advanced, intervals=intervals, longest_seconds=longest, phased=False
    )


def _phase_from_json(data: object) -> OpenPhase | None:
    if not isinstance(data, Mapping) or not isinstance(data.get("name"), str) or not data["name"]:
        return None
    began = from_epoch_ms(data.get("began_ms"))
    if began is None:
        return None
    return OpenPhase(data["name"][:_MAX_PHASE_NAME], began, _seconds(data.get("expect_s")))


def _phase_seconds_from_json(data: object) -> tuple[tuple[str, float], ...]:
    if not isinstance(data, Mapping):
        return ()
    found = [(name[:_MAX_PHASE_NAME], _seconds(seconds)) for name, seconds in data.items() if isinstance(name, str)]
    return tuple((name, seconds) for name, seconds in found if name and seconds is not None)[-MAX_PHASE_NAMES:]


def _seconds(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 10**9:
        return None
    return float(value)
