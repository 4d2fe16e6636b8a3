"""The EventBridge "SageMaker Training Job State Change" event.

Shape: https://docs.aws.amazon.com/sagemaker/latest/dg/automating-sagemaker-with-eventbridge.html
(samples in tests/fixtures/events). The event is a hint: handlers describe the job again before
acting. Tags may come as a {key: value} map or a [{Key, Value}] list (docs/aws-facts.md); both are read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trainguard.domain.model import TrainingJob
from trainguard.events.training_job import MalformedInput, job_from_description

SOURCE = "aws.sagemaker"
DETAIL_TYPE = "SageMaker Training Job State Change"


@dataclass(frozen=True)
class TrainingJobStateChange:
    event_id: str
    region: str
    account: str
    job: TrainingJob  # as the event tells it; not authoritative


def parse_state_change(event: object) -> TrainingJobStateChange:
    """Read one event. Raises `MalformedInput` with a clear message when it is not one we can read."""
    if not isinstance(event, Mapping):
        raise MalformedInput(f"the event must be a JSON object, not {type(event).__name__}")
    if event.get("source") != SOURCE or event.get("detail-type") != DETAIL_TYPE:
        raise MalformedInput(
            f"not a training job state change: source={event.get('source')!r}, detail-type={event.get('detail-type')!r}"
        )
    detail: Any = event.get("detail")
    if not isinstance(detail, Mapping):
        raise MalformedInput("the event has no detail object")
    job = job_from_description(detail, detail.get("Tags"))
    return TrainingJobStateChange(
        event_id=str(event.get("id", "")),
        region=str(event.get("region", "")),
        account=str(event.get("account", "")),
        job=job,
    )
