"""The "SageMaker Training Job State Change" events the simulated control plane emits.

Shaped like AWS's documented sample (tests/fixtures/events/sagemaker_training_job_state_change.awsdocs.json,
from https://docs.aws.amazon.com/sagemaker/latest/dg/automating-sagemaker-with-eventbridge.html):
times are epoch-millisecond numbers, Tags is a {key: value} map, FailureReason appears only when Failed.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

EVENT_SOURCE = "aws.sagemaker"
EVENT_DETAIL_TYPE = "SageMaker Training Job State Change"

# The detail carries only the members of AWS's documented sample. CheckpointConfig, RetryStrategy,
# Environment and EnableManagedSpotTraining are left out on purpose: the sample does not show them,
# so the production code must describe the job to read them (docs/aws-facts.md, "SageMaker Training Job State
# Change"). A simulation that offered them would let code pass here and fail against AWS.
EVENT_DETAIL_MEMBERS = (
    "TrainingJobName",
    "TrainingJobArn",
    "TrainingJobStatus",
    "SecondaryStatus",
    "FailureReason",
    "HyperParameters",
    "AlgorithmSpecification",
    "RoleArn",
    "InputDataConfig",
    "OutputDataConfig",
    "ResourceConfig",
    "VpcConfig",
    "StoppingCondition",
    "CreationTime",
    "TrainingStartTime",
    "TrainingEndTime",
    "LastModifiedTime",
    "SecondaryStatusTransitions",
)

StateChangeListener = Callable[[dict[str, Any]], None]


def build_state_change_event(
    description: Mapping[str, Any],
    tags: list[dict[str, str]],
    *,
    account_id: str,
    region: str,
    time: datetime,
) -> dict[str, Any]:
    """Build the EventBridge event for a job whose DescribeTrainingJob answer is ``description``."""
    detail = {name: description[name] for name in EVENT_DETAIL_MEMBERS if name in description}
    if description.get("TrainingJobStatus") != "Failed":
        detail.pop("FailureReason", None)
    detail["Tags"] = {tag["Key"]: tag["Value"] for tag in tags}
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": EVENT_DETAIL_TYPE,
        "source": EVENT_SOURCE,
        "account": account_id,
        "time": time.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [description["TrainingJobArn"]],
        "detail": _times_as_epoch_millis(detail),
    }


def eventbridge_forwarder(events_client: Any, bus_name: str = "default") -> StateChangeListener:
    """Return an ``on_event`` callback that puts each event on ``bus_name`` through ``events_client``."""

    def forward(event: dict[str, Any]) -> None:
        response = events_client.put_events(
            Entries=[
                {
                    "Source": event["source"],
                    "DetailType": event["detail-type"],
                    "Detail": json.dumps(event["detail"]),
                    "Resources": event["resources"],
                    "Time": datetime.strptime(event["time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC),
                    "EventBusName": bus_name,
                }
            ]
        )
        if response.get("FailedEntryCount"):
            raise RuntimeError(f"EventBridge refused the event: {response['Entries']}")

    return forward


def _times_as_epoch_millis(value: Any) -> Any:
    if isinstance(value, datetime):
        return round(value.timestamp() * 1000)
    if isinstance(value, dict):
        return {key: _times_as_epoch_millis(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_times_as_epoch_millis(item) for item in value]
    return value
