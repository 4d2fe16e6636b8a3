"""Serve a simulated control plane over HTTP on 127.0.0.1, speaking AWS's JSON 1.1 protocol.

Any plane with ``handle(operation, params) -> dict`` that raises ``ApiError`` will do: the simulated
SageMaker (``SageMakerServer``) and the simulated Service Quotas (``ServiceQuotasServer``). A boto3 client
reaches it by its endpoint alone: POST / with ``X-Amz-Target: <targetPrefix>.<Operation>`` and a JSON
body; 200 and JSON on success; 400 and ``{"__type": code, "message": ...}`` on error, which botocore
raises as ``ClientError`` (or the client's modeled exception of that code). Timestamps go out as epoch
seconds, which botocore's JSON parser reads. Signatures are not checked.

    with JsonApiServer(plane, SERVICE_QUOTAS_API) as server:
        client = boto3.client("service-quotas", endpoint_url=server.endpoint_url, ...)
"""

from __future__ import annotations

import json
import threading
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Generic, Protocol, Self, TypeVar, runtime_checkable

from trainguard_local.stand_in.json_api import ApiError, JsonApiModel, wire_json

LOOPBACK = "127.0.0.1"
CONTENT_TYPE = "application/x-amz-json-1.1"


class JsonApiPlane(Protocol):
    def handle(self, operation: str, params: dict[str, Any]) -> dict[str, Any]: ...


@runtime_checkable
class CallerPlanes(Protocol):
    """Planes of several accounts and regions behind one endpoint: the one a request's signature names."""

    def handle(self, operation: str, params: dict[str, Any]) -> dict[str, Any]: ...

    def for_request(self, authorization: str) -> JsonApiPlane: ...


PlaneT = TypeVar("PlaneT", bound=JsonApiPlane)


class JsonApiServer(Generic[PlaneT]):
    def __init__(
        self,
        plane: PlaneT,
        api: JsonApiModel,
        *,
        port: int = 0,
        poll_interval: float = 0.01,
        thread_name: str = "simulated-aws",
    ) -> None:
        self.plane = plane
        self.api = api
        self._port = port
        self._poll_interval = poll_interval
        self._thread_name = thread_name
        self._httpd: _PlaneHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def endpoint_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        return f"http://{LOOPBACK}:{self._httpd.server_address[1]}"

    def start(self) -> Self:
        if self._httpd is not None:
            raise RuntimeError("the server is already started")
        self._httpd = _PlaneHTTPServer((LOOPBACK, self._port), _JsonApiRequestHandler, self.plane, self.api)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": self._poll_interval},
            name=self._thread_name,
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

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class _PlaneHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        plane: JsonApiPlane,
        api: JsonApiModel,
    ) -> None:
        super().__init__(address, handler)
        self.plane = plane
        self.api = api


class _JsonApiRequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes; no 40 ms delayed-ACK stall
    server: _PlaneHTTPServer

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        plane = self.server.plane
        try:  # planes of several accounts and regions: the one the request is signed for (stand_in/accounts.py)
            if isinstance(plane, CallerPlanes):
                plane = plane.for_request(self.headers.get("Authorization", ""))
        except ApiError as error:
            status, data = 400, wire_json({"__type": error.code, "message": error.message})
        else:
            status, data = answer_json_request(plane, self.server.api, self.headers.get("X-Amz-Target", ""), body)
        self.send_response(status)
        for name, value in response_headers(data).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the plane's call log records every request."""


def answer_json_request(plane: JsonApiPlane, api: JsonApiModel, target: str, body: bytes) -> tuple[int, bytes]:
    """One request of the JSON protocol, answered by ``plane``: (HTTP status, JSON body). The HTTP server
    here and the sandbox's single endpoint (trainguard_local.sandbox.endpoint) both answer with it."""
    try:
        operation = _operation_from_target(target, api)
        answer = plane.handle(operation, api.decode_request(operation, _json_object(body)))
    except ApiError as error:
        return 400, wire_json({"__type": error.code, "message": error.message})
    except Exception as error:
        # A bug in the simulation: answer as AWS does for its own faults, and show the traceback.
        traceback.print_exc()
        return 500, wire_json({"__type": "InternalFailure", "message": repr(error)})
    return 200, wire_json(answer)


def response_headers(data: bytes) -> dict[str, str]:
    return {"Content-Type": CONTENT_TYPE, "Content-Length": str(len(data)), "x-amzn-RequestId": str(uuid.uuid4())}


def _operation_from_target(target: str, api: JsonApiModel) -> str:
    prefix, _, operation = target.partition(".")
    if prefix != api.target_prefix or not operation:
        raise ApiError(
            "UnknownOperationException",
            f"X-Amz-Target {target!r} does not name a {api.target_prefix} operation.",
        )
    return operation


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        params = json.loads(body or b"{}")
    except ValueError as error:
        raise ApiError("SerializationException", f"The request body is not JSON: {error}") from None
    if not isinstance(params, dict):
        raise ApiError("SerializationException", "The request body is not a JSON object.")
    return params
