"""`trainguard explain --log-lines FILE` (issue 27, item 1), end to end: one answer per input line, in order, in
words or as JSON Lines; a carriage return stays inside its line; the job's tag rule applies with --tags."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from trainguard_cli.log_lines import line_time
from trainguard_cli.main import main

ROOT = Path(__file__).parents[2]
LOG = "\n".join(
    [
        "2026-12-06 00:03:07,541 rank0 INFO no checkpoint in /tmp/ckpt: starting from step 0",  # examples/train.py
        "[titan] INFO - step: 14  loss:  3.24405  grad_norm:  0.8319",
        "\r 17%|█▋ | 5/30 [00:00<00:00, 58.85it/s]\r        \r{'loss': '3.9', 'epoch': '0.3125'}",
        "trainguard:phase begin=checkpoint expect=600",
        "heartbeat phase=training",
        "trainguard:progress step=12 loss=nan",
        "trainguard:phase end=checkpoint",
        "custom: epoch 2 batch 40 of 100 loss 0.75",
    ]
)
KEYS = {"line", "step", "loss", "loss_not_finite", "phase", "phase_name", "expect_seconds", "start", "source", "batch"}


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def json_lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def test_json_gives_one_object_per_line_in_order(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text(LOG + "\n", encoding="utf-8")
    code, out, _ = run(capsys, "explain", "--log-lines", str(log), "--json")
    rows = json_lines(out)
    assert code == 0 and len(rows) == len(LOG.split("\n")) and all(set(row) == KEYS for row in rows)
    assert [row["line"] for row in rows] == list(range(1, len(rows) + 1))
    assert [row["step"] for row in rows] == [None, 14, None, None, None, 12, None, None]
    assert rows[0]["start"] is True and rows[0]["source"] == "examples_train"
    assert (rows[1]["loss"], rows[2]["loss"], rows[2]["source"]) == (3.24405, 3.9, "huggingface")
    assert (rows[3]["phase"], rows[3]["phase_name"], rows[3]["expect_seconds"]) == ("begin", "checkpoint", 600)
    assert (rows[4]["source"], rows[4]["phase"]) == (None, None)  # a heartbeat is no progress
    assert (rows[5]["loss"], rows[5]["loss_not_finite"]) == (None, "nan")  # JSON has no NaN
    assert (rows[6]["phase"], rows[7]["source"]) == ("end", None)
    assert [row["batch"] for row in rows] == [None] * 8  # none of these lines prints its batch size


def test_text_gives_one_short_line_per_input_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text(LOG, encoding="utf-8")
    code, out, _ = run(capsys, "explain", "--log-lines", str(log))
    said = out.splitlines()
    assert code == 0 and len(said) == len(LOG.split("\n"))
    assert said[1] == "2: step 14, loss 3.24405 (torchtitan)"
    assert said[3] == "4: phase checkpoint begins, expected to take 600 s (contract)"
    assert said[4] == "5: nothing" and said[5] == "6: step 12, loss nan (contract)"


def test_the_tag_rule_applies_and_its_problems_are_told(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    log, tags = tmp_path / "job.log", tmp_path / "tags.json"
    log.write_text(LOG, encoding="utf-8")
    rule = [
        {"Key": "trainguard:progress-pattern", "Value": "batch @step of @any loss @loss"},
        {"Key": "trainguard:progress-start-seconds", "Value": "soon"},
    ]
    tags.write_text(json.dumps({"Tags": rule}), encoding="utf-8")
    code, out, err = run(capsys, "explain", "--log-lines", str(log), "--tags", str(tags), "--json")
    last = json_lines(out)[-1]
    assert code == 0 and (last["step"], last["loss"], last["source"]) == (40, 0.75, "tag_rule")
    assert "trainguard:progress-start-seconds='soon' could not be read" in err
    assert "the job's progress rule: 'batch @step of @any loss @loss'" in err


def test_an_unsafe_pattern_is_refused_and_the_lines_are_still_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log, tags = tmp_path / "job.log", tmp_path / "tags.json"
    log.write_text(LOG, encoding="utf-8")
    tags.write_text(json.dumps({"Tags": [{"Key": "trainguard:progress-pattern", "Value": "(a+)+ @step"}]}))
    code, out, err = run(capsys, "explain", "--log-lines", str(log), "--tags", str(tags), "--json")
    assert code == 0 and json_lines(out)[1]["source"] == "torchtitan"
    assert "could not be read: a SageMaker tag value holds only" in err and "using no progress rule" in err


def test_an_empty_log_answers_nothing_and_a_missing_one_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    empty = tmp_path / "empty.log"
    empty.write_text("", encoding="utf-8")
    assert run(capsys, "explain", "--log-lines", str(empty), "--json") == (0, "", "")
    code, out, err = run(capsys, "explain", "--log-lines", str(tmp_path / "none.log"))
    assert (code, out) == (2, "") and "no such file" in err


def test_log_lines_is_one_of_the_exclusive_sources(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["explain", "--log-lines", "a.log", "--reason", "x"])
    assert exited.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


def test_standard_input_is_read_with_its_carriage_returns_inside_their_lines() -> None:
    """Through a real process: `-` reads standard input as bytes, so "\\r" splits no line."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(ROOT / part) for part in ("cli", "lambdas"))}
    done = subprocess.run(
        [sys.executable, "-m", "trainguard_cli.main", "explain", "--log-lines", "-", "--json"],
        input=LOG.encode("utf-8"),
        capture_output=True,
        check=False,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    rows = json_lines(done.stdout.decode("utf-8"))
    assert len(rows) == len(LOG.split("\n")) and rows[2]["loss"] == 3.9


@pytest.mark.parametrize(
    ("line", "at"),
    [
        ("2026-12-06T08:00:01.5Z trainguard:progress step=1", datetime(2026, 12, 6, 8, 0, 1, 500000, tzinfo=UTC)),
        ("2026-12-06T10:00:01+02:00 x", datetime(2026, 12, 6, 8, 0, 1, tzinfo=UTC)),
        ("2026-12-06 08:00:01,541 rank0 INFO step=1", datetime(2026, 12, 6, 8, 0, 1, 541000, tzinfo=UTC)),
        (" [2026-12-06 08:00:01] iteration        1/ 1000 |", datetime(2026, 12, 6, 8, 0, 1, tzinfo=UTC)),
        ("step 1 at 08:00:01", None),
        ("2026-13-45 08:00:01 no such day", None),
        ("x" * 70 + " 2026-12-06 08:00:01 too far from the start", None),
    ],
)
def test_a_lines_own_time_is_read_near_its_start(line: str, at: datetime | None) -> None:
    assert line_time(line) == at


def timed_log(gaps: list[float], losses: list[float] | None = None) -> str:
    at, lines = datetime(2026, 12, 6, 8, 0, tzinfo=UTC), []
    for index in range(len(gaps) + 1):
        loss = losses[index] if losses and index < len(losses) else 2.0
        lines.append(f"{at:%Y-%m-%d %H:%M:%S},000 rank0 INFO trainguard:progress step={index + 1} loss={loss}")
        at += timedelta(seconds=gaps[index] if index < len(gaps) else 0)
    return "\n".join(lines) + "\n"


def test_what_the_pace_and_loss_rules_see_goes_to_standard_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "job.log"
    log.write_text(timed_log([10.0] * 120 + [18.0] * 80, [2.0] * 190 + [float("nan")] * 11), encoding="utf-8")
    code, out, err = run(capsys, "explain", "--log-lines", str(log))
    assert code == 0 and len(out.splitlines()) == 201
    # 10 min of 18-s steps after the 120th line: the 34th slow line ends the 10 minutes.
    assert "pace: a slowdown at line 155: its steps take 1.80 times as long as its baseline" in err
    assert "loss: a divergence at line 193: its loss has been bad in 3 reports in a row from step 191" in err


def test_a_steady_log_and_a_log_without_times_say_so(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text(timed_log([10.0] * 100), encoding="utf-8")
    _, _, err = run(capsys, "explain", "--log-lines", str(log))
    assert "pace: baseline 10 s a step, 10 s over the newest; no slowdown" in err and "loss: 101 reports" in err
    log.write_text("trainguard:progress step=1 loss=2\ntrainguard:progress step=2 loss=2\n", encoding="utf-8")
    _, _, err = run(capsys, "explain", "--log-lines", str(log))
    assert "the step lines give no time of their own, so the pace rule cannot be shown" in err


def test_the_loss_rule_forgets_its_bad_run_at_a_restart_as_the_subscription_does(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "job.log"
    steps = [(n, "2.0") for n in range(1, 11)] + [(11, "nan"), (12, "nan"), (5, "nan"), (13, "nan")]
    log.write_text("".join(f"trainguard:progress step={n} loss={v}\n" for n, v in steps), encoding="utf-8")
    _, _, err = run(capsys, "explain", "--log-lines", str(log))
    assert "loss: 14 reports, no divergence" in err  # the restart at step 5 began a new run of reports
