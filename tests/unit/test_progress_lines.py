"""Reading one log line for progress (issue 27, item 1): every line of tests/fixtures/progress_lines/ reads as its
fixture says, lines that look alike but are no progress read as nothing, and no line, however long or hostile, raises
or takes long."""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.regex_safety import GROWTH_FACTOR, LINEAR_GROWTH_LIMIT, cost_growth, unsafe_constructs
from trainguard.domain import progress_lines, progress_markers, progress_reading, progress_rule
from trainguard.domain.progress_lines import read_progress_line
from trainguard.domain.progress_markers import read_framework_line
from trainguard.domain.progress_reading import (
    MAX_LINE_CHARS,
    NOTHING,
    Phase,
    ProgressReading,
    Reader,
    not_finite_name,
    visible_text,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "progress_lines"
FIELDS = ("step", "loss", "phase", "phase_name", "expect_seconds", "start", "source")


def _fixture_cases() -> list[tuple[str, dict[str, Any]]]:
    cases = []
    for path in sorted(FIXTURES.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for number, case in enumerate(data["lines"]):
            cases.append((f"{path.stem}-{number}", {**case, "reader": data["reader"], "sources": data["sources"]}))
    return cases


CASES = _fixture_cases()


def expected_reading(case: dict[str, Any]) -> ProgressReading:
    expect = dict(case["expect"])
    loss = expect.get("loss")
    if loss is not None:  # "nan", "inf", "-inf" as strings: JSON holds no such number
        expect["loss"] = float(loss)
    if expect.get("expect_seconds") is not None:
        expect["expect_seconds"] = float(expect["expect_seconds"])
    if expect.get("phase") is not None:
        expect["phase"] = Phase(expect["phase"])
    source = expect.pop("source", case["reader"])
    return ProgressReading(**expect, source=Reader(source) if source is not None else None)


def same(read: ProgressReading, expected: ProgressReading) -> bool:
    """Field by field, a NaN loss equal to a NaN loss."""
    for name in FIELDS:
        got, want = getattr(read, name), getattr(expected, name)
        both_nan = isinstance(got, float) and isinstance(want, float) and math.isnan(got) and math.isnan(want)
        if not both_nan and (got != want or type(got) is not type(want)):
            return False
    return True


@pytest.mark.parametrize(("name", "case"), CASES, ids=[name for name, _ in CASES])
def test_every_fixture_line_reads_as_its_fixture_says(name: str, case: dict[str, Any]) -> None:
    read = read_progress_line(case["line"])
    assert same(read, expected_reading(case)), f"{name}: read {read}"


@pytest.mark.parametrize(("name", "case"), CASES, ids=[name for name, _ in CASES])
def test_every_fixture_line_names_its_source(name: str, case: dict[str, Any]) -> None:
    assert case["from"] in case["sources"], f"{name}: no source {case['from']!r}"
    assert isinstance(case["real"], bool)
    if not case["real"] and case["reader"] != "contract":
        assert case.get("note", "").startswith("constructed"), f"{name}: a constructed line must say so"


def test_the_fixtures_cover_every_reader_with_real_lines_and_with_lines_that_are_no_progress() -> None:
    readers = {case["reader"] for _, case in CASES}
    assert readers | {"tag_rule"} == {reader.value for reader in Reader}
    for reader in readers - {"contract"}:
        mine = [case for _, case in CASES if case["reader"] == reader]
        assert any(case["real"] for case in mine), f"{reader}: no real line"
        assert any(case["expect"].get("step") is not None or case["expect"].get("loss") is not None for case in mine)
    assert sum(1 for _, case in CASES if case["expect"].get("source", "x") is None) >= 10


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("2026-08-06 02:40:00 INFO heartbeat phase=training", "a heartbeat's phase is no progress"),
        ("phase=training step_seen=17 alive=true", "a heartbeat that repeats a step is no step line"),
        ("validate step: 15  loss:  3.1000", "torchtitan's validation line, without colours"),
        ("Sanity Checking DataLoader 0:  50%|█████     | 1/2 [00:00<00:00, 49.97it/s]", "Lightning's sanity check"),
        (" 17%|█▋        | 5/30 [00:00<00:00, 58.85it/s]", "a bare tqdm bar: Hugging Face's evaluation bar is alike"),
        ("{'eval_loss': 2.8, 'epoch': 1.0}", "an evaluation's dict"),
        ("checkpoint step=abc written to /tmp", "not a step number"),
        ("Epoch 3/10", "an epoch count"),
        ("trainguard:progresss step=3", "a misspelt marker"),
        ("", "an empty line"),
    ],
)
def test_lines_that_look_alike_but_are_no_progress_read_no_step(line: str, reason: str) -> None:
    assert read_progress_line(line).step is None, reason


def test_the_contract_wins_over_a_framework_line_and_a_tag_rule() -> None:
    rule = progress_rule.compile_template("iteration @step/")
    assert not isinstance(rule, str)
    line = " iteration 5/ 10 | lm loss: 1.0 | trainguard:progress step=7"
    assert read_progress_line(line, rule).step == 7
    assert read_progress_line(" iteration 5/ 10 |", rule).source == Reader.TAG_RULE
    assert read_progress_line(" iteration 5/ 10 |").source == Reader.MEGATRON


def test_a_progress_bar_line_is_read_as_a_terminal_shows_it() -> None:
    line = "\r 17%|█▋ | 5/30 [00:00]\r                \r{'loss': '3.9', 'epoch': '0.31'}\r\r  "
    assert visible_text(line) == "{'loss': '3.9', 'epoch': '0.31'}"
    assert read_progress_line(line).loss == 3.9
    assert visible_text("\x1b[31mstep: 3\x1b[39m") == "step: 3"
    assert len(visible_text("x" * 100_000)) == MAX_LINE_CHARS


@pytest.mark.parametrize(
    ("value", "name"),
    [(float("nan"), "nan"), (float("inf"), "inf"), (float("-inf"), "-inf"), (2.5, None), (None, None)],
)
def test_a_loss_json_cannot_hold_is_named(value: float | None, name: str | None) -> None:
    assert not_finite_name(value) == name


# --- Safety: by construction, and by the cost of long, hostile lines. ---


def _all_patterns() -> dict[str, re.Pattern[str]]:
    found: dict[str, re.Pattern[str]] = {}
    for module in (progress_lines, progress_markers, progress_reading, progress_rule):
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern):
                found[f"{module.__name__}.{name}"] = value
            elif isinstance(value, tuple):
                for index, item in enumerate(value):
                    items = item if isinstance(item, tuple) else (item,)
                    for inner in items:
                        if isinstance(inner, re.Pattern):
                            found[f"{module.__name__}.{name}[{index}]"] = inner
    return found


def test_no_pattern_can_backtrack_without_bound() -> None:
    patterns = _all_patterns()
    assert len(patterns) >= 25  # the walk above finds the tables too
    assert {name: bad for name, pattern in patterns.items() if (bad := unsafe_constructs(pattern))} == {}


HOSTILE = {
    "megatron": " iteration 1/ 2 |" * 400 + " lm loss: ",
    "nemo": "Training epoch 0, iteration 1/2 | global_step: " * 100,
    "torchtitan": "step: 1  loss: " * 400,
    "deepspeed": "step=1, skipped=" * 400,
    "huggingface": "{'loss': '1" * 400,
    "lightning": "Epoch 0: 1%|" + "█" * 4000,
    "checkpoint": "Epoch 0, global step 1: '" * 200,
    "numbers": "9" * 4000,
    "contract": "trainguard:progress " * 200,
    "spaces": " " * 4000,
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_the_cost_of_a_hostile_line_grows_linearly_up_to_the_cut(name: str) -> None:
    text = HOSTILE[name][:MAX_LINE_CHARS]

    def read_all(text: str) -> object:
        return read_framework_line(text), progress_lines.read_contract_line(text)

    growth = cost_growth(read_all, text)
    assert growth < LINEAR_GROWTH_LIMIT, f"{name}: {GROWTH_FACTOR}x the text cost {growth:.1f}x"


def test_a_very_long_line_is_read_in_a_bounded_time() -> None:
    line = ("step=1, skipped=" * 50_000) + "\r" + ("iteration 1/ " * 50_000)  # about 1.4 MB
    started = time.process_time()
    read_progress_line(line)
    assert time.process_time() - started < 2.0


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(max_size=600) | st.binary(max_size=600).map(lambda raw: raw.decode("latin-1")))
def test_no_line_raises(line: str) -> None:
    assert isinstance(read_progress_line(line), ProgressReading)


WORDS = ["step", "loss", "iteration", "trainguard:progress", "step=", "loss=", "nan", "inf", "|", ":", "/", "'"]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(WORDS) | st.integers(0, 10**20).map(str) | st.sampled_from([" ", "  ", "\r"])))
def test_lines_made_of_markers_never_raise_and_read_steps_as_integers(words: list[str]) -> None:
    read = read_progress_line("".join(words))
    assert read.step is None or (isinstance(read.step, int) and 0 <= read.step < 10**15)
    assert read == NOTHING or read.source is not None
