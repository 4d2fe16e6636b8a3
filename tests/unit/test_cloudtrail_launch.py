"""A launch refused with ResourceLimitExceeded: its CloudTrail event, and the request rebuilt from it."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.model import ListShape, MapShape, Shape, StructureShape
from botocore.validate import ParamValidator
from moto import mock_aws

from infra.event_patterns import failed_training_job_launch_pattern
from tests.cloudtrail_events import camel_case_record, envelope_from_record
from tests.conftest import load_fixture
from tests.unit.test_request_builder import fill
from trainguard.adapters.service_model import create_training_job_shape
from trainguard.domain.cloudtrail_launch import RebuiltLaunch, rebuild_create_request
from trainguard.domain.request_builder import RelaunchImpossible, project_onto_shape
from trainguard.events import cloudtrail
from trainguard.events.cloudtrail import parse_failed_launch
from trainguard.events.training_job import MalformedInput

CREATE_INPUT = (
    botocore.session.get_session().get_service_model("sagemaker").operation_model("CreateTrainingJob").input_shape
)
MEDZEN = load_fixture("events/cloudtrail_record.create_training_job.medzen_sanitized_real.json")
LABELING_JOB = load_fixture("events/eventbridge_aws_api_call_via_cloudtrail.create_labeling_job.mlspace_test.json")
HIDDEN = "HIDDEN_DUE_TO_SECURITY_REASONS"


def _quota_message() -> str:
    """A real quota refusal, as CloudTrail's errorMessage holds it (without botocore's prefix)."""
    (text,) = [
        r["text"] for r in load_fixture("failure_reasons.json") if "'ml.p3.2xlarge for training job usage'" in r["text"]
    ]
    return text.split("operation: ", 1)[1]


QUOTA_MESSAGE = _quota_message()
FAILED = envelope_from_record(MEDZEN, "ResourceLimitExceeded", QUOTA_MESSAGE)


def rebuild(parameters: dict[str, Any]) -> RebuiltLaunch:
    return rebuild_create_request(parameters, create_training_job_shape())


def assert_valid_create_request(request: dict[str, Any]) -> None:
    report = ParamValidator().validate(request, CREATE_INPUT)
    assert not report.has_errors(), report.generate_report()


# --- the request rebuilt from requestParameters ---------------------------------------------------


def test_the_real_medzen_record_becomes_a_valid_request() -> None:
    parameters = MEDZEN["requestParameters"]
    rebuilt = rebuild(parameters)
    assert_valid_create_request(rebuilt.request)
    assert sorted(rebuilt.dropped) == [
        "disableEFA",
        "outputDataConfig.disableModelUpload",
        "outputDataConfig.removeJobNameFromS3OutputPath",
        "resourceConfig.useReservedCapacity",
        "trainingJobArn",
        "withWarmPoolValidationError",
    ]
    assert rebuilt.redacted == () and rebuilt.refusal_reason is None
    request = rebuilt.request
    assert request["TrainingJobName"] == parameters["trainingJobName"]
    assert request["Environment"] == parameters["environment"]  # the user's keys, exactly
    assert request["Tags"] == [{"Key": t["key"], "Value": t["value"]} for t in parameters["tags"]]
    assert request["CheckpointConfig"] == {
        "S3Uri": parameters["checkpointConfig"]["s3Uri"],
        "LocalPath": "/opt/ml/checkpoints",
    }
    assert request["VpcConfig"] == {
        "SecurityGroupIds": ["sg-0fee72d218ac002a7"],
        "Subnets": ["subnet-00232b25bc1ac407a"],
    }
    assert request["OutputDataConfig"]["KmsKeyId"] == parameters["outputDataConfig"]["kmsKeyId"]
    assert request["ResourceConfig"] == {
        "InstanceCount": 1,
        "InstanceType": "ml.g6.xlarge",
        "VolumeSizeInGB": 100,
    }
    assert request["AlgorithmSpecification"]["EnableSageMakerMetricsTimeSeries"] is False


def test_a_record_with_every_member_of_the_input_round_trips() -> None:
    full_request, _ = project_onto_shape(fill(CREATE_INPUT), create_training_job_shape())
    rebuilt = rebuild(camel_case_record(full_request, CREATE_INPUT))
    assert rebuilt.request == full_request
    assert set(rebuilt.request) == set(CREATE_INPUT.members)
    assert rebuilt.dropped == () and rebuilt.redacted == ()
    assert_valid_create_request(rebuilt.request)


def test_no_two_members_of_one_structure_differ_only_in_case() -> None:
    """The rebuild matches names without regard to case; that is only sound while this holds."""
    seen: set[str] = set()

    def walk(shape: Shape) -> Iterator[list[str]]:
        if shape.name in seen:
            return
        seen.add(shape.name)
        if isinstance(shape, StructureShape):
            yield list(shape.members)
            for member in shape.members.values():
                yield from walk(member)
        elif isinstance(shape, ListShape):
            yield from walk(shape.member)
        elif isinstance(shape, MapShape):
            yield from walk(shape.value)

    for names in walk(CREATE_INPUT):
        assert len({n.casefold() for n in names}) == len(names), names


def test_map_keys_stay_as_the_user_gave_them() -> None:
    parameters = copy.deepcopy(MEDZEN["requestParameters"])
    parameters["hyperParameters"] = {"learningRate": "0.1", "S3Uri": "s3://b/x", "epochs": "3"}
    rebuilt = rebuild(parameters)
    assert rebuilt.request["HyperParameters"] == parameters["hyperParameters"]


def test_a_redacted_hyperparameter_is_reported_and_never_sent() -> None:
    parameters = copy.deepcopy(MEDZEN["requestParameters"])
    parameters["hyperParameters"] = {"epochs": "3", "wandb_api_key": HIDDEN}
    rebuilt = rebuild(parameters)
    assert rebuilt.redacted == ("hyperParameters.wandb_api_key",)
    assert rebuilt.request["HyperParameters"] == {"epochs": "3"}
    assert HIDDEN not in json.dumps(rebuilt.request)
    assert rebuilt.refusal_reason is not None and "hyperParameters.wandb_api_key" in rebuilt.refusal_reason


def test_a_member_redacted_whole_is_reported_not_dropped_silently() -> None:
    parameters = copy.deepcopy(MEDZEN["requestParameters"])
    parameters["environment"] = HIDDEN  # how CloudTrail hides, for example, a Lambda's environment
    rebuilt = rebuild(parameters)
    assert rebuilt.redacted == ("environment",)
    assert "Environment" not in rebuilt.request
    assert_valid_create_request(rebuilt.request)


def test_a_value_of_the_wrong_kind_is_dropped_and_recorded() -> None:
    parameters = copy.deepcopy(MEDZEN["requestParameters"])
    parameters["vpcConfig"] = "vpc-123"
    rebuilt = rebuild(parameters)
    assert "vpcConfig: not an object" in rebuilt.dropped
    assert "VpcConfig" not in rebuilt.request


def test_an_empty_list_below_the_api_s_minimum_is_dropped_and_recorded() -> None:
    # botocore's model: AlgorithmSpecification.ContainerEntrypoint has min 1 (found by the hostile-input property).
    parameters = copy.deepcopy(MEDZEN["requestParameters"])
    parameters["algorithmSpecification"]["containerEntrypoint"] = []
    rebuilt = rebuild(parameters)
    assert "AlgorithmSpecification.ContainerEntrypoint: an empty list, below the API's minimum of 1" in rebuilt.dropped
    assert "ContainerEntrypoint" not in rebuilt.request["AlgorithmSpecification"]
    assert_valid_create_request(rebuilt.request)


def test_a_nested_structure_missing_a_required_member_is_dropped_and_recorded() -> None:
    parameters = copy.deepcopy(MEDZEN["requestParameters"])
    del parameters["vpcConfig"]["subnets"]
    rebuilt = rebuild(parameters)
    assert "VpcConfig: missing Subnets" in rebuilt.dropped
    assert "VpcConfig" not in rebuilt.request
    assert_valid_create_request(rebuilt.request)


def test_a_record_without_a_required_member_cannot_be_rebuilt() -> None:
    parameters = copy.deepcopy(MEDZEN["requestParameters"])
    del parameters["roleArn"]
    with pytest.raises(RelaunchImpossible, match="lacks RoleArn"):
        rebuild(parameters)
    parameters["roleArn"] = HIDDEN
    with pytest.raises(RelaunchImpossible, match="CloudTrail hid roleArn"):
        rebuild(parameters)


# --- the EventBridge event ----------------------------------------------------------------------


def test_a_failed_launch_is_read_from_its_event() -> None:
    launch = parse_failed_launch(FAILED)
    assert launch.job_name == "medzen-b5-b5-universal-arm1-2026-005"
    assert launch.error_code == "ResourceLimitExceeded"
    assert launch.error_message == QUOTA_MESSAGE
    assert (launch.region, launch.account) == ("eu-central-1", "558069890522")
    assert launch.event_id == FAILED["id"]
    assert launch.event_time is not None and launch.event_time.isoformat() == "2026-08-21T21:38:48+00:00"
    assert launch.requester_arn == "arn:aws:sts::558069890522:assumed-role/medzen-arm-launch-role/GitHubActions"
    assert launch.tags["medzen-tier"] == "arm" and len(launch.tags) == 4
    assert_valid_create_request(rebuild(launch.request_parameters).request)


def test_tags_spelt_as_the_api_spells_them_are_read_too() -> None:
    event = copy.deepcopy(FAILED)
    event["detail"]["requestParameters"]["tags"] = [{"Key": "trainguard:enabled", "Value": "true"}]
    assert parse_failed_launch(event).tags == {"trainguard:enabled": "true"}


_DELETE = object()


def _without(path: str) -> dict[str, Any]:
    return _with(path, _DELETE)


def _with(path: str, value: Any) -> dict[str, Any]:
    """FAILED with the value at the dotted `path` replaced (or deleted)."""
    event = copy.deepcopy(FAILED)
    *parents, last = path.split(".")
    target = event
    for key in parents:
        target = target[key]
    if value is _DELETE:
        del target[last]
    else:
        target[last] = value
    return event


NOT_A_FAILED_LAUNCH = {
    "not an object": [FAILED],
    "no source": _without("source"),
    "another detail-type": _with("detail-type", "SageMaker Training Job State Change"),
    "no detail": _without("detail"),
    "detail not an object": _with("detail", "x"),
    "another eventSource": _with("detail.eventSource", "ec2.amazonaws.com"),
    "another eventName": _with("detail.eventName", "CreateProcessingJob"),
    "no errorCode (a success)": _without("detail.errorCode"),
    "no requestParameters": _without("detail.requestParameters"),
    "requestParameters hidden whole": _with("detail.requestParameters", HIDDEN),
    "no trainingJobName": _without("detail.requestParameters.trainingJobName"),
    "the labeling-job envelope": LABELING_JOB,
}


@pytest.mark.parametrize("case", NOT_A_FAILED_LAUNCH)
def test_anything_else_is_malformed_input_with_a_reason(case: str) -> None:
    with pytest.raises(MalformedInput) as raised:
        parse_failed_launch(NOT_A_FAILED_LAUNCH[case])
    assert str(raised.value)


def test_the_parser_and_the_rule_name_the_same_event() -> None:
    pattern = failed_training_job_launch_pattern()
    assert pattern["source"] == [cloudtrail.SOURCE]
    assert pattern["detail-type"] == [cloudtrail.DETAIL_TYPE]
    assert pattern["detail"]["eventSource"] == [cloudtrail.EVENT_SOURCE]
    assert pattern["detail"]["eventName"] == [cloudtrail.EVENT_NAME]


# --- the rule's pattern, matched by EventBridge in moto -----------------------------------------

PATTERN_CASES = {
    "quota refusal": (FAILED, True),
    "success": (envelope_from_record(MEDZEN, "", ""), False),
    "throttled": (envelope_from_record(MEDZEN, "ThrottlingException", "Rate exceeded"), False),
    "labeling job": (LABELING_JOB, False),
}


def test_the_rule_delivers_quota_refusals_and_nothing_else() -> None:
    """moto's `test_event_pattern` is a stub: put the events on a bus whose only rule targets SQS."""
    with mock_aws():
        events = boto3.client("events", region_name="us-east-1")
        sqs = boto3.client("sqs", region_name="us-east-1")
        queue_url = sqs.create_queue(QueueName="matched")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]
        events.put_rule(Name="failed-launch", EventPattern=json.dumps(failed_training_job_launch_pattern()))
        events.put_targets(Rule="failed-launch", Targets=[{"Id": "q", "Arn": queue_arn["QueueArn"]}])
        entries = [
            {
                "Source": event["source"],
                "DetailType": event["detail-type"],
                "Detail": json.dumps({**event["detail"], "case": case}),
                "Resources": [],
            }
            for case, (event, _) in PATTERN_CASES.items()
        ]
        assert events.put_events(Entries=entries)["FailedEntryCount"] == 0
        delivered = set()
        while messages := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages"):
            for message in messages:
                delivered.add(json.loads(message["Body"])["detail"]["case"])
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    assert delivered == {case for case, (_, matches) in PATTERN_CASES.items() if matches}
