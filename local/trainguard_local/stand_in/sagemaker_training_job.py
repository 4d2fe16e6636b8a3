"""One simulated training job: its state, its status history, and its DescribeTrainingJob answer."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from trainguard_local.stand_in.sagemaker_api_model import SAGEMAKER_API

# StatusMessage of each SecondaryStatusTransition. Sources, from tests/fixtures/secondary_status.json:
#   documented: botocore's SecondaryStatusTransition.StatusMessage documentation (same text at
#     https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_SecondaryStatusTransition.html);
#   observed: status lines the SageMaker Python SDK printed in public issues (it prints StatusMessage);
#   paraphrased: no StatusMessage found; the text is the SecondaryStatus meaning from botocore's docs
#     (Interrupted, MaxRuntimeExceeded, MaxWaitTimeExceeded).
STATUS_MESSAGES = {
    "Starting": "Starting the training job.",  # documented
    "Training": "Training image download completed. Training in progress.",  # documented
    "Uploading": "Uploading generated training model",  # observed, aws/sagemaker-python-sdk#658
    "Completed": "Training job completed",  # observed, public notebook output
    "Failed": "Training job failed",  # observed, aws/sagemaker-python-sdk#658
    "Stopping": "Stopping the training job",  # observed, AWS secure-data-science sample
    "Stopped": "Training job stopped",  # observed, same sample
    "Interrupted": "The job stopped because the managed spot training instances were interrupted.",
    "MaxRuntimeExceeded": "The job stopped because it exceeded the maximum allowed runtime.",
    "MaxWaitTimeExceeded": "The job stopped because it exceeded the maximum allowed wait time.",
}

TERMINAL_STATUSES = frozenset({"Completed", "Failed", "Stopped"})
FAILURE_REASON_LIMIT = 1024  # FailureReason is cut at about 1,024 characters (docs/aws-facts.md)


def _echoed_request_members() -> frozenset[str]:
    """Members of CreateTrainingJob that DescribeTrainingJob gives back (everything but Tags and the like)."""
    create = SAGEMAKER_API.service_model.operation_model("CreateTrainingJob").input_shape
    return frozenset(create.members) & SAGEMAKER_API.output_member_names("DescribeTrainingJob")


def _flags_described_as_false() -> frozenset[str]:
    """Boolean request members the service reports as false when the request left them out.

    Seen in the AWS ACK controller's describe fixtures (tests/fixtures/describe_training_job/).
    """
    create = SAGEMAKER_API.service_model.operation_model("CreateTrainingJob").input_shape
    return frozenset(name for name in _echoed_request_members() if create.members[name].type_name == "boolean")


ECHOED_REQUEST_MEMBERS = _echoed_request_members()
FLAGS_DESCRIBED_AS_FALSE = _flags_described_as_false()


SPOT_BILLED_SHARE = 0.3


@dataclass
class TrainingJobRecord:
    name: str
    arn: str
    request: dict[str, Any]
    tags: list[dict[str, str]]
    creation_time: datetime
    status: str = "InProgress"
    secondary_status: str = "Starting"
    last_modified_time: datetime | None = None
    training_start_time: datetime | None = None
    training_end_time: datetime | None = None
    failure_reason: str | None = None
    transitions: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.last_modified_time = self.creation_time
        self.transitions.append(_transition(self.secondary_status, self.creation_time))

    @property
    def is_spot(self) -> bool:
        return bool(self.request.get("EnableManagedSpotTraining"))

    def instances_by_type(self) -> dict[str, int]:
        """Instance counts this job asks for, per instance type (plain or heterogeneous cluster)."""
        resource = self.request.get("ResourceConfig", {})
        counts: dict[str, int] = {}
        # "SageMaker AI checks your service quota for every type in the list, not just the one it selects"
        # (train-instance-preferences.html): each preference counts with its own count, or the job's.
        preferences = [
            {
                "InstanceType": p.get("InstanceType"),
                "InstanceCount": p.get("InstanceCount", resource.get("InstanceCount", 0)),
            }
            for p in resource.get("InstancePreferences") or []
        ]
        groups = preferences or resource.get("InstanceGroups") or [resource]
        for group in groups:
            if group.get("InstanceType"):
                counts[group["InstanceType"]] = counts.get(group["InstanceType"], 0) + group.get("InstanceCount", 0)
        return counts

    def move_to(self, status: str, secondary_status: str, now: datetime) -> None:
        """Record a status change: close the open transition, open the next one."""
        self.transitions[-1]["EndTime"] = now
        self.transitions.append(_transition(secondary_status, now))
        self.status = status
        self.secondary_status = secondary_status
        self.last_modified_time = now
        if secondary_status == "Training" and self.training_start_time is None:
            self.training_start_time = now
        if status in TERMINAL_STATUSES:
            self.training_end_time = now
            # The last transition of a finished job is closed at once.
            self.transitions[-1]["EndTime"] = now

    def describe(self) -> dict[str, Any]:
        """The DescribeTrainingJob answer: the request's echoed members plus the job's state."""
        described = {k: copy.deepcopy(v) for k, v in self.request.items() if k in ECHOED_REQUEST_MEMBERS}
        for flag in FLAGS_DESCRIBED_AS_FALSE:
            described.setdefault(flag, False)
        described.update(
            TrainingJobName=self.name,
            TrainingJobArn=self.arn,
            TrainingJobStatus=self.status,
            SecondaryStatus=self.secondary_status,
            CreationTime=self.creation_time,
            LastModifiedTime=self.last_modified_time,
            SecondaryStatusTransitions=copy.deepcopy(self.transitions),
        )
        optional = {
            "FailureReason": self.failure_reason if self.status == "Failed" else None,
            "TrainingStartTime": self.training_start_time,
            "TrainingEndTime": self.training_end_time,
            "ModelArtifacts": self._model_artifacts(),
        }
        described.update({k: v for k, v in optional.items() if v is not None})
        if self.training_start_time and self.training_end_time:
            seconds = int((self.training_end_time - self.training_start_time).total_seconds())
            # A spot job is billed for less than its training time: "You can calculate the savings from using managed
            # spot training using the formula (1 - BillableTimeInSeconds / TrainingTimeInSeconds) * 100" (botocore,
            # DescribeTrainingJobResponse.BillableTimeInSeconds); the simulation bills SPOT_BILLED_SHARE of the time
            # (an assumption: a 70% saving).
            billable = round(seconds * SPOT_BILLED_SHARE) if self.is_spot else seconds
            described.update(TrainingTimeInSeconds=seconds, BillableTimeInSeconds=billable)
        return described

    def _model_artifacts(self) -> dict[str, str] | None:
        if self.status != "Completed":
            return None
        output_path = self.request["OutputDataConfig"]["S3OutputPath"].rstrip("/")
        return {"S3ModelArtifacts": f"{output_path}/{self.name}/output/model.tar.gz"}


def _transition(secondary_status: str, start: datetime) -> dict[str, Any]:
    return {
        "Status": secondary_status,
        "StartTime": start,
        "StatusMessage": STATUS_MESSAGES[secondary_status],
    }
