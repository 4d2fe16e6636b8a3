"""DescribeTrainingJob responses and SageMaker state-change events -> `TrainingJob`."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from trainguard.domain.model import TrainingJob
from trainguard.domain.policy import parse_tag_list
from trainguard.events.times import parse_aws_time

# Keys our fixtures carry to cite their source; never part of an AWS response.
_FIXTURE_KEYS = ("_source", "_note", "_reconstructed")


class MalformedInput(ValueError):
    """The input is not a training job description or event we can read; the message says what is wrong."""


def event_detail(
    event: object, source: str, detail_type: str, what: str
) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """An EventBridge event from `source` of `detail_type`, and its `detail` (`what` names it in the error)."""
    if not isinstance(event, Mapping):
        raise MalformedInput(f"the event must be a JSON object, not {type(event).__name__}")
    if event.get("source") != source or event.get("detail-type") != detail_type:
        raise MalformedInput(f"not {what}: source={event.get('source')!r}, detail-type={event.get('detail-type')!r}")
    detail: Any = event.get("detail")
    if not isinstance(detail, Mapping):
        raise MalformedInput(f"the event has no detail object ({what})")
    return event, detail


def job_from_description(description: Mapping[str, Any], tags: object = None) -> TrainingJob:
    """A `TrainingJob` from a DescribeTrainingJob response (boto3's, or the AWS CLI's JSON) and its tags."""
    if not isinstance(description, Mapping):
        raise MalformedInput(f"a DescribeTrainingJob response must be an object, not {type(description).__name__}")
    clean = {k: v for k, v in description.items() if k not in _FIXTURE_KEYS and k != "ResponseMetadata"}
    name = clean.get("TrainingJobName")
    status = clean.get("TrainingJobStatus")
    if not isinstance(name, str) or not name:
        raise MalformedInput("TrainingJobName is missing or not a string")
    if not isinstance(status, str) or not status:
        raise MalformedInput(f"TrainingJobStatus of {name} is missing or not a string")
    checkpoint = clean.get("CheckpointConfig")
    s3_uri = checkpoint.get("S3Uri", "") if isinstance(checkpoint, Mapping) else ""
    return TrainingJob(
        name=name,
        arn=_text(clean.get("TrainingJobArn")),
        status=status,
        secondary_status=_text(clean.get("SecondaryStatus")),
        failure_reason=_text(clean.get("FailureReason")),
        tags=parse_tag_list(tags if tags is not None else clean.get("Tags")),
        checkpoint_s3_uri=s3_uri if isinstance(s3_uri, str) else "",
        managed_spot=clean.get("EnableManagedSpotTraining") is True,
        creation_time=parse_aws_time(clean.get("CreationTime")),
        end_time=parse_aws_time(clean.get("TrainingEndTime")),
        training_since=_training_since(clean),
        description=clean,
    )


def _training_since(description: Mapping[str, Any]) -> datetime | None:
    """The newest transition into Training (a spot job restarts after Interrupted), else TrainingStartTime."""
    transitions = description.get("SecondaryStatusTransitions")
    starts = [
        parse_aws_time(t.get("StartTime"))
        for t in (transitions if isinstance(transitions, list) else [])
        if isinstance(t, Mapping) and t.get("Status") == "Training"
    ]
    known = [start for start in starts if start is not None]
    return max(known) if known else parse_aws_time(description.get("TrainingStartTime"))


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
