"""The SageMaker Python SDK helper with the SDK: what reaches CreateTrainingJob (sdk/trainguard_sdk,
examples/launch.py). The helper's own checks are in test_guard_settings.py.

The SDK tests (slow: importing ModelTrainer takes 2-4 s on this machine) build a real
`sagemaker.train.model_trainer.ModelTrainer` (sagemaker 3.27.0) and call `train()`. The request is
caught at the botocore level, after botocore has validated and serialized it, and is never sent.
The AWS calls the SDK makes on the way are answered by `trainguard_sdk.offline.OfflineAws`, a botocore
`before-call` handler (its docstring lists each call and its canned answer): s3 ListBuckets, iam
SimulatePrincipalPolicy, s3 PutObject (the source and the SDK's drivers), sagemaker CreateTrainingJob
(recorded), sagemaker DescribeTrainingJob. The SDK's role validation is switched off with its own
SAGEMAKER_VALIDATE_ROLE=false, and its telemetry with TelemetryOptOut. As a net, AWS_ENDPOINT_URL
points at a closed port on 127.0.0.1, and every DNS lookup, socket connect and telemetry send is
refused and recorded: the tests assert there was none.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sdk.guard_examples import CHECKPOINTS, EVERY_SETTING
from trainguard.domain.policy import PolicyDefaults, TagKeys, read_job_policy
from trainguard_sdk import GuardSettings
from trainguard_sdk.offline import OfflineAws, OfflineCallRefused, offline_session

REPO = Path(__file__).resolve().parents[2]
# Run first in a subprocess: every DNS lookup, socket connect and SDK telemetry send refused, and
# reported on stderr.
NETWORK_GUARD = """
import socket, sys
from sagemaker.core.telemetry import telemetry_logging
def _refuse(*args, **kwargs):
    print("NETWORK ATTEMPT", args[-1] if args else kwargs, file=sys.stderr)
    raise ConnectionRefusedError("no network")
socket.getaddrinfo = _refuse
socket.socket.connect = _refuse
telemetry_logging._send_telemetry_request = _refuse
"""


def test_the_helper_imports_without_the_sdk() -> None:
    # In a fresh interpreter where `import sagemaker` fails, the helper still imports and checks settings.
    script = (
        "import sys; sys.modules['sagemaker'] = None\n"
        "from trainguard_sdk import GuardSettings, LauncherNotInstalled, model_trainer_arguments\n"
        f"guard = GuardSettings({CHECKPOINTS!r}, max_retries=3)\n"
        "try:\n    model_trainer_arguments(guard)\nexcept LauncherNotInstalled as e:\n    print('refused:', e)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.startswith("refused:") and "ModelTrainer" in result.stdout


def test_offline_answers_refuse_a_call_they_do_not_know() -> None:
    import boto3

    aws = OfflineAws(bucket="ml-bucket")
    session = boto3.session.Session(aws_access_key_id="x", aws_secret_access_key="x", region_name="us-east-1")
    session.events.register("before-call", aws.answer)
    with pytest.raises(OfflineCallRefused, match=re.escape("sts.GetCallerIdentity")):
        session.client("sts").get_caller_identity()
    assert aws.calls == ["sts.GetCallerIdentity"]


# --- With the SDK: what reaches CreateTrainingJob ---


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[Any]]:
    """Every DNS lookup and socket connect refused and recorded, and every telemetry send the SDK starts
    (an HTTPS GET outside botocore); the SDK's config files replaced by one that opts out of telemetry;
    AWS_ENDPOINT_URL on a closed local port, should a botocore call get past the answers."""
    from sagemaker.core.telemetry import telemetry_logging

    attempts: list[Any] = []

    def refuse(*args: Any, **_: Any) -> None:
        attempts.append(args[-1])
        raise ConnectionRefusedError(f"no network in this test: {args[-1]}")

    config = tmp_path / "sagemaker-config.yaml"
    config.write_text(
        json.dumps({"SchemaVersion": "1.0", "SageMaker": {"PythonSDK": {"Modules": {"TelemetryOptOut": True}}}})
    )
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(telemetry_logging, "_send_telemetry_request", lambda *args, **_: attempts.append(args))
    monkeypatch.setenv("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", str(config))
    monkeypatch.setenv("SAGEMAKER_USER_CONFIG_OVERRIDE", str(config))
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    yield attempts


@pytest.mark.slow
def test_the_helpers_tags_and_checkpoint_reach_the_create_training_job_request(
    no_network: list[Any], tmp_path: Path
) -> None:
    from sagemaker.core.training.configs import Compute, SourceCode
    from sagemaker.train.model_trainer import ModelTrainer

    from trainguard_sdk import model_trainer_arguments

    source = tmp_path / "source"
    source.mkdir()
    (source / "train.py").write_text("print('training')\n")
    guard = GuardSettings(CHECKPOINTS, **EVERY_SETTING)
    aws = OfflineAws(bucket="ml-bucket", region="eu-west-1")
    with offline_session(aws) as session:
        trainer = ModelTrainer(
            sagemaker_session=session,
            role="arn:aws:iam::123456789012:role/TrainingRole",
            training_image="763104351884.dkr.ecr.eu-west-1.amazonaws.com/pytorch-training:2.8-gpu-py312",
            base_job_name="llama-pretrain",
            source_code=SourceCode(source_dir=str(source), entry_script="train.py"),
            compute=Compute(instance_type="ml.p4d.24xlarge", instance_count=4),
            **model_trainer_arguments(guard, extra_tags={"team": "nlp"}),
        )
        trainer.train(wait=False, logs=False)

    [request] = aws.create_training_job_requests  # the JSON body botocore would have sent
    assert request["Tags"] == [*guard.tag_list(), {"Key": "team", "Value": "nlp"}]
    assert request["CheckpointConfig"] == {"S3Uri": CHECKPOINTS, "LocalPath": "/opt/ml/checkpoints"}
    assert request["ResourceConfig"]["InstanceType"] == "ml.p4d.24xlarge"
    assert request["RoleArn"] == "arn:aws:iam::123456789012:role/TrainingRole"
    assert request["TrainingJobName"].startswith("llama-pretrain-")
    # The guard, reading the request's tags as ListTags would return them, opts the job in as set.
    policy = read_job_policy({t["Key"]: t["Value"] for t in request["Tags"]}, PolicyDefaults(), TagKeys())
    assert policy.enabled and policy.max_retries == 2 and policy.problems == ()
    assert set(aws.calls) == {
        "s3.ListBuckets",
        "iam.SimulatePrincipalPolicy",
        "s3.PutObject",
        "sagemaker.CreateTrainingJob",
        "sagemaker.DescribeTrainingJob",
    }
    assert no_network == []


@pytest.mark.slow
def test_launch_example_dry_run_prints_the_request_with_the_guard_in_it(no_network: list[Any]) -> None:
    launch = REPO / "examples" / "launch.py"
    argv = [str(launch), "--dry-run", "--max-retries", "3", "--stall-minutes", "60"]
    script = f"{NETWORK_GUARD}\nimport runpy\nsys.argv = {argv!r}\nrunpy.run_path({str(launch)!r}, run_name='__main__')"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    assert "NETWORK ATTEMPT" not in result.stderr
    request = json.loads(result.stdout)
    assert {"Key": "trainguard:enabled", "Value": "true"} in request["Tags"]
    assert {"Key": "trainguard:max-retries", "Value": "3"} in request["Tags"]
    assert {"Key": "trainguard:stall-minutes", "Value": "60"} in request["Tags"]
    assert request["CheckpointConfig"] == {
        "S3Uri": "s3://my-bucket/checkpoints/trainguard-example/",
        "LocalPath": "/opt/ml/checkpoints",
    }
    assert request["HyperParameters"]["checkpoint-dir"] == "/opt/ml/checkpoints"  # where train.py writes
    assert request["ResourceConfig"] == {"InstanceType": "ml.g5.xlarge", "InstanceCount": 2, "VolumeSizeInGB": 30}


@pytest.mark.slow
def test_the_lambda_asset_holds_neither_the_helper_nor_the_sdk(tmp_path: Path) -> None:
    from infra.lambda_asset import BUNDLED_PACKAGES, LAMBDA_SOURCE_DIR, CopyInstalledPackages

    CopyInstalledPackages(LAMBDA_SOURCE_DIR, tuple(name for name, _ in BUNDLED_PACKAGES)).try_bundle(str(tmp_path))
    bundled = {path.name for path in tmp_path.iterdir()}
    assert "trainguard" in bundled
    assert not {name for name in bundled if name.startswith(("trainguard_sdk", "sagemaker"))}
    assert not list(tmp_path.rglob("trainguard_sdk")) and not list(tmp_path.rglob("sagemaker"))
