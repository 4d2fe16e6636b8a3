"""A training job as DescribeTrainingJob gives it, read from a JSON file for `trainguard preflight --describe-file`:
`aws sagemaker describe-training-job --training-job-name NAME > job.json`, boto3's answer dumped as JSON, or a
CreateTrainingJob request (its fields below have the same names and shapes).

The fields read, from botocore's SageMaker model (botocore/data/sagemaker/2017-07-24/service-2.json,
DescribeTrainingJobResponse, botocore 1.44.8): `Environment` (TrainingEnvironmentMap: at most 100 string keys to
string values), `HyperParameters` (HyperParameters: at most 100, string to string), `ResourceConfig.InstanceType`
and `.InstanceCount` (absent for a job of `InstanceGroups`), `StoppingCondition.MaxRuntimeInSeconds` and
`EnableManagedSpotTraining`; `TrainingJobName` (TrainingJobName: `[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}`, checked
before it is printed) names the job in the report. Other fields are not read. A file that
is no JSON object, or a field of the wrong type, is unusable input (exit 2), named with its path in the file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainguard_cli.inputs import UnusableInput, read_text

_JOB_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")  # botocore's TrainingJobName pattern


@dataclass(frozen=True)
class DescribedJob:
    name: str | None = None
    instance_type: str | None = None
    instance_count: int | None = None
    max_runtime_seconds: int | None = None
    spot: bool = False
    environment: dict[str, str] = field(default_factory=dict)
    hyperparameters: dict[str, str] = field(default_factory=dict)


def read_described_job(path: Path) -> DescribedJob:
    """The job described in `path` (`-`: standard input)."""
    text = read_text(None, path) or ""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise UnusableInput(f"{path}: not JSON ({err})") from None
    if not isinstance(data, dict):
        raise UnusableInput(f"{path}: not a DescribeTrainingJob answer (a JSON object)")
    where = str(path)
    name = _typed(data, "TrainingJobName", str, where)
    if name is not None and not _JOB_NAME.fullmatch(name):
        raise UnusableInput(f"{where}: TrainingJobName {json.dumps(name)[:80]} is no SageMaker job name")
    resources = _object(data, "ResourceConfig", where)
    stopping = _object(data, "StoppingCondition", where)
    return DescribedJob(
        name=name,
        instance_type=_typed(resources, "InstanceType", str, f"{where}: ResourceConfig"),
        instance_count=_typed(resources, "InstanceCount", int, f"{where}: ResourceConfig"),
        max_runtime_seconds=_typed(stopping, "MaxRuntimeInSeconds", int, f"{where}: StoppingCondition"),
        spot=_typed(data, "EnableManagedSpotTraining", bool, where) or False,
        environment=_string_map(data, "Environment", where),
        hyperparameters=_string_map(data, "HyperParameters", where),
    )


def _typed(data: dict[str, Any], key: str, kind: type, where: str) -> Any:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise UnusableInput(f"{where}: {key} must be a JSON {_JSON_NAMES[kind]}, not {json.dumps(value)[:80]}")
    return value


def _object(data: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    return _typed(data, key, dict, where) or {}


def _string_map(data: dict[str, Any], key: str, where: str) -> dict[str, str]:
    values = _object(data, key, where)
    for name, value in values.items():
        if not isinstance(value, str):
            raise UnusableInput(
                f"{where}: {key}.{name} must be a string, as SageMaker sends it, not {json.dumps(value)[:80]}"
            )
    return values


_JSON_NAMES = {str: "string", int: "integer", bool: "true or false", dict: "object"}
