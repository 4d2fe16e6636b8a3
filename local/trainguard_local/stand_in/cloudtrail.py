"""What CloudTrail would deliver to EventBridge when a simulated API call fails.

The envelope is EventBridge's "AWS API Call via CloudTrail"
(https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-service-event-cloudtrail.html): the
CloudTrail record is the `detail`; `requestParameters` are spelt as CloudTrail records them, the
first letter of every member name lowered, tags as lowercase key/value (see the real record in
tests/fixtures/events/cloudtrail_record.create_training_job.*).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from botocore.model import ListShape, MapShape, Shape, StructureShape

from trainguard_local.stand_in.json_api import ApiError
from trainguard_local.stand_in.sagemaker_api_model import SAGEMAKER_API


def camel_case_record(value: Any, shape: Shape) -> Any:
    """`value` spelt as CloudTrail records it: the first letter of every member name lowered."""
    if isinstance(shape, StructureShape):
        return {n[:1].lower() + n[1:]: camel_case_record(v, shape.members[n]) for n, v in value.items()}
    if isinstance(shape, ListShape):
        return [camel_case_record(item, shape.member) for item in value]
    if isinstance(shape, MapShape):
        return {key: camel_case_record(item, shape.value) for key, item in value.items()}
    return value


def failed_call_event(
    operation: str, params: dict[str, Any], error: ApiError, *, account: str, region: str, now: datetime
) -> dict[str, Any]:
    shape = SAGEMAKER_API.service_model.operation_model(operation).input_shape
    request = camel_case_record(params, shape)
    if isinstance(request.get("tags"), list):  # CloudTrail writes tag members in lower case too
        request["tags"] = [{"key": t.get("key"), "value": t.get("value")} for t in request["tags"]]
    record = {
        "eventVersion": "1.11",
        "eventTime": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "eventSource": "sagemaker.amazonaws.com",
        "eventName": operation,
        "awsRegion": region,
        "recipientAccountId": account,
        "userIdentity": {"type": "AssumedRole", "arn": f"arn:aws:sts::{account}:assumed-role/ml-team/launcher"},
        "requestParameters": request,
        "responseElements": None,
        "errorCode": error.code,
        "errorMessage": error.message,
        "eventType": "AwsApiCall",
        "managementEvent": True,
    }
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "AWS API Call via CloudTrail",
        "source": "aws.sagemaker",
        "account": account,
        "time": record["eventTime"],
        "region": region,
        "resources": [],
        "detail": record,
    }


def cloudtrail_records(
    deliver: Callable[[dict[str, Any]], None], *, account: str, region: str, clock: Callable[[], datetime]
) -> Callable[[str, dict, ApiError], None]:
    """An `on_failed_call` for the simulated SageMaker: each failed CreateTrainingJob call, as CloudTrail's event
    stamped with the stand-in's clock (the virtual time the call was made at), handed to `deliver`."""

    def record(operation: str, params: dict[str, Any], error: ApiError) -> None:
        if operation == "CreateTrainingJob":
            deliver(failed_call_event(operation, params, error, account=account, region=region, now=clock()))

    return record


def cloudtrail_forwarder(
    events_client: Any, *, account: str, region: str, clock: Callable[[], datetime]
) -> Callable[[str, dict, ApiError], None]:
    """An `on_failed_call` for the simulated SageMaker: failed CreateTrainingJob calls reach EventBridge."""

    def forward(event: dict[str, Any]) -> None:
        events_client.put_events(
            Entries=[
                {
                    "Source": event["source"],
                    "DetailType": event["detail-type"],
                    "Detail": json.dumps(event["detail"]),
                    "Resources": [],
                }
            ]
        )

    return cloudtrail_records(forward, account=account, region=region, clock=clock)
