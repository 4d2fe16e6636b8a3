"""The stall rules of a job that reports progress (docs/progress.md, "How a reporting job is judged").

A job judged by its steps (progress_watch.ProgressState) is stalled at the first of these deadlines it passes:
1. START: no first step by the start cutoff (its `progress-start-seconds` tag, or `progress-start-minutes` after
   its start marker);
2. STEP: no advancing step for longer than its step limit (`progress_limit`): its `progress-interval-seconds` tag,
   or INTERVAL_FACTOR x the QUANTILE of its newest intervals and LONGEST_FACTOR x the longest since it
   (re)started, never below PROGRESS_FLOOR_MINUTES (CloudWatch Logs' delivery to
   the subscription, the prober's minute and the alarm's one-minute period) nor above its cap; from
   EARLY_INTERVALS to MIN_INTERVALS intervals, INTERVAL_FACTOR x the longest (too few for a quantile); before,
   the fixed `stall-minutes`, or LONGEST_FACTOR x the longest wait it has shown when that is longer. It counts
   from the last advance, or from the end of a phase announced after it (`ProgressState.quiet_since`);
3. PHASE: inside an announced phase, once the phase has run past its allowance (its expectation plus
   `progress-phase-margin-percent`, at least the floor more; when it gave none, INTERVAL_FACTOR x the longest the
   same phase took before, at least the floor more, or `progress-phase-minutes` before one has ended) with no step
   since it began; a step inside an open phase (an asynchronous save) is progress, and then the later of the
   phase's allowance and the step limit judges.
A job that reports nothing gets no judgement here (None): the log-silence rules judge it, unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from trainguard.domain.checkpoints import format_duration
from trainguard.domain.log_rhythm import CAP_MINUTES
from trainguard.domain.progress_reading import Reader
from trainguard.domain.progress_settings import ProgressSettings
from trainguard.domain.progress_watch import ProgressState

QUANTILE = 0.95
LONGEST_FACTOR = 1.5
MIN_INTERVALS = 8
EARLY_INTERVALS = 3  # from this many intervals, a limit from the job's own: INTERVAL_FACTOR x the longest of them
# The floor of a reporting job's limits: its lines reach trainguard as a real-time stream (PutSubscriptionFilter:
# "subscribe to a real-time stream of log events ingested through PutLogEvents"), and the prober publishes the
# metric once a minute to an alarm of one-minute periods: two minutes cover both. Lower than the log-silence rule's
# FLOOR_MINUTES, which must also cover a job's jitter between lines that say nothing of progress.
PROGRESS_FLOOR_MINUTES = 2.0
_FLOOR_SECONDS = PROGRESS_FLOOR_MINUTES * 60
SILENT_AFTER_INTERVALS = 2  # a gap this many times the job's usual interval without any line is silence
DELIVERY_SECONDS = 60.0  # at least this: a line's way to the subscription and the prober's minute


class ProgressCheck(StrEnum):
    START = "start"  # no first step by the start cutoff
    STEP = "step"  # no advancing step within the step limit
    PHASE = "phase"  # an announced phase past its allowance


@dataclass(frozen=True)
class StepLimit:
    seconds: float
    reason: str  # where the limit comes from, with its figures and no parentheses


@dataclass(frozen=True)
class ProgressJudgement:
    """Which rule holds the job's next deadline, the deadline, and the reason with its figures."""

    check: ProgressCheck
    deadline: datetime
    stalled: bool
    reason: str

    def over_limit_minutes(self, now: datetime) -> float:
        """Minutes past the deadline (negative: minutes left), the value the stall alarm watches."""
        return (now - self.deadline).total_seconds() / 60


def quantile_seconds(intervals: tuple[float, ...], q: float = QUANTILE) -> float:
    """The nearest-rank q-quantile of `intervals` (0 with none)."""
    if not intervals:
        return 0.0
    ordered = sorted(intervals)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def progress_limit(
    state: ProgressState, settings: ProgressSettings, fixed_minutes: float, since: datetime | None = None
) -> StepLimit:
    """How long this job may go without an advancing step (the module's docstring gives the order). `since`: when
    the job started training (or printed its start marker), the first interval's stand-in before it has shown one."""
    if settings.interval_seconds is not None:
        seconds = max(_FLOOR_SECONDS, float(settings.interval_seconds))
        floor = ", raised to the floor" if seconds > settings.interval_seconds else ""
        return StepLimit(seconds, f"{_span(seconds)}, set by the job's progress-interval-seconds tag{floor}")
    count = len(state.intervals)
    if EARLY_INTERVALS <= count < MIN_INTERVALS:
        seconds, bound = _floored_and_capped(settings.interval_factor * state.longest_seconds)
        why = (
            f"{_span(seconds)}, learned from its first {count} intervals between advancing steps, the longest "
            f"{_span(state.longest_seconds)}: the limit is {settings.interval_factor} times that until "
            f"{MIN_INTERVALS} intervals give a 95% quantile, and never below {PROGRESS_FLOOR_MINUTES:g} min{bound}"
        )
        return StepLimit(seconds, why)
    if count < MIN_INTERVALS:
        # Never below what the job has shown: a job that steps every 40 min is not hung 30 min after a step. Before
        # its first interval, the wait for its first step stands in for one.
        first = (state.advanced_at - since).total_seconds() if count == 0 and state.advanced_at and since else 0.0
        shown = LONGEST_FACTOR * max(state.longest_seconds, first)
        why = f"the fixed {fixed_minutes:g} min, as the job has shown {count} intervals between advancing steps"
        why += f" where {MIN_INTERVALS} are needed to learn its own"
        if shown > fixed_minutes * 60:
            longest = f"{LONGEST_FACTOR:g} times the longest wait for a step it has shown"
            return StepLimit(shown, f"{_span(shown)}, {longest}, above {why}")
        return StepLimit(fixed_minutes * 60, why)
    high = quantile_seconds(state.intervals)
    learned = max(settings.interval_factor * high, LONGEST_FACTOR * state.longest_seconds)
    seconds, bound = _floored_and_capped(learned)
    why = (
        f"{_span(seconds)}, learned: 95% of its newest {count} intervals between advancing steps were at most "
        f"{_span(high)} and the longest since it started was {_span(state.longest_seconds)}; the limit is "
        f"{settings.interval_factor} times the first, at least {LONGEST_FACTOR:g} times the second, and never below "
        f"{PROGRESS_FLOOR_MINUTES:g} min{bound}"
    )
    return StepLimit(seconds, why)


def _floored_and_capped(seconds: float) -> tuple[float, str]:
    """A learned step limit within the floor and the cap, and which of them it is (", the floor"; "" for neither)."""
    bounded = min(CAP_MINUTES * 60, max(_FLOOR_SECONDS, seconds))
    return bounded, {_FLOOR_SECONDS: ", the floor", CAP_MINUTES * 60: ", the cap"}.get(bounded, "")


def promises_phases(state: ProgressState, settings: ProgressSettings) -> bool:
    """Whether a silent pause outside an announced phase is a hang after the step limit: the job prints trainguard's
    contract, which asks it to announce every long phase (docs/progress.md), or its owner declared the longest gap
    between its steps by tag. A framework announces its saves but not its evaluations (Megatron-LM, torchtitan,
    DeepSpeed; NeMo not even its saves' start), and a tag pattern announces nothing: their first evaluation would be
    stopped minutes in, and again after every relaunch, which forgets the pauses learned. So a silent pause of those
    is judged by the log-silence rules, as a job that reports nothing is; their steps judge them while lines go on
    without progress (a livelock) and inside a phase they announced."""
    return state.reader is Reader.CONTRACT or settings.interval_seconds is not None


def silent_after_seconds(state: ProgressState, limit: StepLimit) -> float:
    """How long without a line of any kind a job has fallen silent rather than talking on without progress: twice the
    95% quantile of its intervals between advancing steps (a job that talks through a wedge logs at its own cadence),
    at least a minute of delivery, never more than its step limit. A job that printed its step once more and then
    fell silent (the same step again just before an unannounced save) is silent a cadence before its step limit has
    run from the advance, not a livelock: judged by the step limit alone, it was stopped in that window (a tag-rule job
    of the demo logging every 2 min, 5 min into its first evaluation)."""
    talking = max(SILENT_AFTER_INTERVALS * quantile_seconds(state.intervals), DELIVERY_SECONDS)
    return min(limit.seconds, talking)


def phase_allowance_seconds(
    expect_seconds: float | None, settings: ProgressSettings, learned_seconds: float | None = None
) -> float:
    """How long an announced phase may run: its expectation plus the margin; with none, INTERVAL_FACTOR x the longest
    the same phase took before (`learned_seconds`), or the default phase minutes the first time; at least the floor
    more than either."""
    if expect_seconds is None:
        if learned_seconds is None:
            return settings.phase_minutes * 60.0
        return max(settings.interval_factor * learned_seconds, learned_seconds + _FLOOR_SECONDS)
    return max(expect_seconds * (1 + settings.phase_margin_percent / 100), expect_seconds + _FLOOR_SECONDS)


def judge_progress(
    state: ProgressState,
    settings: ProgressSettings,
    now: datetime,
    *,
    fixed_minutes: float,
    training_since: datetime | None,
    newest_line: datetime | None = None,
    grace_end: datetime | None = None,
) -> ProgressJudgement | None:
    """The job's progress verdict now, or None when the log-silence rules judge it: it reports no progress, or it
    has fallen silent outside an announced phase without promising to announce every phase (`promises_phases`).
    `newest_line`: when the job last logged anything. `grace_end`: the end of its startup grace; no step limit nor
    start cutoff counts from before it (a first checkpoint load after the start line or step 0), as no log silence
    does (stalls.silence_clock_start): a job silent from its start is stopped no sooner than grace + limit."""
    if state.last_step is None or state.advanced_at is None:
        return _judge_start(state, settings, now, training_since, grace_end)
    limit = progress_limit(state, settings, fixed_minutes, state.started_at or training_since)
    in_phase = state.phase is not None and state.phase.began >= state.advanced_at
    silent = newest_line is not None and (now - newest_line).total_seconds() >= silent_after_seconds(state, limit)
    # A job that does not promise its phases: the log-silence rules judge its silent pauses, and its talk without
    # progress only once it has shown a few intervals (before, the fixed limit may be shorter than its steps' interval).
    unlearned = len(state.intervals) < EARLY_INTERVALS
    if (silent or unlearned) and not in_phase and not promises_phases(state, settings):
        return None
    announced_end = state.quiet_since or state.advanced_at
    quiet_since = max(announced_end, grace_end) if grace_end is not None else announced_end
    step_deadline = quiet_since + timedelta(seconds=limit.seconds)
    quiet = format_duration(now - state.advanced_at)
    last = f"the last, step {state.last_step}, came at {_at(state.advanced_at)}"
    if quiet_since > announced_end:
        last += f", and the limit counts from the end of its startup grace, at {_at(quiet_since)}"
    elif quiet_since > state.advanced_at:
        last += f", and the limit counts from the end of its last announced phase, at {_at(quiet_since)}"
    phase = state.phase
    if phase is not None:
        learned = state.longest_phase_seconds(phase.name)
        allowance = phase_allowance_seconds(phase.expect_seconds, settings, learned)
        phase_deadline = phase.began + timedelta(seconds=allowance)
        # No step since the phase began: its allowance alone judges it. Steps inside it (an asynchronous save): the
        # later of the two.
        if in_phase or phase_deadline > step_deadline:
            stalled = now >= phase_deadline
            reason = (
                f"the phase {phase.name!r} announced at {_at(phase.began)} has run "
                f"{format_duration(now - phase.began)}, "
                f"{'past' if stalled else 'within'} its allowance of {_span(allowance)}: "
                f"{_expected(phase.expect_seconds, settings, learned)}. No step has advanced for {quiet}: {last}"
            )
            return ProgressJudgement(ProgressCheck.PHASE, phase_deadline, stalled, reason)
    stalled = now >= step_deadline
    reason = (
        f"no advancing step for {quiet}, {'past' if stalled else 'within'} the job's step limit of {limit.reason}. "
        f"Lines that do not advance the step are no progress; {last}"
    )
    return ProgressJudgement(ProgressCheck.STEP, step_deadline, stalled, reason)


def _judge_start(
    state: ProgressState,
    settings: ProgressSettings,
    now: datetime,
    training_since: datetime | None,
    grace_end: datetime | None,
) -> ProgressJudgement | None:
    if state.started_at is not None:
        since, what = state.started_at, f"its start marker at {_at(state.started_at)}"
    elif settings.pattern and settings.start_seconds is not None and training_since is not None:
        since, what = training_since, f"training started at {_at(training_since)}, as its progress-pattern tag declares"
    else:
        return None
    if settings.start_seconds is not None:
        cutoff, source = float(settings.start_seconds), "set by its progress-start-seconds tag"
    else:
        cutoff, source = settings.start_minutes * 60.0, "the default"
    deadline = max(since, grace_end or since) + timedelta(seconds=cutoff)
    if state.phase is not None:  # a phase announced before the first step: a checkpoint load
        deadline = max(
            deadline,
            state.phase.began + timedelta(seconds=phase_allowance_seconds(state.phase.expect_seconds, settings)),
        )
    stalled = now >= deadline
    reason = (
        f"no first step {format_duration(now - since)} after {what}, "
        f"{'past' if stalled else 'within'} the start cutoff of {_span(cutoff)}, {source}"
    )
    if grace_end is not None and grace_end > since:
        reason += f", counted from the end of its startup grace at {_at(grace_end)}"
    return ProgressJudgement(ProgressCheck.START, deadline, stalled, reason)


def _expected(expect_seconds: float | None, settings: ProgressSettings, learned_seconds: float | None = None) -> str:
    if expect_seconds is None and learned_seconds is not None:
        return (
            f"it announced no duration; the longest this phase took before was {_span(learned_seconds)}, so it is "
            f"given {settings.interval_factor} times that, at least {PROGRESS_FLOOR_MINUTES:g} min more"
        )
    if expect_seconds is None:
        return f"it announced no duration, so it is given the default of {settings.phase_minutes} min"
    margin = settings.phase_margin_percent
    return f"{_span(expect_seconds)} expected, plus a {margin}% margin and at least {PROGRESS_FLOOR_MINUTES:g} min"


def _span(seconds: float) -> str:
    return format_duration(timedelta(seconds=seconds))


def _at(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")
