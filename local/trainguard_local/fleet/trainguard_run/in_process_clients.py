"""boto3 clients that reach the simulated services in process, without HTTP.

- The simulated SageMaker and Service Quotas (`trainguard_local`) are reached by ordinary boto3
  clients: a botocore `before-send` handler answers each request from `plane.handle(operation,
  params)` with the JSON body and status the JSON servers would send (errors as HTTP 400
  `{"__type": code, "message": ...}`), so botocore serialises, validates and parses as usual and the
  production adapters run unmodified.
- moto 5.2.x has no PutCompositeAlarm: `CompositeAlarmsInMoto` answers it (see its docstring).
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse
from botocore.config import Config

from trainguard_local.stand_in.alarm_evaluator import put_composite_alarm_in_moto
from trainguard_local.stand_in.json_api import ApiError, JsonApiModel, wire_json

RETRIES = Config(retries={"mode": "standard", "max_attempts": 5})  # as the Lambda wiring builds its clients
SIMULATED_SERVICES = ("sagemaker", "service-quotas")

# Told of every answer: (operation, request parameters, error code or '', error message or '').
OnAnswer = Callable[[str, dict[str, Any], str, str], None]


def fleet_client(session: boto3.session.Session, service: str) -> Any:
    """A client as the Lambda wiring builds it. The simulated services get an endpoint that none of moto's
    backends claims: moto's own before-send handler (it runs for every request) then leaves them alone,
    instead of answering SageMaker from moto's SageMaker."""
    endpoint = f"https://{service}.simulated.invalid" if service in SIMULATED_SERVICES else None
    return session.client(service, config=RETRIES, endpoint_url=endpoint)  # type: ignore[call-overload]


def answer_locally(client: Any, plane: Any, api: JsonApiModel, on_answer: OnAnswer) -> None:
    """Answer the client's requests from `plane.handle`, as its JSON server would, without HTTP."""

    endpoint = client.meta.endpoint_url

    def send(request: Any, **_: Any) -> AWSResponse | None:
        if not request.url.startswith(endpoint):
            return None  # addressed elsewhere: answered before (chaos/call_faults.py, an injected fault)
        target = request.headers.get("X-Amz-Target", "")
        operation = (target.decode() if isinstance(target, bytes) else target).partition(".")[2]
        body = request.body or b"{}"
        params = json.loads(body.decode() if isinstance(body, bytes) else body)
        try:
            answer = plane.handle(operation, api.decode_request(operation, params))
        except ApiError as error:
            on_answer(operation, params, error.code, error.message)
            return _response(request.url, 400, {"__type": error.code, "message": error.message})
        on_answer(operation, params, "", "")
        return _response(request.url, 200, answer)

    client.meta.events.register_first(f"before-send.{client.meta.service_model.service_id.hyphenize()}", send)


class CompositeAlarmsInMoto:
    """moto 5.2.x has no PutCompositeAlarm: store it in moto's backend with `put_composite_alarm_in_moto`
    (its tags are dropped) and answer success. At before-call the request is already serialised, so the
    parameters kept at provide-client-params are used."""

    def __init__(self, cloudwatch: Any, account: str, region: str) -> None:
        self._account, self._region = account, region
        self._request: dict[str, Any] = {}
        cloudwatch.meta.events.register("provide-client-params.cloudwatch.PutCompositeAlarm", self._keep_request)
        cloudwatch.meta.events.register("before-call.cloudwatch.PutCompositeAlarm", self._put)

    def _keep_request(self, params: dict[str, Any], **_: Any) -> None:
        self._request = copy.deepcopy(params)

    def _put(self, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        request = self._request
        put_composite_alarm_in_moto(
            request["AlarmName"], request["AlarmRule"], request.get("AlarmDescription", ""), self._account, self._region
        )
        return AWSResponse("", 200, {}, _Raw(b"")), {"ResponseMetadata": {"HTTPStatusCode": 200}}


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body

    def read(self, *_: Any) -> bytes:
        return self._body


def _response(url: str, status: int, payload: dict[str, Any]) -> AWSResponse:
    body = wire_json(payload)
    headers = {"Content-Type": "application/x-amz-json-1.1", "x-amzn-RequestId": str(uuid.uuid4())}
    return AWSResponse(url, status, headers, _Raw(body))
