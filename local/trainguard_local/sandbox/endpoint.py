"""One endpoint for every AWS service the user's tools call, on 127.0.0.1.

AWS's JSON-protocol services name the operation in the X-Amz-Target header (``SageMaker.CreateTrainingJob``,
``ServiceQuotasV20190624.GetServiceQuota``): those two prefixes go to the simulated control planes,
answered as their own servers answer (``json_api_server.answer_json_request``). ``/_sandbox/...`` is the
sandbox's control API (an S3 bucket name cannot start with '_', so no path-style S3 request is taken).
IAM's SimulatePrincipalPolicy, which moto lacks, is refused with AccessDenied (see POLICY_SIMULATION_REFUSED).
Everything else goes to moto, in this process: a second moto WSGI application over the same in-process
state as the stand-in's moto server, served the way moto serves it (werkzeug, ``MotoRequestHandler``).
So ``aws --endpoint-url URL`` and ``AWS_ENDPOINT_URL=URL`` work for every service, SageMaker included.
"""

from __future__ import annotations

import io
import json
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server

from trainguard_local.sandbox.control import CONTROL_PREFIX
from trainguard_local.stand_in.json_api import JsonApiModel
from trainguard_local.stand_in.json_api_server import LOOPBACK, JsonApiPlane, answer_json_request, response_headers
from trainguard_local.stand_in.local_aws import LocalAWS
from trainguard_local.stand_in.sagemaker_api_model import SAGEMAKER_API
from trainguard_local.stand_in.service_quotas_catalogue import SERVICE_QUOTAS_API

StartResponse = Callable[[str, list[tuple[str, str]]], Any]
# (method, action, payload or None) -> (HTTP status, JSON answer)
ControlHandler = Callable[[str, str, dict[str, Any] | None], tuple[int, dict[str, Any]]]
# moto has no IAM SimulatePrincipalPolicy (it answers 500, which clients retry), and the sandbox does not
# evaluate IAM policies: it refuses as IAM refuses a caller without the permission. The SageMaker SDK calls
# it to check a role (and, with source code, its staging bucket) and reads AccessDenied as "cannot verify":
# it warns and goes on (sagemaker.core.helper.iam_role_resolver._evaluate_permissions,
# ModelTrainer._resolve_staging_bucket). The query protocol's error shape: ErrorResponse/Error/Type, Code,
# Message, and RequestId (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-api-responses.html).
POLICY_SIMULATION_REFUSED = (
    '<ErrorResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/"><Error><Type>Sender</Type>'
    "<Code>AccessDenied</Code><Message>The trainguard sandbox does not evaluate IAM policies: "
    "iam:SimulatePrincipalPolicy is refused.</Message></Error><RequestId>{request_id}</RequestId></ErrorResponse>"
)
HTTP_STATUS = {200: "200 OK", 400: "400 Bad Request", 404: "404 Not Found", 409: "409 Conflict", 500: "500 Error"}


class SandboxRouter:
    """The WSGI application: planes by X-Amz-Target, the control API by path, moto for the rest."""

    def __init__(
        self, planes: dict[str, tuple[JsonApiPlane, JsonApiModel]], control: ControlHandler, moto_app: Any
    ) -> None:
        self._planes, self._control, self._moto = planes, control, moto_app

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        plane = self._planes.get(target.partition(".")[0]) if environ["REQUEST_METHOD"] == "POST" else None
        if plane is not None:
            status, data = answer_json_request(*plane, target, _body(environ))
            start_response(HTTP_STATUS.get(status, f"{status} Error"), list(response_headers(data).items()))
            return [data]
        if path.startswith(CONTROL_PREFIX):
            try:
                body = _body(environ)
                payload = json.loads(body) if body else None
            except ValueError as err:
                status, answer = 400, {"error": f"the request body is not JSON: {err}"}
            else:
                status, answer = self._control(environ["REQUEST_METHOD"], path.removeprefix(CONTROL_PREFIX), payload)
            data = json.dumps(answer, default=str).encode()
            headers = [("Content-Type", "application/json"), ("Content-Length", str(len(data)))]
            start_response(HTTP_STATUS.get(status, f"{status} Error"), headers)
            return [data]
        if _is_iam_policy_simulation(environ):
            data = POLICY_SIMULATION_REFUSED.format(request_id=uuid.uuid4()).encode()
            start_response("403 Forbidden", [("Content-Type", "text/xml"), ("Content-Length", str(len(data)))])
            return [data]
        return self._moto(environ, start_response)  # type: ignore[no-any-return]


@contextmanager
def serve_endpoint(aws: LocalAWS, control: ControlHandler, *, port: int = 0) -> Iterator[str]:
    """The sandbox's endpoint on 127.0.0.1:`port` (0: a free one), served in a thread while in the block; its URL."""
    planes: dict[str, tuple[JsonApiPlane, JsonApiModel]] = {
        SAGEMAKER_API.target_prefix: (aws.plane, SAGEMAKER_API),
        SERVICE_QUOTAS_API.target_prefix: (aws.quotas, SERVICE_QUOTAS_API),
    }
    app = SandboxRouter(planes, control, DomainDispatcherApplication(create_backend_app))
    server = make_server(LOOPBACK, port, app, threaded=True, request_handler=MotoRequestHandler)
    thread = threading.Thread(target=server.serve_forever, name="sandbox-endpoint", daemon=True)
    thread.start()
    try:
        yield f"http://{LOOPBACK}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _is_iam_policy_simulation(environ: dict[str, Any]) -> bool:
    """An IAM SimulatePrincipalPolicy call (query protocol: a form-encoded POST). The body is read and put
    back, so moto still gets every other IAM call whole."""
    if "/iam/aws4_request" not in environ.get("HTTP_AUTHORIZATION", "") or environ["REQUEST_METHOD"] != "POST":
        return False
    body = _body(environ)
    environ["wsgi.input"] = io.BytesIO(body)
    return parse_qs(body.decode("utf-8", "replace")).get("Action") == ["SimulatePrincipalPolicy"]


def _body(environ: dict[str, Any]) -> bytes:
    length = int(environ.get("CONTENT_LENGTH") or 0)
    return environ["wsgi.input"].read(length) if length else b""
