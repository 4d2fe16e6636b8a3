"""The relaunch request: exactly what CreateTrainingJob accepts, derived from botocore's model."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore.model import ListShape, MapShape, Shape, StructureShape
from botocore.validate import ParamValidator

from tests.conftest import load_fixture
from trainguard.adapters.service_model import create_training_job_shape
from trainguard.domain.naming import is_valid_job_name, retry_job_name
from trainguard.domain.request_builder import RelaunchImpossible, build_relaunch_request

MODEL = botocore.session.get_session().get_service_model("sagemaker")
CREATE_INPUT = MODEL.operation_model("CreateTrainingJob").input_shape
DESCRIBE_OUTPUT = MODEL.operation_model("DescribeTrainingJob").output_shape
DESCRIBE_SAMPLES = sorted(
    p.name for p in (Path(__file__).parents[1] / "fixtures" / "describe_training_job").glob("ack_fixture.*.json")
)


def assert_valid_create_request(request: dict[str, Any]) -> None:
    report = ParamValidator().validate(request, CREATE_INPUT)
    assert not report.has_errors(), report.generate_report()
    assert is_valid_job_name(request["TrainingJobName"])


def fill(shape: Shape, depth: int = 0) -> Any:
    """A value for every member of `shape`, recursively: the fullest response the model allows."""
    if isinstance(shape, StructureShape):
        if depth > 8:
            return {}
        return {name: fill(member, depth + 1) for name, member in shape.members.items()}
    if isinstance(shape, ListShape):
        return [fill(shape.member, depth + 1)]
    if isinstance(shape, MapShape):
        return {"key": fill(shape.value, depth + 1)}
    enum = getattr(shape, "enum", None)
    return {
        "string": enum[0] if enum else "v" * max(int(shape.metadata.get("min", 1)), 5),
        "integer": int(shape.metadata.get("min", 1)),
        "long": int(shape.metadata.get("min", 1)),
        "boolean": True,
        "double": 1.0,
        "float": 1.0,
        "timestamp": datetime(2026, 1, 1, tzinfo=UTC),
        "blob": b"x",
    }[shape.type_name]


def valid_relaunch_request(description: dict[str, Any], attempt: int) -> dict[str, Any]:
    """The request for that attempt's relaunch of the described job, checked valid for CreateTrainingJob."""
    built = build_relaunch_request(
        description,
        create_training_job_shape(),
        new_job_name=retry_job_name(description["TrainingJobName"], attempt),
        tags={"trainguard:enabled": "true"},
    )
    assert_valid_create_request(built.request)
    return built.request


@pytest.mark.parametrize("sample", DESCRIBE_SAMPLES)
def test_shared_describe_samples_become_valid_requests(sample: str) -> None:
    description = load_fixture(f"describe_training_job/{sample}")
    request = valid_relaunch_request(description, 1)
    assert request["RoleArn"] == description["RoleArn"]
    for field in ("CheckpointConfig", "HyperParameters", "ResourceConfig", "StoppingCondition"):
        if description.get(field):
            assert request[field] == {k: v for k, v in description[field].items() if v is not None}


def test_a_response_with_every_field_of_the_output_shape_filled() -> None:
    description = fill(DESCRIBE_OUTPUT)
    description["TrainingJobName"] = "n" * 63
    request = valid_relaunch_request(description, 3)
    # Everything both shapes share carries over, except the losing side of an exclusive pair (the fill sets
    # InstancePreferences, which excludes spot: test_create_request_rules.py); nothing output-only does.
    shared = (set(DESCRIBE_OUTPUT.members) & set(CREATE_INPUT.members)) - {
        "TrainingJobName",
        "Tags",
        "EnableManagedSpotTraining",
    }
    assert shared <= set(request)
    assert set(request) <= set(CREATE_INPUT.members)
    assert "TrainingJobArn" not in request and "FailureReason" not in request


def test_checkpoint_config_is_kept_exactly() -> None:
    description = {
        "TrainingJobName": "j",
        "RoleArn": "arn:aws:iam::123456789012:role/R",
        "OutputDataConfig": {"S3OutputPath": "s3://b/out"},
        "CheckpointConfig": {"S3Uri": "s3://b/ckpt/j", "LocalPath": "/opt/ml/checkpoints"},
        "AlgorithmSpecification": {
            "TrainingImage": "img",
            "TrainingInputMode": "File",
            "AlgorithmName": None,
        },
    }
    built = build_relaunch_request(description, create_training_job_shape(), new_job_name="j-retry1", tags={})
    assert built.request["CheckpointConfig"] == description["CheckpointConfig"]
    assert "AlgorithmName" not in built.request["AlgorithmSpecification"]


def test_an_empty_structure_that_would_be_invalid_is_dropped_and_recorded() -> None:
    description = {
        "TrainingJobName": "j",
        "RoleArn": "arn:aws:iam::123456789012:role/R",
        "OutputDataConfig": {"S3OutputPath": "s3://b/out"},
        "VpcConfig": {},
    }
    built = build_relaunch_request(description, create_training_job_shape(), new_job_name="j-retry1", tags={})
    assert "VpcConfig" not in built.request
    assert any(d.startswith("VpcConfig") for d in built.dropped)
    assert_valid_create_request(built.request)


def test_a_description_without_a_role_cannot_be_relaunched() -> None:
    with pytest.raises(RelaunchImpossible, match="RoleArn"):
        build_relaunch_request(
            {"TrainingJobName": "j", "OutputDataConfig": {"S3OutputPath": "s3://b"}},
            create_training_job_shape(),
            new_job_name="j-retry1",
            tags={},
        )


def test_more_than_fifty_tags_cannot_be_sent() -> None:
    tags = {f"k{i}": "v" for i in range(51)}
    with pytest.raises(RelaunchImpossible, match="50"):
        build_relaunch_request(
            {"TrainingJobName": "j", "RoleArn": "r", "OutputDataConfig": {"S3OutputPath": "s"}},
            create_training_job_shape(),
            new_job_name="j-retry1",
            tags=tags,
        )
