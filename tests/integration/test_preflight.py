"""`trainguard preflight` against the local stand-in (simulated SageMaker and Service Quotas)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from trainguard_cli.main import main
from trainguard_local.demo.acts import JOBS, launch
from trainguard_local.stand_in.local_aws import LocalAWS, local_aws

pytestmark = pytest.mark.slow


@pytest.fixture
def aws() -> Iterator[LocalAWS]:
    with local_aws() as stand_in:
        launch(stand_in, "llama-pretrain", JOBS["llama-pretrain"])  # 4 x ml.p5.48xlarge in use
        yield stand_in


def preflight(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = main(["preflight", "--json", *args])
    return code, json.loads(capsys.readouterr().out)


def test_a_launch_that_fits(aws: LocalAWS, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = preflight(capsys, "--instance-type", "ml.p5.48xlarge", "--instance-count", "4")
    assert code == 0 and report["fits"]
    [type_check] = [c for c in report["checks"] if c["quota_name"] == "ml.p5.48xlarge for training job usage"]
    assert (type_check["in_use"], type_check["needed"], type_check["value"]) == (4, 8, 8)


def test_what_blocks_is_named_and_nothing_is_requested_without_the_flag(
    aws: LocalAWS, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = preflight(
        capsys, "--instance-type", "ml.p4d.24xlarge", "--instance-count", "2", "--max-runtime", "500000"
    )
    assert code == 1 and not report["fits"]
    blocking = {c["quota_name"] for c in report["checks"] if c["blocks"]}
    assert blocking == {"ml.p4d.24xlarge for training job usage", "Longest run time for a training job"}
    assert aws.quotas.requests() == [] and report["requests"] == []


def test_request_files_what_the_launch_needs(aws: LocalAWS, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = preflight(capsys, "--instance-type", "ml.p4d.24xlarge", "--instance-count", "2", "--request")
    assert code == 1
    [request] = report["requests"]
    assert request["quota_name"] == "ml.p4d.24xlarge for training job usage"
    assert request["desired_value"] == 2 and request["status"] == "PENDING" and request["requested"]
    _, again = preflight(capsys, "--instance-type", "ml.p4d.24xlarge", "--instance-count", "2", "--request")
    assert again["requests"][0]["requested"] is False  # the open request is found, not filed twice
    assert len(aws.quotas.requests()) == 1


def test_text_output(aws: LocalAWS, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["preflight", "--instance-type", "ml.p4d.24xlarge", "--instance-count", "2"])
    out = capsys.readouterr().out
    assert code == 1
    assert "BLOCKS ml.p4d.24xlarge for training job usage" in out and "A quota blocks this launch." in out


def test_a_bad_count_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["preflight", "--instance-type", "ml.p4d.24xlarge", "--instance-count", "0"]) == 2
    assert "instance-count" in capsys.readouterr().err


def test_a_request_the_ceiling_would_cap_is_not_filed_and_says_why(
    aws: LocalAWS, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--instance-type", "ml.p4d.24xlarge", "--instance-count", "100", "--request", "--ceiling", "64"]
    code, report = preflight(capsys, *argv)
    [type_request] = [r for r in report["requests"] if r["quota_name"] == "ml.p4d.24xlarge for training job usage"]
    assert code == 1 and type_request["requested"] is False
    assert "could not unblock it, so none was filed; pass --ceiling 100" in type_request["reason"]
    assert aws.quotas.requests() == []


def test_a_long_run_time_is_written_as_people_write_numbers(aws: LocalAWS, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--instance-type", "ml.p5.48xlarge", "--instance-count", "1", "--max-runtime", "2000000"]
    main(["preflight", *argv])
    out = capsys.readouterr().out
    assert "MaxRuntimeInSeconds 2,000,000" in out and "e+0" not in out
