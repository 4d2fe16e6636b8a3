"""The stall rules of a job that reports progress (domain/progress_watch.py, domain/progress_limits.py): each scenario
feeds real lines through the readers, then judges at given moments."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from trainguard.domain.policy import TagKeys
from trainguard.domain.progress_limits import (
    EARLY_INTERVALS,
    PROGRESS_FLOOR_MINUTES,
    ProgressCheck,
    ProgressJudgement,
    judge_progress,
    progress_limit,
)
from trainguard.domain.progress_lines import read_progress_line
from trainguard.domain.progress_rule import compile_template
from trainguard.domain.progress_settings import ProgressSettings, read_progress_settings
from trainguard.domain.progress_watch import MAX_INTERVALS, ProgressState, advance, with_lines

T0 = datetime(2026, 12, 6, 8, 0, tzinfo=UTC)
FIXED = 30.0


def feed(lines: list[tuple[float, str]], state: ProgressState | None = None, pattern: str = "") -> ProgressState:
    rule = compile_template(pattern) if pattern else None
    assert not isinstance(rule, str)
    state = state or ProgressState()
    for seconds, line in lines:
        state = advance(state, read_progress_line(line, rule), T0 + timedelta(seconds=seconds))
    return state


def steps(first: int, count: int, every: float, start: float = 0.0, fmt: str = "trainguard:progress step={}") -> list:
    return [(start + i * every, fmt.format(first + i)) for i in range(count)]


CHATTY = steps(1, 60, 10.0)  # a step every 10 s for 10 min: the last, step 60, at 590 s
LAST = 590.0


@dataclass(frozen=True)
class Case:
    name: str
    lines: list[tuple[float, str]]
    at: float  # seconds after T0 when judged
    stalled: bool
    check: ProgressCheck | None
    settings: ProgressSettings = field(default_factory=ProgressSettings)
    training_since: datetime | None = None


FLOOR = PROGRESS_FLOOR_MINUTES
# A Megatron save of 2 min (begin and end), then steps, then the next save begins at LAST + 500.
SAVED_ONCE_THEN_SAVING = [
    *CHATTY,
    (LAST + 1, "saving checkpoint at iteration      60 to /ckpt in torch_dist format"),
    (LAST + 121, "  successfully saved checkpoint from iteration      60 to /ckpt [ t 1/1, p 1/1 ]"),
    *steps(61, 30, 10.0, start=LAST + 130),
    (LAST + 500, "saving checkpoint at iteration      90 to /ckpt in torch_dist format"),
]
CASES = [
    Case("chatty job hung: within the floor", CHATTY, LAST + FLOOR * 60 - 1, False, ProgressCheck.STEP),
    Case(
        "chatty job hung: stopped at the 2 min floor",
        CHATTY,
        LAST + FLOOR * 60,
        True,
        ProgressCheck.STEP,
    ),
    *(
        Case(
            f"a heartbeat is no progress: {beat}",
            CHATTY + [(LAST + 10 * i, beat) for i in range(1, 60)],
            LAST + FLOOR * 60 + 1,
            True,
            ProgressCheck.STEP,
        )
        for beat in ("trainguard:progress step=60", "heartbeat: phase=training alive")
    ),
    Case(
        "an announced 10 min save, within expect x margin",
        [*CHATTY, (LAST + 1, "trainguard:phase begin=checkpoint expect=600")],
        LAST + 1 + 899,
        False,
        ProgressCheck.PHASE,
    ),
    Case(
        "an announced 10 min save, over expect x margin",
        [*CHATTY, (LAST + 1, "trainguard:phase begin=checkpoint expect=600")],
        LAST + 1 + 900,
        True,
        ProgressCheck.PHASE,
    ),
    Case(
        "a short announced phase gets the floor beyond its expectation",
        [*CHATTY, (LAST + 1, "trainguard:phase begin=eval expect=20")],
        LAST + 1 + 20 + FLOOR * 60 - 1,
        False,
        ProgressCheck.PHASE,
    ),
    Case(
        "a phase with no expectation gets the default phase minutes",
        [*CHATTY, (LAST + 1, "saving checkpoint at iteration      60 to /ckpt in torch_dist format")],
        LAST + 1 + 59 * 60,
        False,
        ProgressCheck.PHASE,
    ),
    Case(
        "after the phase ends, the step limit judges again",
        [
            *CHATTY,
            (LAST + 1, "trainguard:phase begin=checkpoint expect=600"),
            (LAST + 500, "trainguard:phase end=checkpoint"),
            *steps(61, 30, 10.0, start=LAST + 510),
        ],
        LAST + 510 + 290 + FLOOR * 60,
        True,
        ProgressCheck.STEP,
    ),
    Case(
        "async save: steps continue inside an open phase",
        [*CHATTY, (LAST + 1, "trainguard:phase begin=checkpoint expect=60"), *steps(61, 120, 10.0, start=LAST + 10)],
        LAST + 1200,
        False,
        ProgressCheck.STEP,
    ),
    Case(
        "no first step by the default start cutoff",
        [(0, "trainguard:start"), (60, "loading data")],
        30 * 60,
        True,
        ProgressCheck.START,
    ),
    Case(
        "the first step may come until the cutoff", [(0, "trainguard:start")], 30 * 60 - 1, False, ProgressCheck.START
    ),
    Case(
        "the start cutoff of the job's tag",
        [(0, "[before the start of training step] datetime: 2026-12-06 08:00:00")],
        600,
        True,
        ProgressCheck.START,
        ProgressSettings(start_seconds=600),
    ),
    Case(
        "a tag rule declares the job reports: the cutoff counts from training's start",
        [(60, "loading data")],
        600,
        True,
        ProgressCheck.START,
        ProgressSettings(start_seconds=600, pattern="iteration @step lm loss"),
        T0,
    ),
    Case("a job whose lines carry no progress: today's rules", [(0, "hello"), (10, "epoch 1")], 9999, False, None),
    Case(
        "Hugging Face Trainer's start marker makes no job wait for a step its lines never show",
        [(0, "***** Running training *****"), (10, "{'loss': 2.3, 'epoch': 0.1}")],
        9999,
        False,
        None,
    ),
    Case(
        "too few intervals: the fixed threshold on steps",
        steps(1, EARLY_INTERVALS, 10.0),
        10 * (EARLY_INTERVALS - 1) + FIXED * 60 - 1,
        False,
        ProgressCheck.STEP,
    ),
    Case(
        "a few intervals: 3 x the longest, before a quantile can be taken",
        steps(1, EARLY_INTERVALS + 1, 300.0),
        300 * EARLY_INTERVALS + 3 * 300,
        True,
        ProgressCheck.STEP,
    ),
    Case(
        "a few intervals: within 3 x the longest",
        steps(1, EARLY_INTERVALS + 1, 300.0),
        300 * EARLY_INTERVALS + 3 * 300 - 1,
        False,
        ProgressCheck.STEP,
    ),
    Case(
        "a phase with no expectation gets 3 x the longest it took before",
        SAVED_ONCE_THEN_SAVING,
        LAST + 500 + 3 * 120,
        True,
        ProgressCheck.PHASE,
    ),
    Case(
        "a phase with no expectation, within 3 x the longest it took before",
        SAVED_ONCE_THEN_SAVING,
        LAST + 500 + 3 * 120 - 1,
        False,
        ProgressCheck.PHASE,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_progress_rules(case: Case) -> None:
    state = feed(case.lines)
    now = T0 + timedelta(seconds=case.at)
    verdict = judge_progress(state, case.settings, now, fixed_minutes=FIXED, training_since=case.training_since)
    if case.check is None:
        assert verdict is None
        return
    assert verdict is not None
    assert (verdict.stalled, verdict.check) == (case.stalled, case.check), verdict.reason
    assert (verdict.over_limit_minutes(now) >= 0) == case.stalled


def test_a_chatty_hang_is_judged_on_its_own_interval_and_the_reason_says_so() -> None:
    state = feed(CHATTY)
    limit = progress_limit(state, ProgressSettings(), FIXED)
    assert limit.seconds == FLOOR * 60  # 3 x 10 s and 1.5 x 10 s are under the floor
    verdict = judge_progress(
        state, ProgressSettings(), T0 + timedelta(minutes=20), fixed_minutes=FIXED, training_since=T0
    )
    assert verdict is not None and verdict.stalled
    assert "step 60" in verdict.reason and "2026-12-06 08:09:50 UTC" in verdict.reason
    assert "2 min" in verdict.reason and "10 s" in verdict.reason and "the floor" in verdict.reason


def test_a_slow_job_learns_a_limit_above_the_floor() -> None:
    state = feed(steps(1, 40, 120.0))
    limit = progress_limit(state, ProgressSettings(), FIXED)
    assert limit.seconds == 360.0  # 3 x 120 s
    assert progress_limit(state, ProgressSettings(interval_factor=5), FIXED).seconds == 600.0


def test_the_longest_pause_the_job_has_been_through_is_not_a_hang_the_second_time() -> None:
    lines = [*steps(1, 40, 10.0), (390 + 1200, "trainguard:progress step=41"), *steps(42, 20, 10.0, start=1600)]
    assert progress_limit(feed(lines), ProgressSettings(), FIXED).seconds == 1.5 * 1200


def test_an_interval_with_an_announced_phase_inside_is_not_learned() -> None:
    lines = [
        *steps(1, 40, 10.0),
        (395, "trainguard:phase begin=checkpoint expect=600"),
        (995, "trainguard:phase end=checkpoint"),
        (1000, "trainguard:progress step=41"),
    ]
    state = feed(lines)
    assert state.longest_seconds == 10.0 and max(state.intervals) == 10.0


def test_a_restart_from_a_checkpoint_forgets_the_learned_interval() -> None:
    state = feed([*CHATTY, (LAST + 600, "trainguard:progress step=20")])
    assert (state.last_step, state.intervals, state.longest_seconds) == (20, (), 0.0)
    assert progress_limit(state, ProgressSettings(), FIXED).seconds == FIXED * 60


def test_a_start_marker_forgets_the_learned_interval() -> None:
    state = feed([*CHATTY, (LAST + 600, "trainguard:start")])
    assert (state.last_step, state.intervals, state.started_at) == (None, (), T0 + timedelta(seconds=LAST + 600))


def test_another_hosts_line_delivered_late_is_ignored() -> None:
    state = feed([*CHATTY, (LAST - 300, "trainguard:progress step=30")])
    assert state == feed(CHATTY)


def test_the_sample_of_intervals_is_bounded() -> None:
    state = feed(steps(1, 1000, 3.0))
    assert len(state.intervals) == MAX_INTERVALS


def test_the_state_with_its_pace_and_losses_stays_under_a_kilobyte() -> None:
    """Noisy step times and losses with all their digits: the pace's and the loss's samples are bounded too."""
    rng = random.Random(7)
    at, lines = T0, []
    for step in range(1, 2001):
        at += timedelta(seconds=3.0 * rng.lognormvariate(0, 0.2))
        lines.append((at, f"trainguard:progress step={step} loss={2 + rng.random()!r}"))
    state = with_lines(ProgressState(), lines, None)
    assert state.pace.baseline_seconds is not None and state.loss.median is not None
    assert len(json.dumps(state.to_json())) < 1024


def test_a_relaunch_is_a_new_job_and_learns_from_nothing() -> None:
    """A relaunch has a new name (domain/naming.py), so a new watch entry: an empty state, no verdict of its own."""
    verdict = judge_progress(ProgressState(), ProgressSettings(), T0, fixed_minutes=FIXED, training_since=T0)
    assert verdict is None


def test_the_state_survives_its_stored_form_and_garbage_reads_as_empty() -> None:
    state = feed([*CHATTY, (LAST + 1, "trainguard:phase begin=checkpoint expect=600")])
    assert ProgressState.from_json(json.loads(json.dumps(state.to_json()))) == state
    garbage_values: tuple[object, ...] = (None, [], "x", {"step": True, "intervals": ["a"], "phase": {"name": 3}})
    for garbage in (*garbage_values, {"reader": "nope"}):
        assert ProgressState.from_json(garbage) == ProgressState()


def test_settings_from_tags_with_bounded_readers() -> None:
    keys = TagKeys()
    tags = {
        "trainguard:progress-interval-factor": "5",
        "trainguard:progress-phase-margin-percent": "100",
        "trainguard:progress-phase-minutes": "soon",
        "trainguard:progress-start-seconds": "900",
        "trainguard:progress-pattern": "iteration @step lm loss: @loss",
    }
    settings = read_progress_settings(tags, ProgressSettings(), keys)
    assert (settings.interval_factor, settings.phase_margin_percent, settings.phase_minutes) == (5, 100, 60)
    assert (settings.start_seconds, settings.pattern) == (900, "iteration @step lm loss: @loss")
    assert [problem.key for problem in settings.problems] == ["trainguard:progress-phase-minutes"]
    assert ProgressSettings.from_json(json.loads(json.dumps(settings.to_json()))) == ProgressSettings(
        5, 100, 60, 30, None, 900, "iteration @step lm loss: @loss"
    )


# A Megatron-LM job's step lines (tests/fixtures/progress_lines/megatron.json's format): it announces its saves but
# not its evaluations, so a silent pause of it is left to the log-silence rules, where a contract job's is a hang.
MEGATRON = " iteration {:8d}/ 1000000 | consumed samples: 1024 | lm loss: 2.373574E+00 | loss scale: 1.0 |"
HEARTBEAT = "heartbeat: rank 0 alive, phase=training"


def judged(
    lines: list[tuple[float, str]], at: float, settings: ProgressSettings | None = None
) -> ProgressJudgement | None:
    state, newest = feed(lines), T0 + timedelta(seconds=max(seconds for seconds, _ in lines))
    now = T0 + timedelta(seconds=at)
    return judge_progress(
        state, settings or ProgressSettings(), now, fixed_minutes=FIXED, training_since=T0, newest_line=newest
    )


def test_a_silent_pause_of_a_job_that_announces_only_some_phases_is_left_to_the_log_silence_rules() -> None:
    ten_minutes_on = LAST + 600  # an evaluation Megatron does not announce: no line at all for 10 min
    assert judged(steps(1, 60, 10.0, fmt=MEGATRON), ten_minutes_on) is None
    contract = judged(CHATTY, ten_minutes_on)  # the contract asks for every phase: the same pause is a hang
    assert contract is not None and contract.stalled and contract.check is ProgressCheck.STEP


def test_lines_without_progress_are_judged_by_the_steps_whatever_the_reader() -> None:
    talking = [*steps(1, 60, 10.0, fmt=MEGATRON), *((LAST + 10 * n, HEARTBEAT) for n in range(1, 19))]
    verdict = judged(talking, LAST + 180)  # a heartbeat every 10 s, the step stuck for 3 min
    assert verdict is not None and verdict.stalled and verdict.check is ProgressCheck.STEP


def test_a_job_whose_owner_declared_its_interval_is_judged_by_its_steps_when_silent() -> None:
    pattern = ProgressSettings(interval_seconds=120)
    verdict = judged(steps(1, 60, 10.0, fmt=MEGATRON), LAST + 600, pattern)
    assert verdict is not None and verdict.stalled


def test_a_silent_pause_inside_an_announced_save_is_judged_by_the_phase_whatever_the_reader() -> None:
    save = "saving checkpoint at iteration      60 to /opt/ml/checkpoints in torch_dist format"
    verdict = judged([*steps(1, 60, 10.0, fmt=MEGATRON), (LAST + 1, save)], LAST + 1800)
    assert verdict is not None and verdict.check is ProgressCheck.PHASE and not verdict.stalled  # 60 min allowed


def test_a_step_printed_once_more_before_a_silent_pause_is_no_livelock() -> None:
    """The demo's tag-rule job logging every 2 min printed its step again just before an unannounced evaluation:
    judged by its step limit alone (6 min from the advance), it was stopped a minute before its silence reached it."""
    every = 120.0
    lines = steps(1, 30, every, fmt=MEGATRON)  # the last, step 30, at 3480 s
    advanced = lines[-1][0]
    once_more = [*lines, (advanced + every - 1, MEGATRON.format(30))]  # the same step, then nothing
    limit = 3 * every
    assert judged(once_more, advanced + limit + 30) is None  # silent for 4.5 min: the log-silence rules judge it
    talking = [*lines, *((advanced + 30 * n, HEARTBEAT) for n in range(1, 14))]  # a heartbeat every 30 s instead
    verdict = judged(talking, advanced + limit + 30)
    assert verdict is not None and verdict.stalled and verdict.check is ProgressCheck.STEP


def test_a_job_that_steps_less_often_than_the_fixed_limit_is_given_its_own_wait_before_its_rhythm_is_learned() -> None:
    every_40_min = steps(1, 3, 2400.0)  # two intervals of 40 min: too few to learn from
    limit = progress_limit(feed(every_40_min), ProgressSettings(), FIXED)
    assert limit.seconds == 1.5 * 2400 and "longest wait for a step" in limit.reason
    first = feed(steps(1, 1, 1.0, start=2400.0))  # its first step 40 min after training started
    assert progress_limit(first, ProgressSettings(), FIXED, T0).seconds == 1.5 * 2400
    assert progress_limit(first, ProgressSettings(), FIXED).seconds == FIXED * 60  # without the start: the fixed


def test_a_tag_rule_is_judged_on_its_first_step_only_when_it_declares_when() -> None:
    quiet = ProgressSettings(pattern="iter: @step train_loss: @loss")
    now = T0 + timedelta(minutes=45)
    assert judge_progress(ProgressState(), quiet, now, fixed_minutes=FIXED, training_since=T0) is None
    declared = ProgressSettings(pattern="iter: @step train_loss: @loss", start_seconds=1800)
    verdict = judge_progress(ProgressState(), declared, now, fixed_minutes=FIXED, training_since=T0)
    assert verdict is not None and verdict.stalled and verdict.check is ProgressCheck.START


def test_talk_without_progress_of_a_job_that_does_not_promise_its_phases_waits_for_its_rhythm() -> None:
    talking = [*steps(1, 3, 10.0, fmt=MEGATRON), *((30 + 10 * n, HEARTBEAT) for n in range(1, 60))]
    assert judged(talking, 30 + 10 * 59) is None  # 3 steps: too few to know a livelock from its rhythm
    contract = [*steps(1, 3, 10.0), *((30 + 10 * n, HEARTBEAT) for n in range(1, 60))]
    verdict = judged(contract, 30 + 10 * 59)
    assert verdict is not None and verdict.check is ProgressCheck.STEP


def test_a_phase_learns_its_length_from_its_end_or_the_next_step_and_goes_on_through_repeated_begins() -> None:
    saved = feed(
        [
            *CHATTY,
            (LAST + 1, "[Torch] Checkpoint global_step60 is about to be saved!"),
            (LAST + 95, "trainguard:progress step=61"),
        ]
    )
    assert saved.longest_phase_seconds("checkpoint") is None  # DeepSpeed prints no end: the next step is not one
    megatron = feed(
        [
            *CHATTY,
            (LAST + 1, "saving checkpoint at iteration      60 to /ckpt in torch_dist format"),
            (LAST + 95, "  successfully saved checkpoint from iteration      60 to /ckpt [ t 1/1, p 1/1 ]"),
        ]
    )
    assert megatron.longest_phase_seconds("checkpoint") == 94.0 and megatron.phase is None
    assert megatron.quiet_since == T0 + timedelta(seconds=LAST + 95)  # the step limit counts from the save's end
    evaluating = feed([*CHATTY, *[(LAST + 30 * k, f"Validation: iteration {k}/20") for k in range(1, 21)]])
    assert evaluating.phase is not None and evaluating.phase.name == "evaluation"
    assert evaluating.phase.began == T0 + timedelta(seconds=LAST + 30)  # the first of its lines, not the newest
    ended = feed([(LAST + 640, "  successfully saved checkpoint from iteration      60 to /ckpt")], evaluating)
    assert ended.longest_phase_seconds("evaluation") == 610.0  # NeMo saves after its validation: that end closes it
    assert ProgressState.from_json(json.loads(json.dumps(ended.to_json()))).phase_seconds == ended.phase_seconds


def test_a_hang_in_an_announced_phase_is_judged_by_the_phase_alone_however_long_the_step_limit() -> None:
    slow = steps(1, 6, 900.0)  # a step every 15 min: a step limit of 45 min
    hung = [*slow, (4501, "trainguard:phase begin=checkpoint expect=120")]
    allowance = 120 + FLOOR * 60  # 2 min expected, at least the floor more (50% of 2 min is less)
    before = judge_progress(feed(hung), ProgressSettings(), T0 + timedelta(seconds=4501 + allowance - 1), **JUDGE)
    after = judge_progress(feed(hung), ProgressSettings(), T0 + timedelta(seconds=4501 + allowance), **JUDGE)
    assert before is not None and not before.stalled and before.check is ProgressCheck.PHASE
    assert after is not None and after.stalled and "'checkpoint'" in after.reason


def test_the_step_limit_counts_from_the_end_of_an_announced_phase() -> None:
    saved = [
        *CHATTY,
        (LAST + 1, "trainguard:phase begin=checkpoint expect=600"),
        (LAST + 500, "trainguard:phase end=checkpoint"),
    ]
    limit = FLOOR * 60  # a step every 10 s: the floor
    within = judge_progress(feed(saved), ProgressSettings(), T0 + timedelta(seconds=LAST + 500 + limit - 1), **JUDGE)
    past = judge_progress(feed(saved), ProgressSettings(), T0 + timedelta(seconds=LAST + 500 + limit), **JUDGE)
    assert within is not None and not within.stalled
    assert past is not None and past.stalled and "end of its last announced phase" in past.reason


JUDGE = {"fixed_minutes": FIXED, "training_since": T0}


def test_a_first_load_after_a_step_line_at_the_start_is_given_the_startup_grace_and_then_the_whole_limit() -> None:
    """A contract job prints its start and step 0 as training starts, then loads its checkpoint in silence: its step
    limit counts from the end of the startup grace, as a log silence does (stalls.silence_clock_start). Found by the
    chaos suite on the fleet's world: a healthy 39-minute first load was stopped at 31 minutes."""
    started = feed([(0.0, "trainguard:start"), (1.0, "trainguard:progress step=0")])
    grace_end = T0 + timedelta(minutes=20)
    judge = {**JUDGE, "grace_end": grace_end}
    within = judge_progress(started, ProgressSettings(), grace_end + timedelta(minutes=FIXED, seconds=-1), **judge)
    past = judge_progress(started, ProgressSettings(), grace_end + timedelta(minutes=FIXED), **judge)
    assert within is not None and not within.stalled
    assert past is not None and past.stalled and "end of its startup grace" in past.reason
    without_grace = judge_progress(started, ProgressSettings(), T0 + timedelta(minutes=FIXED, seconds=2), **JUDGE)
    assert without_grace is not None and without_grace.stalled  # the rule alone, as before the grace was passed


def test_a_first_load_after_the_start_line_is_given_the_startup_grace_before_the_start_cutoff() -> None:
    """The same for a job that prints its start line and loads before step 0: the start cutoff (30 min by default)
    counts from the end of the startup grace."""
    started = feed([(0.0, "trainguard:start")])
    grace_end = T0 + timedelta(minutes=20)
    cutoff = timedelta(minutes=ProgressSettings().start_minutes)
    within = judge_progress(
        started, ProgressSettings(), grace_end + cutoff - timedelta(seconds=1), **JUDGE, grace_end=grace_end
    )
    past = judge_progress(started, ProgressSettings(), grace_end + cutoff, **JUDGE, grace_end=grace_end)
    assert within is not None and within.check is ProgressCheck.START and not within.stalled
    assert past is not None and past.stalled and "end of its startup grace" in past.reason
