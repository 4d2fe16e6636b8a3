"""Members CreateTrainingJob refuses although DescribeTrainingJob returns them: the list is botocore's.

The first two tests read every documentation string of the CreateTrainingJob input in the installed
botocore model. They fail when a new botocore documents a read-only member, or a mutually exclusive
pair, that domain/create_request_rules.py does not know yet.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import botocore.session
import pytest
from botocore.model import ListShape, MapShape, Shape, StructureShape

from tests.unit.test_request_builder import DESCRIBE_OUTPUT, assert_valid_create_request, fill
from trainguard.adapters.service_model import create_training_job_shape
from trainguard.domain.create_request_rules import EXCLUSIONS, READ_ONLY_MEMBERS, strip_refused_members
from trainguard.domain.model import instances_of
from trainguard.domain.request_builder import build_relaunch_request

CREATE_INPUT = (
    botocore.session.get_session().get_service_model("sagemaker").operation_model("CreateTrainingJob").input_shape
)

# How the model says "returned, not accepted" (SelectedInstanceType: "This field is read-only and isn't accepted
# in CreateTrainingJob requests."), worded loosely so a rewording is still caught. "(read-only)" inside
# parentheses is FileSystemAccessMode's "ro (read-only)" mount mode, not a statement about the member.
READ_ONLY_WORDING = re.compile(
    r"(?<!\()read-only(?!\))|output-only|isn't accepted|is not accepted|not accepted in|"
    r"returned by\s+describetrainingjob|only in the response|ignored in (?:a |the )?request",
    re.IGNORECASE,
)
EXCLUSIVE_WORDING = re.compile(r"mutually exclusive|can't specify a value for .{0,60} and vice versa", re.IGNORECASE)


def documented_members(shape: Shape, path: str = "", seen: frozenset[str] = frozenset()) -> Iterator[tuple[str, str]]:
    """(path, plain documentation) of every member below `shape`; "[]" marks a list's items."""
    if isinstance(shape, StructureShape):
        if shape.name in seen:
            return
        for name, member in shape.members.items():
            member_path = f"{path}.{name}".lstrip(".")
            text = " ".join(re.sub(r"<[^>]+>", " ", member.documentation or "").split())
            yield member_path, text
            yield from documented_members(member, member_path, seen | {shape.name})
    elif isinstance(shape, ListShape):
        yield from documented_members(shape.member, path + "[]", seen)
    elif isinstance(shape, MapShape):
        yield from documented_members(shape.value, path + "{}", seen)


def test_every_member_botocore_documents_as_read_only_is_in_the_list() -> None:
    documented = {path for path, text in documented_members(CREATE_INPUT) if READ_ONLY_WORDING.search(text)}
    listed = {member.path for member in READ_ONLY_MEMBERS}
    assert documented, "the model documents no read-only member: the wording check itself is broken"
    assert documented == listed, (
        f"documented but not listed: {documented - listed}; listed, gone: {listed - documented}"
    )


def test_every_mutually_exclusive_member_botocore_documents_is_covered() -> None:
    documented = {path for path, text in documented_members(CREATE_INPUT) if EXCLUSIVE_WORDING.search(text)}
    covered = {rule.kept for rule in EXCLUSIONS} | {path for rule in EXCLUSIONS for path in rule.dropped}
    assert documented, "the model documents no exclusive pair: the wording check itself is broken"
    assert documented <= covered, f"documented as exclusive, no rule: {documented - covered}"


def test_every_path_in_the_rules_exists_in_the_model() -> None:
    paths = {path for path, _ in documented_members(CREATE_INPUT)}
    for rule in EXCLUSIONS:
        assert {rule.kept, *rule.dropped} <= paths, rule
    assert {member.path for member in READ_ONLY_MEMBERS} <= paths


def relaunch_of(description: dict[str, Any]) -> dict[str, Any]:
    built = build_relaunch_request(
        description, create_training_job_shape(), new_job_name="llm-retry1", tags={"trainguard:enabled": "true"}
    )
    assert_valid_create_request(built.request)
    return built.request


def members_of(request: dict[str, Any]) -> set[str]:
    found: set[str] = set()

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                found.add(f"{path}.{key}".lstrip("."))
                walk(item, f"{path}.{key}".lstrip("."))
        elif isinstance(value, list):
            for item in value:
                walk(item, path + "[]")

    walk(request, "")
    return found


def test_a_description_with_every_member_filled_gives_a_request_aws_accepts() -> None:
    description = fill(DESCRIBE_OUTPUT)
    description["TrainingJobName"] = "llm"
    request = relaunch_of(description)
    present = members_of(request)
    assert not {m.path for m in READ_ONLY_MEMBERS} & present
    for rule in EXCLUSIONS:
        if rule.kept in present:
            assert not set(rule.dropped) & present, rule.kept
    # The fill has every member, so the preferences win over the type they exclude; the plan per preference
    # over the job-level plan; the algorithm over the image.
    resource = request["ResourceConfig"]
    assert resource["InstancePreferences"] == description["ResourceConfig"]["InstancePreferences"]
    assert "InstanceType" not in resource and "TrainingPlanArn" not in resource
    assert "EnableManagedSpotTraining" not in request
    assert "TrainingImage" not in request["AlgorithmSpecification"]


def preferences_job(**resource: Any) -> dict[str, Any]:
    """A DescribeTrainingJob response of a job launched with InstancePreferences, after SageMaker chose."""
    return {
        "TrainingJobName": "llm",
        "RoleArn": "arn:aws:iam::123456789012:role/Train",
        "OutputDataConfig": {"S3OutputPath": "s3://bucket/out"},
        "AlgorithmSpecification": {"TrainingImage": "img", "TrainingInputMode": "File"},
        "CheckpointConfig": {"S3Uri": "s3://bucket/ckpt/llm"},
        "EnableManagedSpotTraining": False,
        "ResourceConfig": {
            "VolumeSizeInGB": 100,
            "InstancePreferences": [
                {"InstanceType": "ml.p5.48xlarge", "InstanceCount": 2},
                {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 4},
            ],
            # What SageMaker gave it: it may show in InstanceType/InstanceCount too.
            "InstanceType": "ml.p4d.24xlarge",
            "InstanceCount": 4,
            "SelectedInstanceType": "ml.p4d.24xlarge",
            "SelectedInstanceCount": 4,
            **resource,
        },
    }


def test_a_job_launched_with_preferences_is_relaunched_with_them_not_with_the_type_it_got() -> None:
    request = relaunch_of(preferences_job())
    assert request["ResourceConfig"] == {
        "VolumeSizeInGB": 100,
        "InstancePreferences": [
            {"InstanceType": "ml.p5.48xlarge", "InstanceCount": 2},
            {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 4},
        ],
    }
    assert "EnableManagedSpotTraining" not in request
    assert request["CheckpointConfig"] == {"S3Uri": "s3://bucket/ckpt/llm"}


def test_one_count_for_the_job_is_kept_when_the_preferences_give_none() -> None:
    description = preferences_job(
        InstancePreferences=[{"InstanceType": "ml.p5.48xlarge"}, {"InstanceType": "ml.p5e.48xlarge"}],
        InstanceCount=2,
        SelectedInstanceCount=2,
    )
    resource = relaunch_of(description)["ResourceConfig"]
    assert resource["InstanceCount"] == 2
    assert "InstanceType" not in resource and "SelectedInstanceType" not in resource


def test_training_plans_carry_over_per_preference_and_per_job() -> None:
    plan = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5-week"
    per_preference = preferences_job(
        InstancePreferences=[
            {"InstanceType": "ml.p5.48xlarge", "InstanceCount": 2, "TrainingPlanArns": [plan]},
            {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 4},
        ],
        TrainingPlanArn=plan,  # the plan the selected preference used, as a description may show it
    )
    resource = relaunch_of(per_preference)["ResourceConfig"]
    assert resource["InstancePreferences"][0]["TrainingPlanArns"] == [plan]
    assert "TrainingPlanArn" not in resource
    job_level = preferences_job(TrainingPlanArn=plan)
    assert relaunch_of(job_level)["ResourceConfig"]["TrainingPlanArn"] == plan


@pytest.mark.parametrize(
    "resource, expected",
    [
        (
            {"SelectedInstanceType": "ml.p4d.24xlarge", "SelectedInstanceCount": 4, "InstanceType": "x"},
            ("ml.p4d.24xlarge", 4),
        ),
        ({"InstancePreferences": [{"InstanceType": "ml.p5.48xlarge", "InstanceCount": 2}]}, ("ml.p5.48xlarge", 2)),
        ({"InstancePreferences": [{"InstanceType": "ml.p5.48xlarge"}], "InstanceCount": 3}, ("ml.p5.48xlarge", 3)),
        ({"InstanceType": "ml.g5.xlarge", "InstanceCount": 1}, ("ml.g5.xlarge", 1)),
    ],
)
def test_the_instances_a_job_runs_on(resource: dict[str, Any], expected: tuple[str, int]) -> None:
    assert instances_of(resource) == expected


def test_an_ordinary_request_is_left_as_it_is() -> None:
    request = {
        "ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2},
        "EnableManagedSpotTraining": True,
    }
    assert strip_refused_members(request) == (request, ())
