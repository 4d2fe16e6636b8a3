"""The error answers the chaos suite injects, spelt in each service's own wire protocol, so that botocore
parses them as it would parse AWS's and its standard retry mode classifies them as AWS's.

- Throttling: the code each service uses. SageMaker answers CreateTrainingJob with `ThrottlingException`
  "Rate exceeded" (docs/aws-facts.md; the real text is in failure_reasons.json); DynamoDB, CloudWatch
  Logs and EventBridge Scheduler model `ThrottlingException` (Scheduler with HTTP 429), SNS models
  `Throttled` (HTTP 429), Service Quotas `TooManyRequestsException`, and S3 answers `SlowDown` (HTTP 503).
- 5xx: `InternalFailure` (500) and `ServiceUnavailable` (503), the errors common to every AWS API
  (https://docs.aws.amazon.com/sagemaker/latest/APIReference/CommonErrors.html); S3 calls them
  `InternalError` and `ServiceUnavailable`.
- A permission error, `AccessDeniedException` (400), for the poison event: a retry cannot cure it.

The protocols are those of botocore's models: JSON for SageMaker, DynamoDB, Service Quotas and Logs,
REST-JSON for Scheduler, query (XML) for SNS and REST-XML for S3; CloudWatch speaks JSON (botocore
resolves it first among the protocols the model lists).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from botocore.awsrequest import AWSResponse

THROTTLING = "throttling"
INTERNAL_FAILURE = "internal-failure"
SERVICE_UNAVAILABLE = "service-unavailable"
ACCESS_DENIED = "access-denied"


@dataclass(frozen=True)
class ErrorAnswer:
    status: int
    code: str
    message: str


_THROTTLING_BY_SERVICE = {
    "sns": ErrorAnswer(429, "Throttled", "Rate exceeded"),
    "s3": ErrorAnswer(503, "SlowDown", "Please reduce your request rate."),
    "scheduler": ErrorAnswer(429, "ThrottlingException", "Rate exceeded"),
    "service-quotas": ErrorAnswer(400, "TooManyRequestsException", "Rate exceeded"),
}
_DEFAULT_THROTTLING = ErrorAnswer(400, "ThrottlingException", "Rate exceeded")


def error_answer(kind: str, service: str) -> ErrorAnswer:
    if kind == THROTTLING:
        return _THROTTLING_BY_SERVICE.get(service, _DEFAULT_THROTTLING)
    if kind == INTERNAL_FAILURE:
        code = "InternalError" if service == "s3" else "InternalFailure"
        return ErrorAnswer(500, code, "We encountered an internal error. Please try again.")
    if kind == SERVICE_UNAVAILABLE:
        return ErrorAnswer(503, "ServiceUnavailable", "The service is unavailable. Please try again later.")
    if kind == ACCESS_DENIED:
        return ErrorAnswer(400, "AccessDeniedException", "User is not authorized to perform this action")
    raise ValueError(f"no error answer for {kind!r}")


def error_response(url: str, service: str, protocol: str, answer: ErrorAnswer) -> AWSResponse:
    """An HTTP response carrying `answer` in `protocol`, as botocore would receive it from AWS."""
    headers = {"x-amzn-RequestId": "chaos-injected"}
    if protocol == "json":
        headers["Content-Type"] = "application/x-amz-json-1.1"
        body = json.dumps({"__type": answer.code, "message": answer.message}).encode()
    elif protocol == "rest-json":
        headers["Content-Type"] = "application/json"
        headers["x-amzn-ErrorType"] = answer.code
        body = json.dumps({"Message": answer.message}).encode()
    elif protocol == "query":
        headers["Content-Type"] = "text/xml"
        body = (
            f"<ErrorResponse><Error><Type>Sender</Type><Code>{answer.code}</Code><Message>{answer.message}"
            "</Message></Error><RequestId>chaos-injected</RequestId></ErrorResponse>"
        ).encode()
    elif protocol == "rest-xml":
        headers["Content-Type"] = "application/xml"
        body = (
            f"<Error><Code>{answer.code}</Code><Message>{answer.message}</Message>"
            "<RequestId>chaos-injected</RequestId></Error>"
        ).encode()
    else:
        raise ValueError(f"{service}: protocol {protocol!r} is not spelt here")
    return AWSResponse(url, answer.status, headers, _Body(body))


class _Body:
    """The raw body AWSResponse reads (`stream()`), already complete."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: object) -> list[bytes]:
        return [self._data]
