"""The words of the domain: categories, decisions, and the facts about a training job."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


class Decision(StrEnum):
    RETRY = "retry"  # relaunch from the last checkpoint
    QUOTA = "quota"  # a quota blocks it: request an increase (issue 4); for now, tell
    NOTIFY = "notify"  # tell a person; do nothing else
    IGNORE = "ignore"  # nothing to do and nothing worth telling
    STOP = "stop"  # stop a verified stall (the Stopped event then relaunches it)


class Category(StrEnum):
    INTERNAL = "internal"
    CAPACITY = "capacity"
    HARDWARE = "hardware"
    COLLECTIVE_TIMEOUT = "collective-timeout"
    SPOT_INTERRUPTION = "spot-interruption"
    QUOTA = "quota"
    USER_CODE = "user-code"
    OOM = "oom"
    CONFIG = "config"  # configuration or permission: role, VPC, image, validation, disk size
    DATA = "data"
    MAX_RUNTIME = "max-runtime"
    STALL = "stall"  # trainguard stopped it as stalled (no logs, idle GPUs): resume from the checkpoint
    SLOWDOWN = "slowdown"  # trainguard stopped it as slow, with its owner's leave: resume on new instances
    DIVERGED = "diverged"  # trainguard stopped it as diverged, with its owner's leave: not resumed
    STOPPED = "stopped"  # stopped by a person or a program
    STUCK_STOPPING = "stuck-stopping"  # a stop that has not finished in 30 minutes
    CHECKPOINT_STALE = "checkpoint-stale"  # the job trains, but its checkpoints stopped reaching S3
    COMPLETED = "completed"
    IN_PROGRESS = "in-progress"
    UNKNOWN = "unknown"


class TextSource(StrEnum):
    """Who wrote the words a decision was read from: what they may buy depends on it (docs/decisions.md)."""

    API_ERROR = "api-error"  # an AWS API's error to trainguard's own call, or to CreateTrainingJob in CloudTrail
    SAGEMAKER = "sagemaker"  # SageMaker's own words: a status, a FailureReason before any text of the job's own
    TRAINING_SCRIPT = "training-script"  # what the job's code can write: FailureReason from AlgorithmError on, logs


@dataclass(frozen=True)
class Classification:
    category: Category
    decision: Decision
    reason: str  # a sentence a person reads: why this category, and why this decision
    source: TextSource = TextSource.SAGEMAKER  # who wrote the words that decided it


@dataclass(frozen=True)
class TrainingJob:
    """What trainguard knows about one training job, from DescribeTrainingJob and ListTags."""

    name: str
    arn: str
    status: str
    secondary_status: str = ""
    failure_reason: str = ""
    tags: dict[str, str] = field(default_factory=dict)
    checkpoint_s3_uri: str = ""
    managed_spot: bool = False
    creation_time: datetime | None = None
    end_time: datetime | None = None
    # When training last (re)started: the newest transition into Training, else TrainingStartTime.
    training_since: datetime | None = None
    # The DescribeTrainingJob response, as received: the source of the relaunch request.
    description: dict[str, Any] = field(default_factory=dict)

    @property
    def is_terminal(self) -> bool:
        return self.status in ("Completed", "Failed", "Stopped")


def instances_of(resource_config: object) -> tuple[str, int]:
    """A ResourceConfig's instance type and its total instance count; ("", 0) when it says neither.

    In order: the type SageMaker selected from `InstancePreferences` (SelectedInstanceType/Count, in a
    DescribeTrainingJob response once it chose), the first instance group's type with the groups added up
    (a heterogeneous cluster), InstanceType/InstanceCount, and for a request with preferences the first
    preference (the type SageMaker tries first)."""
    if not isinstance(resource_config, dict):
        return "", 0
    selected = resource_config.get("SelectedInstanceType")
    if isinstance(selected, str) and selected:
        count = resource_config.get("SelectedInstanceCount")
        return selected, count if type(count) is int else _job_level_count(resource_config)
    groups = resource_config.get("InstanceGroups") or [resource_config]
    valid = [g for g in groups if isinstance(g, dict)]
    count = sum(g["InstanceCount"] for g in valid if type(g.get("InstanceCount")) is int)
    kind = next((str(g["InstanceType"]) for g in valid if g.get("InstanceType")), "")
    preferences = resource_config.get("InstancePreferences")
    if not kind and isinstance(preferences, list) and preferences and isinstance(preferences[0], dict):
        first = preferences[0]
        own = first.get("InstanceCount")
        return str(first.get("InstanceType", "")), own if type(own) is int else _job_level_count(resource_config)
    return kind, count


def instance_types_in(resource_config: object) -> tuple[str, ...]:
    """Every instance type a ResourceConfig asks for or ran on: its own, its groups', its preferences'."""
    if not isinstance(resource_config, dict):
        return ()
    groups, preferences = resource_config.get("InstanceGroups") or [], resource_config.get("InstancePreferences") or []
    parts = [resource_config, *groups, *preferences]
    found = [p.get(key) for p in parts if isinstance(p, dict) for key in ("InstanceType", "SelectedInstanceType")]
    return tuple(dict.fromkeys(str(t) for t in found if isinstance(t, str) and t))


def _job_level_count(resource_config: dict[str, Any]) -> int:
    count = resource_config.get("InstanceCount")
    return count if type(count) is int else 0
