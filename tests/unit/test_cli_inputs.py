"""Every command refuses bad input before it starts work: one line on stderr that names the problem, and the exit
code of the convention (cli/trainguard_cli/inputs.py). No AWS call is made here: each case fails first."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import pytest

from trainguard_cli.inputs import EXIT_UNUSABLE
from trainguard_cli.main import _parser, main

STATE_CHANGE = Path(__file__).parents[1] / "fixtures" / "events" / "sagemaker_training_job_state_change.awsdocs.json"
CAPACITY_ERROR = "CapacityError: Unable to provision requested ML compute capacity."
LONG_REASON = "AlgorithmError: ExecuteUserScriptError: " + "Traceback line\n" * 14_000  # about 210 KB

# (arguments, text the error must contain); {tmp} is a fresh folder, {bad_json} a file that is not JSON.
BAD_INPUT = [
    (["simulate", "--png", "/nonexistent/dir/x.png"], "there is no folder /nonexistent/dir"),
    (["simulate", "--html", "{tmp}"], "is a folder; give a file name"),
    (["simulate", "--jobs", "0"], "0 is below 1"),
    (["simulate", "--jobs", "many"], "'many' is not a whole number"),
    (["simulate", "--hours", "-3"], "-3 is not above 0"),
    (["preflight", "--instance-type", "banana", "--instance-count", "1"], "banana is not a SageMaker training"),
    (["preflight", "--instance-type", "ml.p4d.24xlarg", "--instance-count", "1"], "did you mean ml.p4d.24xlarge"),
    (["preflight", "--instance-type", "ml.p4d.24xlarge", "--instance-count", "0"], "--instance-count must be 1"),
    (["preflight", "--instance-type", "ml.p4d.24xlarge", "--instance-count", "1", "--max-runtime", "0"], "1 second"),
    (["explain", "--reason-file", "{tmp}/missing.txt"], "missing.txt: no such file"),
    (["explain", "--event", "{bad_json}"], "not JSON"),
    (["explain", "--reason", "x", "--api-error", "y"], "not allowed with argument"),
    (["status", "--table", "t", "--account", "111122223333"], "--account and --region name a spoke together"),
    (["opt-in", "some-job", "--max-retries", "99"], "is not a value trainguard reads; nothing was tagged"),
]


@pytest.mark.parametrize(("argv", "said"), BAD_INPUT, ids=[" ".join(a)[:60] for a, _ in BAD_INPUT])
def test_bad_input_is_refused_before_any_work(
    argv: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.json").write_text("{nope")
    argv = [a.format(tmp=tmp_path, bad_json=tmp_path / "bad.json") for a in argv]
    assert _exit_code(argv) == EXIT_UNUSABLE
    out, err = capsys.readouterr()
    assert said in err and out == ""
    assert err.strip().splitlines()[-1].startswith(f"trainguard {argv[0]}:"), err  # one line, not a traceback


def test_a_region_named_only_by_aws_region_is_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from trainguard_cli.inputs import UnusableInput, aws_session

    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    assert aws_session().region_name == "eu-west-1"
    monkeypatch.delenv("AWS_REGION")
    with pytest.raises(UnusableInput, match="set AWS_DEFAULT_REGION or AWS_REGION"):
        aws_session()


def test_explain_reads_a_reason_too_long_for_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "reason.txt"
    path.write_text(LONG_REASON)
    assert main(["explain", "--reason-file", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["words_written_by"] == "training-script"


@pytest.mark.parametrize(
    ("option", "text", "key", "read"),
    [
        ("--reason", CAPACITY_ERROR, "category", "capacity"),
        ("--reason-file", CAPACITY_ERROR, "category", "capacity"),
        (
            "--event",
            STATE_CHANGE.read_text(),
            "job_name",
            json.loads(STATE_CHANGE.read_text())["detail"]["TrainingJobName"],
        ),
    ],
)
def test_explain_reads_standard_input_for_a_dash(
    option: str, text: str, key: str, read: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert main(["explain", option, "-", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[key] == read


def test_explain_answers_in_words_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--reason", "CapacityError: Unable to provision requested ML compute capacity."]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "This failure: trainguard would relaunch it from its last checkpoint."
    assert lines[2].startswith("Why: ") and "Reading: capacity" in lines


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    assert _exit_code(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"trainguard {version('trainguard')}"


def test_every_option_of_every_command_says_what_it_is() -> None:
    missing = [f"{name} {action.dest}" for name, action in _options(_parser(), "trainguard") if not action.help]
    assert missing == []


def _options(parser: argparse.ArgumentParser, name: str) -> list[tuple[str, Any]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                found += _options(sub, f"{name} {sub_name}")
        elif not isinstance(action, argparse._HelpAction | argparse._VersionAction):
            found.append((name, action))
    return found


def _exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exit_:  # argparse refuses usage errors itself, with exit 2
        return int(exit_.code or 0)
