"""Serve a ``SimulatedSageMaker`` over HTTP on 127.0.0.1, speaking SageMaker's JSON 1.1 protocol.

A boto3 ``sagemaker`` client reaches it by ``endpoint_url`` alone: POST / with
``X-Amz-Target: SageMaker.<Operation>`` and a JSON body; 200 and JSON on success; 400 and
``{"__type": code, "message": ...}`` on error, which botocore raises as ``ClientError``. Timestamps
go out as epoch seconds, which botocore's JSON parser reads. Signatures are not checked.

    with SageMakerServer(SimulatedSageMaker()) as server:
        client = boto3.client("sagemaker", endpoint_url=server.endpoint_url, ...)
"""

from __future__ import annotations

import json
import threading
import traceback
import uuid
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from trainguard_local.sagemaker_api_model import (
    SageMakerApiError,
    decode_wire_timestamps,
    operation_model,
    sagemaker_service_model,
)
from trainguard_local.sagemaker_control_plane import SimulatedSageMaker

LOOPBACK = "127.0.0.1"
CONTENT_TYPE = "application/x-amz-json-1.1"


class SageMakerServer:
    def __init__(self, plane: SimulatedSageMaker, *, port: int = 0, poll_interval: float = 0.01) -> None:
        self.plane = plane
        self._port = port
        self._poll_interval = poll_interval
        self._httpd: _PlaneHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def endpoint_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        return f"http://{LOOPBACK}:{self._httpd.server_address[1]}"

    def start(self) -> SageMakerServer:
        if self._httpd is not None:
            raise RuntimeError("the server is already started")
        self._httpd = _PlaneHTTPServer((LOOPBACK, self._port), _SageMakerRequestHandler, self.plane)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": self._poll_interval},
            name="simulated-sagemaker",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()
        self._httpd, self._thread = None, None

    def __enter__(self) -> SageMakerServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class _PlaneHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], plane: SimulatedSageMaker
    ) -> None:
        super().__init__(address, handler)
        self.plane = plane


class _SageMakerRequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes; no 40 ms delayed-ACK stall
    server: _PlaneHTTPServer

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            operation = _operation_from_target(self.headers.get("X-Amz-Target", ""))
            answer = self.server.plane.handle(operation, _decode_params(operation, body))
        except SageMakerApiError as error:
            self._reply(400, {"__type": error.code, "message": error.message})
        except Exception as error:
            # A bug in the simulation: answer as AWS does for its own faults, and show the traceback.
            traceback.print_exc()
            self._reply(500, {"__type": "InternalFailure", "message": repr(error)})
        else:
            self._reply(200, answer)

    def _reply(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, default=_encode_wire_value).encode()
        self.send_response(status)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the plane's call log records every request."""


def _operation_from_target(target: str) -> str:
    prefix, _, operation = target.partition(".")
    expected = sagemaker_service_model().metadata["targetPrefix"]
    if prefix != expected or not operation:
        raise SageMakerApiError(
            "UnknownOperationException", f"X-Amz-Target {target!r} does not name a {expected} operation."
        )
    return operation


def _decode_params(operation: str, body: bytes) -> dict[str, Any]:
    try:
        params = json.loads(body or b"{}")
    except ValueError as error:
        raise SageMakerApiError("SerializationException", f"The request body is not JSON: {error}") from None
    if not isinstance(params, dict):
        raise SageMakerApiError("SerializationException", "The request body is not a JSON object.")
    op = operation_model(operation)
    return decode_wire_timestamps(params, op.input_shape if op else None)  # type: ignore[no-any-return]


def _encode_wire_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.timestamp()
    raise TypeError(f"cannot encode {type(value).__name__} for the wire")
