"""The sandbox's small parts, without a server: the control client, the CLI subcommand, the single
endpoint's routing (a WSGI call with fake planes), the one-time schedule times the guard loop fires on, the
virtual clock's pace, and what a simulated job writes (in moto, in process)."""

from __future__ import annotations

import io
import json
import socket
import threading
import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from trainguard_cli.main import main
from trainguard_local.sandbox.app import _run_clock
from trainguard_local.sandbox.control import DEFAULT_ENDPOINT, SandboxUnreachable, sandbox_endpoint
from trainguard_local.sandbox.endpoint import SandboxRouter
from trainguard_local.sandbox.guard import _one_time_at
from trainguard_local.sandbox.training import SimulatedTraining
from trainguard_local.simulation.clock import SimClock, run_started_at
from trainguard_local.stand_in.fleet_side import CHECKPOINT_BUCKET, training_request
from trainguard_local.stand_in.json_api import JsonApiModel
from trainguard_local.stand_in.sagemaker_control_plane import SimulatedSageMaker
from trainguard_local.stand_in.stack_resources import REGION, TRAINING_LOG_GROUP

MINUTE = timedelta(minutes=1)


def test_the_endpoint_is_the_flag_else_the_exported_endpoint_else_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    assert sandbox_endpoint() == DEFAULT_ENDPOINT
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4000/")
    assert sandbox_endpoint() == "http://127.0.0.1:4000"
    assert sandbox_endpoint("http://localhost:4001") == "http://localhost:4001"


def test_a_fault_is_never_sent_beyond_the_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "https://sagemaker.us-east-1.amazonaws.com")
    with pytest.raises(SandboxUnreachable, match="not a local sandbox"):
        sandbox_endpoint()


def test_inject_without_a_sandbox_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code = main(["sandbox", "inject", "llama", "hang", "--endpoint-url", f"http://127.0.0.1:{port}"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"trainguard sandbox: no sandbox at http://127.0.0.1:{port}") and err.count("\n") == 1


class EchoPlane:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def handle(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((operation, params))
        return {"TrainingJobSummaries": []}


def wsgi_call(app: Any, method: str, path: str, body: bytes = b"", **headers: str) -> tuple[str, bytes]:
    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
        **{f"HTTP_{name.upper()}": value for name, value in headers.items()},
    }
    answer: list[str] = []
    data = b"".join(app(environ, lambda status, _headers: answer.append(status)))
    return answer[0], data


def test_the_endpoint_routes_by_target_then_by_path_and_leaves_the_rest_to_moto() -> None:
    plane, moto_requests, control_requests = EchoPlane(), [], []

    def moto(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        moto_requests.append(environ["PATH_INFO"])
        start_response("200 OK", [])
        return [b"<moto/>"]

    def control(method: str, action: str, payload: Any) -> tuple[int, dict[str, Any]]:
        control_requests.append((method, action, payload))
        return 404, {"error": "no such action"}

    router = SandboxRouter({"SageMaker": (plane, JsonApiModel("sagemaker"))}, control, moto)
    status, data = wsgi_call(router, "POST", "/", b"{}", x_amz_target="SageMaker.ListTrainingJobs")
    assert (status, json.loads(data), plane.calls) == (
        "200 OK",
        {"TrainingJobSummaries": []},
        [("ListTrainingJobs", {})],
    )
    assert wsgi_call(router, "POST", "/", b"{}", x_amz_target="DynamoDB_20120810.ListTables") == ("200 OK", b"<moto/>")
    assert wsgi_call(router, "GET", "/demo-checkpoints") == ("200 OK", b"<moto/>")
    status, data = wsgi_call(router, "POST", "/_sandbox/nothing", b'{"a": 1}')
    assert (status, json.loads(data)) == ("404 Not Found", {"error": "no such action"})
    assert (moto_requests, control_requests) == (["/", "/demo-checkpoints"], [("POST", "nothing", {"a": 1})])
    assert wsgi_call(router, "POST", "/_sandbox/inject", b"not json")[0] == "400 Bad Request"


def test_a_one_time_schedule_is_read_in_utc() -> None:
    assert _one_time_at("at(2026-11-29T21:05:00)") == datetime(2026, 11, 29, 21, 5, tzinfo=UTC)
    with pytest.raises(ValueError, match="not a one-time"):
        _one_time_at("rate(5 minutes)")


def test_the_virtual_clock_moves_a_minute_at_a_time_and_never_passes_the_wall_clock() -> None:
    wall = datetime(2026, 12, 4, 21, 30, 20, tzinfo=UTC)
    clock, lived, stop = SimClock(wall - 5 * MINUTE), [], threading.Event()
    runner = threading.Thread(target=_run_clock, args=(clock, [lambda: lived.append(clock())], 1e6, stop, lambda: wall))
    runner.start()
    time.sleep(0.5)  # at a million minutes a second it would be years ahead by now
    stop.set()
    runner.join(timeout=10)
    assert not runner.is_alive()
    assert lived == [wall - k * MINUTE for k in (4, 3, 2, 1, 0)] and clock() == wall


def gpu_levels(cloudwatch: Any, host: str, start: datetime, end: datetime) -> dict[datetime, float]:
    answer = cloudwatch.get_metric_statistics(
        Namespace="/aws/sagemaker/TrainingJobs", MetricName="GPUUtilization",
        Dimensions=[{"Name": "Host", "Value": host}], StartTime=start, EndTime=end, Period=60, Statistics=["Maximum"],
    )  # fmt: skip
    return {point["Timestamp"]: point["Maximum"] for point in answer["Datapoints"]}


@mock_aws
def test_a_job_writes_its_lines_gpus_and_checkpoints_on_the_virtual_clock_until_it_hangs() -> None:
    clock = SimClock(run_started_at(24))  # in the past, as the sandbox's: CloudWatch Logs takes 14 days back
    start = clock()
    client = lambda service: boto3.client(service, region_name=REGION)  # noqa: E731
    client("s3").create_bucket(Bucket=CHECKPOINT_BUCKET)
    client("logs").create_log_group(logGroupName=TRAINING_LOG_GROUP)
    plane = SimulatedSageMaker(clock=clock)
    plane.handle("CreateTrainingJob", training_request("llama", "ml.g5.12xlarge", 2, {}))  # 4 GPUs a host
    delivered: list[dict[str, Any]] = []
    aws: Any = SimpleNamespace(plane=plane, clock=clock, client=client)
    training = SimulatedTraining(aws, lambda text: None, on_log_delivery=delivered.append, checkpoint_minutes=10)

    def live(minutes: int) -> None:
        for _ in range(minutes):
            clock.skip(MINUTE)
            training.minute()

    live(35)  # Starting for 2 minutes, then 33 minutes of training
    since = plane.describe("llama")["TrainingStartTime"]
    assert since == start + 2 * MINUTE
    listed = client("s3").list_objects_v2(Bucket=CHECKPOINT_BUCKET, Prefix="llama/")["Contents"]
    assert sorted(item["LastModified"] for item in listed) == [since + k * 10 * MINUTE for k in (1, 2, 3)]
    assert clock() - max(item["LastModified"] for item in listed) <= 10 * MINUTE  # what the guard reads as its age
    events = client("logs").filter_log_events(logGroupName=TRAINING_LOG_GROUP)["events"]
    stamps = [datetime.fromtimestamp(event["timestamp"] / 1000, UTC) for event in events]
    assert stamps == [since + k * MINUTE for k in range(1, 34)] and len(delivered) == 33  # one delivery a minute
    assert set(gpu_levels(client("cloudwatch"), "llama/algo-2", since, clock()).values()) == {4 * 90.0}

    training.hang("llama")
    hung_at = clock()
    live(15)
    assert len(client("s3").list_objects_v2(Bucket=CHECKPOINT_BUCKET, Prefix="llama/")["Contents"]) == 3
    assert len(client("logs").filter_log_events(logGroupName=TRAINING_LOG_GROUP)["events"]) == 33
    assert set(gpu_levels(client("cloudwatch"), "llama/algo-1", hung_at, clock()).values()) == {0.0}
    [seen] = training.snapshot()
    hung = {"job": "llama", "state": "InProgress/Training", "hung": True}
    assert seen == hung | {"minutes_trained": 48, "checkpoints": 3}


@mock_aws
def test_a_relaunch_resumes_from_the_newest_checkpoint_under_its_prefix() -> None:
    """A relaunch shares its predecessor's checkpoint prefix: it resumes from the newest checkpoint there, so its
    own checkpoints hold more work and never overwrite the predecessor's with a later stamp."""
    from trainguard_local.stand_in.fleet_side import FleetSide
    from trainguard_local.stand_in.played_launch import resumed_progress

    side = FleetSide(lambda service: boto3.client(service, region_name=REGION))
    side.client("s3").create_bucket(Bucket="ckpt")
    assert resumed_progress(side, "s3://ckpt/job/") == 0.0  # nothing written yet
    assert resumed_progress(side, "s3://no-such-bucket/job/") == 0.0  # a launch finds nothing there either
    for minutes in (10, 20):
        side.write_checkpoint("s3://ckpt/job/", f"step-{minutes:06d}/model.pt")
    side.write_checkpoint("s3://ckpt/other-job/", "step-000090/model.pt")
    side.write_checkpoint("s3://ckpt/job/", "notes.txt")  # the user's own file: not a checkpoint of ours
    assert resumed_progress(side, "s3://ckpt/job/") == 20 / 60
