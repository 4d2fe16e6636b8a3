"""The sandbox's small parts, without a server: the control client, the CLI subcommand, the single
endpoint's routing (a WSGI call with fake planes), and the one-time schedule times the guard loop fires on."""

from __future__ import annotations

import io
import json
import socket
from datetime import UTC, datetime
from typing import Any

import pytest

from trainguard_cli.main import main
from trainguard_local.sandbox.control import DEFAULT_ENDPOINT, SandboxUnreachable, sandbox_endpoint
from trainguard_local.sandbox.endpoint import SandboxRouter
from trainguard_local.sandbox.guard import _one_time_at
from trainguard_local.stand_in.json_api import JsonApiModel


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
