"""`trainguard preflight` against the local stand-in (simulated SageMaker and Service Quotas)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import load_fixture
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


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """No stand-in: an AWS call would go to a closed port on this machine and fail (botocore reads
    AWS_ENDPOINT_URL), so the input's error must come before any call."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")


# --describe-file: a job as DescribeTrainingJob gives it. The base is a real response's shape (the AWS ACK
# controller's fixture, tests/fixtures/describe_training_job), given the fields the test is about.
def describe_file(tmp_path: Path, **fields: Any) -> Path:
    job = load_fixture("describe_training_job/ack_fixture.stopping_describe.json") | fields
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    return path


P5_JOB = {"ResourceConfig": {"InstanceType": "ml.p5.48xlarge", "InstanceCount": 4, "VolumeSizeInGB": 100}}
WATCHDOG_OFF = {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "0"}
LONG_DDP_TIMEOUT = {"ddp_timeout": '"3600"', "epochs": "3"}  # as SageMaker's framework estimators send it: JSON


def test_a_described_jobs_environment_and_hyperparameters_give_the_watchdog_warnings(
    aws: LocalAWS, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = describe_file(tmp_path, **P5_JOB, Environment=WATCHDOG_OFF, HyperParameters=LONG_DDP_TIMEOUT)
    code, report = preflight(capsys, "--describe-file", str(path))
    assert code == 0 and report["fits"]  # a warning never blocks
    assert report["launch"]["instance_type"] == "ml.p5.48xlarge" and report["launch"]["instance_count"] == 4
    assert (
        report["described_job"]
        == load_fixture("describe_training_job/ack_fixture.stopping_describe.json")["TrainingJobName"]
    )
    off, timeout = report["warnings"]
    assert off.startswith("TORCH_NCCL_ASYNC_ERROR_HANDLING=0 switches off")
    assert timeout.startswith("ddp_timeout=3600 s (60 min) is not shorter than trainguard's stall limit (30 min)")


def test_the_warnings_in_text_and_from_standard_input(
    aws: LocalAWS, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = describe_file(tmp_path, **P5_JOB, Environment=WATCHDOG_OFF)
    monkeypatch.setattr("sys.stdin", io.StringIO(path.read_text()))
    code = main(["preflight", "--describe-file", "-", "--stall-minutes", "45"])
    out = capsys.readouterr().out
    assert code == 0
    assert "  WARNING TORCH_NCCL_ASYNC_ERROR_HANDLING=0 switches off" in out and "stall limit (45 min)" in out
    assert out.splitlines()[-1] == "It fits."


def test_a_described_job_with_the_watchdog_on_gets_no_warning(
    aws: LocalAWS, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = describe_file(tmp_path, **P5_JOB, Environment={"TORCH_NCCL_ASYNC_ERROR_HANDLING": "3"})
    _, report = preflight(capsys, "--describe-file", str(path), "--hyperparameter", "ddp_timeout=900")
    assert report["warnings"] == []


def test_the_options_win_over_the_described_job(
    aws: LocalAWS, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = describe_file(tmp_path, **P5_JOB, Environment=WATCHDOG_OFF, HyperParameters=LONG_DDP_TIMEOUT)
    argv = [
        "--describe-file",
        str(path),
        "--instance-count",
        "100",
        "--environment",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING=3",
    ]
    code, report = preflight(capsys, *argv)
    assert code == 1 and report["launch"]["instance_count"] == 100  # 100 p5 instances: the quota blocks
    assert [w.split(" ")[0] for w in report["warnings"]] == ["ddp_timeout=3600"]  # the environment's warning is gone


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "not a DescribeTrainingJob answer"),
        (json.dumps({**P5_JOB, "Environment": {"NCCL_DEBUG": 3}}), "Environment.NCCL_DEBUG must be a string"),
        (json.dumps({"ResourceConfig": {"InstanceType": "ml.p5.48xlarge", "InstanceCount": "4"}}), "InstanceCount"),
        (json.dumps({**P5_JOB, "TrainingJobName": "a\x1b[2Jb"}), "is no SageMaker job name"),
        # a heterogeneous cluster: ResourceConfig.InstanceGroups, no InstanceType (the ACK controller's fixture)
        (None, "give --instance-type and --instance-count"),
    ],
)
def test_a_described_job_that_cannot_be_used_exits_2_before_any_aws_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_aws: None, content: str | None, message: str
) -> None:
    path = tmp_path / "job.json"
    instance_groups = load_fixture("describe_training_job/ack_fixture.inprogress_describe_instance_group.json")
    path.write_text(content if content is not None else json.dumps(instance_groups))
    assert main(["preflight", "--describe-file", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"trainguard preflight: {path}") and message in err


def test_a_missing_describe_file_or_no_launch_at_all_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["preflight", "--describe-file", str(tmp_path / "absent.json")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["preflight"]) == 2
    assert "give --instance-type and --instance-count, or --describe-file FILE" in capsys.readouterr().err
