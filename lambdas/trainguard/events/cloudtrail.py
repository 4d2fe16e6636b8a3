"""The EventBridge "AWS API Call via CloudTrail" event of a CreateTrainingJob call that failed.

A launch refused with ResourceLimitExceeded creates no job and sends no state change. CloudTrail
records the call, and EventBridge delivers the record to the default bus as an event whose
`source` is `aws.sagemaker`, `detail-type` "AWS API Call via CloudTrail" and `detail` the CloudTrail
record itself (eventSource, eventName, errorCode, errorMessage, requestParameters, userIdentity,
...). That needs a trail with logging enabled, and delivery is best effort:
https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-service-event-cloudtrail.html
The rule's pattern is `infra/event_patterns.failed_training_job_launch_pattern`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from trainguard.domain.policy import parse_tag_list
from trainguard.events.times import parse_aws_time
from trainguard.events.training_job import MalformedInput, event_detail

SOURCE = "aws.sagemaker"
DETAIL_TYPE = "AWS API Call via CloudTrail"
EVENT_SOURCE = "sagemaker.amazonaws.com"
EVENT_NAME = "CreateTrainingJob"


@dataclass(frozen=True)
class FailedLaunch:
    event_id: str
    region: str
    account: str
    job_name: str  # the name the user asked for; no job of that name was created
    error_code: str  # "ResourceLimitExceeded"
    error_message: str
    request_parameters: dict[str, Any]  # as CloudTrail recorded them: camelCase, see domain/cloudtrail_launch
    tags: dict[str, str]
    event_time: datetime | None
    requester_arn: str  # who called CreateTrainingJob ("" when the record does not say)


def parse_failed_launch(event: object) -> FailedLaunch:
    """Read one event. Raises `MalformedInput` with a clear message when it is not the record of a
    failed CreateTrainingJob call."""
    event, detail = event_detail(event, SOURCE, DETAIL_TYPE, "a SageMaker API call via CloudTrail")
    if detail.get("eventSource") != EVENT_SOURCE or detail.get("eventName") != EVENT_NAME:
        raise MalformedInput(
            f"not a {EVENT_NAME} call: eventSource={detail.get('eventSource')!r}, eventName={detail.get('eventName')!r}"
        )
    error_code = detail.get("errorCode")
    if not isinstance(error_code, str) or not error_code:
        raise MalformedInput(f"the {EVENT_NAME} call has no errorCode: it did not fail")
    parameters = detail.get("requestParameters")
    if not isinstance(parameters, Mapping):
        raise MalformedInput(
            f"the record of the failed {EVENT_NAME} call has no requestParameters object "
            f"(found {type(parameters).__name__}), so the launch cannot be rebuilt"
        )
    job_name = parameters.get("trainingJobName")
    if not isinstance(job_name, str) or not job_name:
        raise MalformedInput("requestParameters.trainingJobName is missing or not a string")
    return FailedLaunch(
        event_id=_text(event.get("id")) or _text(detail.get("eventID")),
        region=_text(event.get("region")) or _text(detail.get("awsRegion")),
        account=_text(event.get("account")) or _text(detail.get("recipientAccountId")),
        job_name=job_name,
        error_code=error_code,
        error_message=_text(detail.get("errorMessage")),
        request_parameters=dict(parameters),
        tags=parse_tag_list(parameters.get("tags")),
        event_time=parse_aws_time(detail.get("eventTime")) or parse_aws_time(event.get("time")),
        requester_arn=_requester_arn(detail.get("userIdentity")),
    )


def _requester_arn(identity: object) -> str:
    """userIdentity.arn; for an assumed role without one, the role that was assumed."""
    if not isinstance(identity, Mapping):
        return ""
    if arn := _text(identity.get("arn")):
        return arn
    session = identity.get("sessionContext")
    issuer = session.get("sessionIssuer") if isinstance(session, Mapping) else None
    return _text(issuer.get("arn")) if isinstance(issuer, Mapping) else ""


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
