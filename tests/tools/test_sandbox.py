"""`make sandbox` with clients we did not write: the AWS CLI (pip awscli) and the SageMaker Python SDK.

The sandbox runs as a user runs it (``python -m trainguard_local.sandbox``, in its own process); the clients
get only the environment it printed. They prove that the stand-in speaks AWS's protocol, and trainguard,
attached to it, acts on what they launched: an internal error is relaunched, a hang is stopped and
relaunched, a capacity failure is relaunched after its backoff, and a launch refused by a quota files a
quota request. `trainguard sandbox inject`, `status` and `history` are run as the user runs them. Every time the sandbox
shows is behind the user's clock, and the ages trainguard reports match what the jobs wrote.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from trainguard_local.sandbox.control import call

pytestmark = pytest.mark.slow

REPO = Path(__file__).parents[2]
BIN = Path(sys.executable).parent  # the venv's console scripts: aws, trainguard
ACCOUNT = "123456789012"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/TrainingRole"
CLI_JOB = "llama-pretrain"

# Ctrl-C ends the sandbox's clock loop, then its servers and the stand-in shut down: on two busy cores that can
# take a while, so the wait is generous (the process's exit is the signal, not the time).
SHUTDOWN_SECONDS = 180


class Sandbox:
    """`python -m trainguard_local.sandbox` in a subprocess; its output, and the environment it printed."""

    def __init__(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SAGEMAKER_"))}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "trainguard_local.sandbox", "--port", "0", "--speed", "60"],
            cwd=REPO,
            env={**env, "PYTHONUNBUFFERED": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            # Ctrl-C is how a user stops it, and how stop() does. A shell without job control starts a command run
            # with `&` with SIGINT ignored, and the sandbox would inherit that: give it SIGINT's default back.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        wait_for(lambda: any(line.startswith("Ctrl-C", 2) for line in self.lines), 60, "the sandbox's banner")
        self.env = client_environment(env, self.lines)
        self.endpoint = self.env["AWS_ENDPOINT_URL"]

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def output(self) -> str:
        return "\n".join(self.lines)

    def jobs(self) -> dict[str, dict[str, Any]]:
        return {job["job"]: job for job in call(self.endpoint, "jobs")["jobs"]}

    def run(self, *command: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{command}: {done.stderr}"
        return done

    def aws(self, *args: str) -> Any:
        """The AWS CLI with --endpoint-url, as docs/local-tools.md shows it; its JSON output."""
        done = self.run(str(BIN / "aws"), "--endpoint-url", self.endpoint, *args, "--output", "json")
        return json.loads(done.stdout) if done.stdout.strip() else None

    def create_job(self, name: str, instance_type: str, tags: dict[str, str]) -> Any:
        return self.aws(
            "sagemaker", "create-training-job", "--cli-input-json", create_request(name, instance_type, tags)
        )

    def describe(self, job: str) -> Any:
        return self.aws("sagemaker", "describe-training-job", "--training-job-name", job)

    def trainguard(self, *args: str) -> str:
        return self.run(str(BIN / "trainguard"), *args).stdout

    def stop(self) -> int:
        self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(timeout=SHUTDOWN_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise


def client_environment(base: dict[str, str], banner: list[str]) -> dict[str, str]:
    """What a user has after copying the banner's `export` and `unset` lines into their shell."""
    env = dict(base)
    for line in banner:
        if line.startswith("export "):
            env.update(pair.split("=", 1) for pair in line.removeprefix("export ").split())
        elif line.startswith("unset "):
            for name in line.removeprefix("unset ").split():
                env.pop(name, None)
    return env


# Each wait ends as soon as what it waits for is there; its limit is what a quiet machine needs, times this, so
# that two cores kept busy by other work slow the sandbox down without failing the test.
PATIENCE = 4


def wait_for(ready: Callable[[], Any], seconds: float, what: str) -> Any:
    deadline = time.monotonic() + seconds * PATIENCE
    while time.monotonic() < deadline:
        value = ready()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"waited {seconds * PATIENCE} s for {what}")


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    started = Sandbox()
    yield started
    print(started.output())  # pytest shows it when a test failed
    assert started.stop() == 0
    assert started.lines[-1] == "sandbox stopped"


def create_request(name: str, instance_type: str, tags: dict[str, str]) -> str:
    return json.dumps(
        {
            "TrainingJobName": name,
            "RoleArn": ROLE,
            "AlgorithmSpecification": {
                "TrainingImage": "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.5.1-gpu-py311",
                "TrainingInputMode": "File",
            },
            "OutputDataConfig": {"S3OutputPath": "s3://demo-checkpoints/output"},
            "ResourceConfig": {"InstanceType": instance_type, "InstanceCount": 2, "VolumeSizeInGB": 200},
            "StoppingCondition": {"MaxRuntimeInSeconds": 432000},
            "CheckpointConfig": {"S3Uri": f"s3://demo-checkpoints/{name}/", "LocalPath": "/opt/ml/checkpoints"},
            "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
        }
    )


def tags_of(sandbox: Sandbox, job: str) -> dict[str, str]:
    arn = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-job/{job}"
    return {t["Key"]: t["Value"] for t in sandbox.aws("sagemaker", "list-tags", "--resource-arn", arn)["Tags"]}


def test_the_aws_cli_and_the_sdk_launch_and_trainguard_relaunches_an_internal_error_and_a_hang(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    (tmp_path / "train.py").write_text("print('training')\n")
    # The SDK launch takes seconds to import: it runs while the CLI works.
    sdk = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("sandbox_sdk_client.py")), "vit-finetune", "ml.g5.12xlarge",
         "s3://demo-checkpoints/vit-finetune/", str(tmp_path)],
        env=sandbox.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    tags = {"trainguard:enabled": "true", "team": "llm"}
    created = sandbox.create_job(CLI_JOB, "ml.p5.48xlarge", tags)
    assert created == {"TrainingJobArn": f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-job/{CLI_JOB}"}
    described = sandbox.describe(CLI_JOB)
    assert described["TrainingJobStatus"] == "InProgress"
    assert described["ResourceConfig"] == {"InstanceType": "ml.p5.48xlarge", "InstanceCount": 2, "VolumeSizeInGB": 200}
    assert described["CheckpointConfig"]["S3Uri"] == f"s3://demo-checkpoints/{CLI_JOB}/"
    assert isinstance(described["CreationTime"], float)  # JSON 1.1 timestamps: epoch seconds, as the CLI prints them
    assert tags_of(sandbox, CLI_JOB) == tags

    out, err = sdk.communicate(timeout=120)
    assert sdk.returncode == 0, err
    assert json.loads(out.splitlines()[-1]) == {"blocked": []}  # STS, S3 and telemetry went nowhere but the sandbox
    listed = sandbox.aws("sagemaker", "list-training-jobs", "--name-contains", "vit-finetune")
    [sdk_job] = [summary["TrainingJobName"] for summary in listed["TrainingJobSummaries"]]
    uploaded = sandbox.aws("s3api", "list-objects-v2", "--bucket", f"sagemaker-us-east-1-{ACCOUNT}")["Contents"]
    assert f"vit-finetune/{sdk_job}/input/code/train.py" in {item["Key"] for item in uploaded}
    assert "Error on request" not in sandbox.output()  # no call the sandbox could not answer (moto's 500s)
    assert tags_of(sandbox, sdk_job) == {"trainguard:enabled": "true", "team": "vision"}

    # An internal error, once the job has written a checkpoint: trainguard relaunches it.
    wait_for(lambda: sandbox.jobs()[CLI_JOB]["checkpoints"], 30, "a checkpoint of the CLI's job")
    assert "internal-error injected" in sandbox.trainguard("sandbox", "inject", CLI_JOB, "internal-error")
    wait_for(lambda: f"{CLI_JOB}-retry1" in sandbox.jobs(), 30, "the relaunch")
    assert tags_of(sandbox, f"{CLI_JOB}-retry1") == {
        **tags,
        "trainguard:root-job": CLI_JOB,
        "trainguard:attempt": "1",
        "trainguard:retry-of": CLI_JOB,
    }
    history = json.loads(sandbox.trainguard("history", f"{CLI_JOB}-retry1", "--json"))
    assert [a["job_name"] for a in history["attempts"]] == [CLI_JOB, f"{CLI_JOB}-retry1"]
    [end] = [e for e in history["timeline"] if e["event"] == "end"]
    assert (end["kind"], end["category"], end["new_job_name"]) == ("relaunched", "internal", f"{CLI_JOB}-retry1")
    wait_for(lambda: f"SNS notification: [trainguard] relaunched {CLI_JOB}" in sandbox.output(), 10, "the message")

    # A hang of the SDK's job: no logs, idle GPUs. trainguard stops it, then relaunches it.
    wait_for(lambda: sandbox.jobs()[sdk_job]["state"] == "InProgress/Training", 30, "the SDK's job to train")
    assert "hang injected" in sandbox.trainguard("sandbox", "inject", sdk_job, "hang")
    wait_for(lambda: f"{sdk_job}-retry1" in sandbox.jobs(), 45, "the stalled job's relaunch")
    assert sandbox.describe(sdk_job)["TrainingJobStatus"] == "Stopped"

    def recorded() -> list[tuple[str, str]]:
        timeline = json.loads(sandbox.trainguard("history", sdk_job, "--json"))["timeline"]
        return [(e["event"], e["kind"]) for e in timeline if e["job_name"] == sdk_job]

    # The stall handler records its step after its message; the Stopped event's relaunch may come first.
    wait_for(lambda: {("stall-stop", "stall-stopped"), ("end", "relaunched")} <= set(recorded()), 60, "both records")
    assert f"SNS notification: [trainguard] {sdk_job} stalled: stopped" in sandbox.output()
    status = json.loads(sandbox.trainguard("status", "--json"))
    assert {f"{CLI_JOB}-retry1", f"{sdk_job}-retry1"} <= {w["job_name"] for w in status["watched"]}


def test_a_capacity_failure_is_relaunched_after_its_backoff_and_a_quota_wall_files_a_request(sandbox: Sandbox) -> None:
    sandbox.create_job("bert-large", "ml.g5.xlarge", {"trainguard:enabled": "true"})
    wait_for(lambda: sandbox.jobs().get("bert-large", {}).get("checkpoints"), 30, "a checkpoint")
    assert "capacity injected" in sandbox.trainguard("sandbox", "inject", "bert-large", "capacity")
    wait_for(lambda: "bert-large relaunch-scheduled" in sandbox.output(), 30, "the scheduled relaunch")
    wait_for(lambda: "bert-large-retry1" in sandbox.jobs(), 30, "the relaunch after the backoff")
    assert "trainguard retry-launcher: bert-large relaunched -> bert-large-retry1" in sandbox.output()

    # The quota of ml.g5.xlarge drops to what bert-large-retry1 uses (2): the user's next launch is refused.
    assert "quota injected" in sandbox.trainguard("sandbox", "inject", "bert-large-retry1", "quota")
    # Without --endpoint-url: the exported AWS_ENDPOINT_URL is enough.
    refused = subprocess.run(
        [str(BIN / "aws"), "sagemaker", "create-training-job", "--cli-input-json",
         create_request("bert-sweep", "ml.g5.xlarge", {"trainguard:enabled": "true"})],
        env=sandbox.env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert refused.returncode != 0
    assert "(ResourceLimitExceeded)" in refused.stderr
    assert "'ml.g5.xlarge for training job usage' is 2 Instances" in refused.stderr
    wait_for(lambda: "trainguard failed-launches: bert-sweep quota-wall" in sandbox.output(), 30, "the quota request")
    requests = json.loads(sandbox.trainguard("status", "--json"))["quota_requests"]
    assert [(r["quota_name"], r["desired_value"]) for r in requests] == [("ml.g5.xlarge for training job usage", 4)]


def test_every_time_the_sandbox_shows_is_past_and_a_checkpoint_age_is_what_the_job_wrote(sandbox: Sandbox) -> None:
    """Issue 25: the sandbox showed "TRAINING SINCE in 2 h", and a checkpoint age of hours for a job that
    writes one every 10 virtual minutes (its clock ran ahead of the user's, S3 stamped the real time)."""
    sandbox.create_job("clock-probe", "ml.p5.48xlarge", {"trainguard:enabled": "true"})
    wait_for(lambda: sandbox.jobs().get("clock-probe", {}).get("checkpoints"), 30, "a checkpoint")
    status = sandbox.trainguard("status")
    assert "clock-probe" in status and not re.search(r"\bin \d+ (min|h|d)\b", status), status
    assert "internal-error injected" in sandbox.trainguard("sandbox", "inject", "clock-probe", "internal-error")
    relaunched = "SNS notification: [trainguard] relaunched clock-probe"
    wait_for(lambda: relaunched in sandbox.output(), 30, "the relaunch's message")
    wall = time.time()
    described = sandbox.describe("clock-probe")
    times = [described[key] for key in ("CreationTime", "TrainingStartTime", "TrainingEndTime", "LastModifiedTime")]
    assert max(times) <= wall, (times, wall)
    written = sandbox.aws("s3api", "list-objects-v2", "--bucket", "demo-checkpoints", "--prefix", "clock-probe/")
    # Its relaunch resumes under the same prefix and writes the checkpoints of later work: clock-probe's own are
    # those of the minutes it trained (a relaunch's write may be listed before it is stamped with the virtual time).
    trained = (described["TrainingEndTime"] - described["TrainingStartTime"]) / 60
    own = [item for item in written["Contents"] if int(re.findall(r"step-(\d+)", item["Key"])[0]) <= trained]
    newest = max(datetime.fromisoformat(item["LastModified"]).timestamp() for item in own)
    assert described["TrainingEndTime"] - 10 * 60 <= newest <= described["TrainingEndTime"] <= wall
    message = sandbox.output().split(relaunched, 1)[1]
    age = re.search(r"[Nn]ewest checkpoint is (\d+) (s|min|h \d+ min|d \d+ h) old", message)
    assert age is not None and age[2] in ("s", "min") and int(age[1]) <= (10 if age[2] == "min" else 600), age
