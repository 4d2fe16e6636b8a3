"""The EventBridge "SageMaker Training Job State Change" event.

Shape: https://docs.aws.amazon.com/sagemaker/latest/dg/automating-sagemaker-with-eventbridge.html
(samples in tests/fixtures/events). The event is a hint: handlers describe the job again before
acting. Tags may come as a {key: value} map or a [{Key, Value}] list (docs/aws-facts.md); both are read.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainguard.domain.model import TrainingJob
from trainguard.events.training_job import event_detail, job_from_description

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
    event, detail = event_detail(event, SOURCE, DETAIL_TYPE, "a training job state change")
    job = job_from_description(detail, detail.get("Tags"))
    return TrainingJobStateChange(
        event_id=str(event.get("id", "")),
        region=str(event.get("region", "")),
        account=str(event.get("account", "")),
        job=job,
    )
