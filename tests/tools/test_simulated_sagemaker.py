"""The simulated SageMaker control plane, reached the way production code reaches AWS: a boto3 client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from tests.tools.simulated_services import START, error_of, post_raw
from trainguard_local.simulation.clock import SimClock
from trainguard_local.simulation.fault_table import FAULT_TABLE, Ending, FaultKind
from trainguard_local.stand_in.json_api import ApiError, JsonApiModel
from trainguard_local.stand_in.sagemaker_api_model import SAGEMAKER_API
from trainguard_local.stand_in.sagemaker_control_plane import InvalidTransition, SimulatedSageMaker
from trainguard_local.stand_in.sagemaker_events import eventbridge_forwarder
from trainguard_local.stand_in.sagemaker_server import SageMakerServer
from trainguard_local.stand_in.service_quotas import SimulatedServiceQuotas
from trainguard_local.stand_in.service_quotas_catalogue import SERVICE_QUOTAS_API

# About 2.5 s with imports: a real HTTP server per test and moto's EventBridge.
pytestmark = pytest.mark.slow

ACCOUNT = "123456789012"
FIXTURES = Path(__file__).parents[1] / "fixtures"


def job_request(name: str = "llama-finetune-1", **overrides: Any) -> dict[str, Any]:
    request: dict[str, Any] = {
        "TrainingJobName": name,
        "RoleArn": f"arn:aws:iam::{ACCOUNT}:role/SageMakerRole",
        "AlgorithmSpecification": {"TrainingImage": "img:latest", "TrainingInputMode": "File"},
        "HyperParameters": {"epochs": "3"},
        "OutputDataConfig": {"S3OutputPath": "s3://bucket/output"},
        "ResourceConfig": {"InstanceType": "ml.g5.2xlarge", "InstanceCount": 1, "VolumeSizeInGB": 50},
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
        "CheckpointConfig": {"S3Uri": "s3://bucket/checkpoints/llama"},
        "RetryStrategy": {"MaximumRetryAttempts": 2},
        "Environment": {"NCCL_DEBUG": "INFO"},
        "Tags": [{"Key": "trainguard:retry", "Value": "on"}],
    }
    request.update(overrides)
    return request


@pytest.fixture
def clock() -> SimClock:
    return SimClock(START)


@pytest.fixture
def events() -> list[dict[str, Any]]:
    return []


@pytest.fixture
def plane(clock: SimClock, events: list[dict[str, Any]]) -> SimulatedSageMaker:
    return SimulatedSageMaker(clock=clock, on_event=events.append, instance_limits={"ml.p4d.24xlarge": 2})


@pytest.fixture
def server(plane: SimulatedSageMaker) -> Iterator[SageMakerServer]:
    with SageMakerServer(plane) as running:
        yield running


@pytest.fixture
def sagemaker(server: SageMakerServer) -> Any:
    return boto3.client(
        "sagemaker",
        endpoint_url=server.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def test_describe_echoes_the_request_and_adds_the_job_state(sagemaker: Any, plane: SimulatedSageMaker) -> None:
    arn = sagemaker.create_training_job(**job_request())["TrainingJobArn"]
    described = sagemaker.describe_training_job(TrainingJobName="llama-finetune-1")

    assert arn == f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-job/llama-finetune-1"
    assert described["TrainingJobArn"] == arn
    assert described["CheckpointConfig"] == {"S3Uri": "s3://bucket/checkpoints/llama"}
    assert described["RetryStrategy"] == {"MaximumRetryAttempts": 2}
    assert described["Environment"] == {"NCCL_DEBUG": "INFO"}
    assert described["EnableManagedSpotTraining"] is False
    assert (described["TrainingJobStatus"], described["SecondaryStatus"]) == ("InProgress", "Starting")
    assert described["CreationTime"] == START
    assert described["SecondaryStatusTransitions"] == [
        {"Status": "Starting", "StartTime": START, "StatusMessage": "Starting the training job."}
    ]
    assert "Tags" not in described and "FailureReason" not in described
    assert plane.calls[0] == ("CreateTrainingJob", job_request())


@pytest.mark.parametrize("bad_name", ["a" * 64, "trailing-hyphen-"])
def test_invalid_job_names_are_rejected_by_the_server(sagemaker: Any, bad_name: str) -> None:
    with pytest.raises(ClientError) as excinfo:
        sagemaker.create_training_job(**job_request(bad_name))
    code, message = error_of(excinfo)
    assert code == "ValidationException"
    assert f"Value '{bad_name}' at 'trainingJobName' failed to satisfy constraint" in message


def test_unknown_instance_type_is_rejected_with_the_enum_set(sagemaker: Any) -> None:
    resource = {"InstanceType": "ml.t2.medium", "InstanceCount": 1, "VolumeSizeInGB": 5}
    with pytest.raises(ClientError) as excinfo:
        sagemaker.create_training_job(**job_request(ResourceConfig=resource))
    code, message = error_of(excinfo)
    assert code == "ValidationException"
    assert "Value 'ml.t2.medium' at 'resourceConfig.instanceType' failed to satisfy constraint" in message
    assert "Member must satisfy enum value set: [ml.m4.xlarge, " in message


def test_server_rejects_unknown_parameters_that_botocore_would_have_caught(server: SageMakerServer) -> None:
    status, body = post_raw(server, "SageMaker.CreateTrainingJob", {**job_request(), "TrainingJobArn": "x"})
    assert status == 400
    assert body["__type"] == "ValidationException"
    assert 'Unknown parameter in input: "TrainingJobArn"' in body["message"]


def test_operations_not_simulated_fail_with_their_name(sagemaker: Any, server: SageMakerServer) -> None:
    with pytest.raises(ClientError) as excinfo:
        sagemaker.list_endpoints()
    assert error_of(excinfo) == (
        "UnknownOperationException",
        "Operation ListEndpoints is not simulated here.",
    )
    status, body = post_raw(server, "SageMaker.LaunchRockets", {})
    assert (status, body["__type"]) == (400, "UnknownOperationException")
    assert "LaunchRockets" in body["message"]


def test_the_operations_simulated_are_the_methods_named_after_them_and_no_other() -> None:
    """Each operation is answered by the stand-in's method of its name in snake case (json_api.answer_of): a private
    helper named like an operation would answer it, so the set is pinned."""
    services = [
        (SAGEMAKER_API, SimulatedSageMaker(clock=SimClock(START).now)),
        (SERVICE_QUOTAS_API, SimulatedServiceQuotas(clock=SimClock(START).now)),
    ]
    answered = {
        api.service_name: sorted(op for op in api.service_model.operation_names if _answers(api, server, op))
        for api, server in services
    }
    assert answered == {
        "sagemaker": [
            "AddTags",
            "CreateTrainingJob",
            "DeleteTags",
            "DescribeTrainingJob",
            "ListTags",
            "ListTrainingJobs",
            "StopTrainingJob",
        ],
        "service-quotas": [
            "GetRequestedServiceQuotaChange",
            "GetServiceQuota",
            "ListRequestedServiceQuotaChangeHistory",
            "ListRequestedServiceQuotaChangeHistoryByQuota",
            "ListServiceQuotas",
            "RequestServiceQuotaIncrease",
        ],
    }


def _answers(api: JsonApiModel, server: object, operation: str) -> bool:
    try:
        api.answer_of(server, operation, {})
    except ApiError as error:
        return error.code != "UnknownOperationException"
    return True


def test_duplicate_name_is_resource_in_use(sagemaker: Any) -> None:
    sagemaker.create_training_job(**job_request())
    with pytest.raises(ClientError) as excinfo:
        sagemaker.create_training_job(**job_request())
    assert error_of(excinfo) == (
        "ResourceInUse",
        "Training job names must be unique within an AWS account and region, and a training job with "
        f"this name already exists (arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-job/llama-finetune-1)",
    )


def test_describe_of_an_unknown_job_is_a_validation_error(sagemaker: Any) -> None:
    with pytest.raises(ClientError) as excinfo:
        sagemaker.describe_training_job(TrainingJobName="never-created")
    assert error_of(excinfo) == ("ValidationException", "Requested resource not found.")


def test_failed_job_shows_the_reason_cut_to_1024_characters(
    sagemaker: Any, plane: SimulatedSageMaker, clock: SimClock
) -> None:
    sagemaker.create_training_job(**job_request())
    clock.skip(timedelta(minutes=3))
    plane.start_training("llama-finetune-1")
    clock.skip(timedelta(minutes=10))
    plane.fail("llama-finetune-1", "InternalServerError: We encountered an internal error. " + "x" * 2000)

    described = sagemaker.describe_training_job(TrainingJobName="llama-finetune-1")
    assert (described["TrainingJobStatus"], described["SecondaryStatus"]) == ("Failed", "Failed")
    assert described["FailureReason"].startswith("InternalServerError: We encountered")
    assert len(described["FailureReason"]) == 1024
    assert described["TrainingStartTime"] == START + timedelta(minutes=3)
    assert described["TrainingEndTime"] == START + timedelta(minutes=13)
    assert described["TrainingTimeInSeconds"] == 600
    history = [t["Status"] for t in described["SecondaryStatusTransitions"]]
    assert history == ["Starting", "Training", "Failed"]


def test_stop_goes_through_stopping_and_a_second_stop_names_the_status(
    sagemaker: Any, plane: SimulatedSageMaker
) -> None:
    sagemaker.create_training_job(**job_request())
    plane.start_training("llama-finetune-1")
    sagemaker.stop_training_job(TrainingJobName="llama-finetune-1")
    stopping = sagemaker.describe_training_job(TrainingJobName="llama-finetune-1")
    assert (stopping["TrainingJobStatus"], stopping["SecondaryStatus"]) == ("Stopping", "Stopping")

    plane.settle("llama-finetune-1")
    described = sagemaker.describe_training_job(TrainingJobName="llama-finetune-1")
    assert (described["TrainingJobStatus"], described["SecondaryStatus"]) == ("Stopped", "Stopped")
    with pytest.raises(ClientError) as excinfo:
        sagemaker.stop_training_job(TrainingJobName="llama-finetune-1")
    assert error_of(excinfo) == (
        "ValidationException",
        "The request was rejected because the training job is in status Stopped.",
    )


def test_drivers_follow_the_documented_lifecycles(plane: SimulatedSageMaker) -> None:
    spot = job_request("spot-job", EnableManagedSpotTraining=True)
    spot["StoppingCondition"] = {"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 7200}
    for request in (job_request("done"), job_request("slow"), spot):
        plane.handle("CreateTrainingJob", request)
        plane.start_training(request["TrainingJobName"])
    plane.complete("done")
    plane.exceed_max_runtime("slow")
    plane.interrupt_spot("spot-job")
    plane.exceed_max_wait("spot-job")

    def history(name: str) -> list[str]:
        return [t["Status"] for t in plane.describe(name)["SecondaryStatusTransitions"]]

    assert history("done") == ["Starting", "Training", "Uploading", "Completed"]
    assert plane.describe("done")["ModelArtifacts"] == {
        "S3ModelArtifacts": "s3://bucket/output/done/output/model.tar.gz"
    }
    assert history("slow")[-2:] == ["Stopping", "MaxRuntimeExceeded"]
    assert "FailureReason" not in plane.describe("slow")
    assert history("spot-job")[-3:] == ["Interrupted", "Stopping", "MaxWaitTimeExceeded"]
    assert plane.describe("spot-job")["TrainingJobStatus"] == "Stopped"
    with pytest.raises(InvalidTransition):
        plane.interrupt_spot("done")


def test_tags_are_listed_added_and_deleted_by_arn(sagemaker: Any) -> None:
    arn = sagemaker.create_training_job(**job_request())["TrainingJobArn"]
    sagemaker.add_tags(ResourceArn=arn, Tags=[{"Key": "team", "Value": "nlp"}])
    sagemaker.add_tags(ResourceArn=arn, Tags=[{"Key": "trainguard:retry", "Value": "off"}])
    assert sagemaker.list_tags(ResourceArn=arn)["Tags"] == [
        {"Key": "team", "Value": "nlp"},
        {"Key": "trainguard:retry", "Value": "off"},
    ]
    sagemaker.delete_tags(ResourceArn=arn, TagKeys=["team"])
    assert sagemaker.list_tags(ResourceArn=arn)["Tags"] == [{"Key": "trainguard:retry", "Value": "off"}]
    with pytest.raises(ClientError) as excinfo:
        sagemaker.list_tags(ResourceArn=arn + "-gone")
    assert error_of(excinfo)[0] == "ValidationException"


def test_list_filters_sorts_newest_first_and_pages(sagemaker: Any, plane: SimulatedSageMaker, clock: SimClock) -> None:
    for index in range(4):
        sagemaker.create_training_job(**job_request(f"job-{index}"))
        clock.skip(timedelta(minutes=1))
    plane.fail("job-1", "ClientError: bad input")

    in_progress = sagemaker.list_training_jobs(StatusEquals="InProgress")["TrainingJobSummaries"]
    assert [s["TrainingJobName"] for s in in_progress] == ["job-3", "job-2", "job-0"]
    assert set(in_progress[0]) == {
        "TrainingJobName", "TrainingJobArn", "CreationTime", "LastModifiedTime", "TrainingJobStatus",
        "SecondaryStatus",
    }  # fmt: skip
    recent = sagemaker.list_training_jobs(CreationTimeAfter=START + timedelta(seconds=90), NameContains="JOB")
    assert [s["TrainingJobName"] for s in recent["TrainingJobSummaries"]] == ["job-3", "job-2"]
    assert plane.calls[-1][1]["CreationTimeAfter"] == START + timedelta(seconds=90)

    first = sagemaker.list_training_jobs(MaxResults=3)
    second = sagemaker.list_training_jobs(MaxResults=3, NextToken=first["NextToken"])
    assert [s["TrainingJobName"] for s in first["TrainingJobSummaries"] + second["TrainingJobSummaries"]] == [
        "job-3", "job-2", "job-1", "job-0",
    ]  # fmt: skip
    assert "NextToken" not in second


def test_one_event_per_change_shaped_like_the_aws_sample(
    sagemaker: Any, plane: SimulatedSageMaker, clock: SimClock, events: list[dict[str, Any]]
) -> None:
    sagemaker.create_training_job(**job_request())
    clock.skip(timedelta(minutes=2))
    plane.start_training("llama-finetune-1")
    clock.skip(timedelta(minutes=5))
    plane.fail("llama-finetune-1", "CapacityError: Unable to provision requested ML compute capacity.")

    assert [(e["detail"]["TrainingJobStatus"], e["detail"]["SecondaryStatus"]) for e in events] == [
        ("InProgress", "Starting"),
        ("InProgress", "Training"),
        ("Failed", "Failed"),
    ]
    sample = json.loads((FIXTURES / "events/sagemaker_training_job_state_change.awsdocs.json").read_text())
    last = events[-1]
    assert {k for k in last if not k.startswith("_")} == {k for k in sample if not k.startswith("_")}
    assert (last["source"], last["detail-type"]) == (sample["source"], sample["detail-type"])
    assert last["time"] == "2026-11-02T09:07:00Z"
    assert last["resources"] == [f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-job/llama-finetune-1"]
    detail = last["detail"]
    assert set(detail) <= set(sample["detail"]) | {"FailureReason"}
    assert detail["Tags"] == {"trainguard:retry": "on"}
    assert detail["FailureReason"].startswith("CapacityError:")
    assert detail["CreationTime"] == int(START.timestamp() * 1000)
    assert detail["TrainingEndTime"] == int((START + timedelta(minutes=7)).timestamp() * 1000)
    assert "FailureReason" not in events[0]["detail"]
    assert len({e["id"] for e in events}) == 3


def test_forwarder_delivers_events_through_moto_eventbridge_to_sqs(clock: SimClock) -> None:
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        events_client = boto3.client("events", region_name="us-east-1")
        queue_url = sqs.create_queue(QueueName="job-events")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        pattern = {"source": ["aws.sagemaker"], "detail": {"TrainingJobStatus": ["Failed"]}}
        events_client.put_rule(Name="failed-jobs", EventPattern=json.dumps(pattern))
        events_client.put_targets(Rule="failed-jobs", Targets=[{"Id": "queue", "Arn": queue_arn}])

        plane = SimulatedSageMaker(clock=clock, on_event=eventbridge_forwarder(events_client))
        plane.handle("CreateTrainingJob", job_request())
        plane.fail("llama-finetune-1", "InternalServerError: We encountered an internal error.")

        messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)["Messages"]
    assert len(messages) == 1
    delivered = json.loads(messages[0]["Body"])
    assert delivered["detail-type"] == "SageMaker Training Job State Change"
    assert delivered["detail"]["FailureReason"] == "InternalServerError: We encountered an internal error."
    assert delivered["resources"] == [f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-job/llama-finetune-1"]


def test_instance_limits_raise_resource_limit_exceeded_with_current_wording(
    sagemaker: Any, plane: SimulatedSageMaker
) -> None:
    p4d = {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2, "VolumeSizeInGB": 100}
    sagemaker.create_training_job(**job_request("big-1", ResourceConfig=p4d))
    with pytest.raises(ClientError) as excinfo:
        sagemaker.create_training_job(**job_request("big-2", ResourceConfig={**p4d, "InstanceCount": 1}))
    assert error_of(excinfo) == (
        "ResourceLimitExceeded",
        "The account-level service limit 'ml.p4d.24xlarge for training job usage' is 2 Instances, with "
        "current utilization of 2 Instances and a request delta of 1 Instances. Please use AWS Service "
        "Quotas to request an increase for this quota.",
    )
    plane.fail("big-1", "AlgorithmError: boom")
    sagemaker.create_training_job(**job_request("big-3", ResourceConfig=p4d))


def test_concurrent_clients_and_a_callback_that_calls_back_do_not_deadlock(clock: SimClock) -> None:
    seen_statuses: list[str] = []
    clients: list[Any] = []

    def describe_again(event: dict[str, Any]) -> None:
        # What an event handler does: describe the job again, here through the same server.
        name = event["detail"]["TrainingJobName"]
        seen_statuses.append(clients[0].describe_training_job(TrainingJobName=name)["TrainingJobStatus"])

    with SageMakerServer(SimulatedSageMaker(clock=clock, on_event=describe_again)) as running:
        clients.append(
            boto3.client(
                "sagemaker",
                endpoint_url=running.endpoint_url,
                region_name="us-east-1",
                aws_access_key_id="testing",
                aws_secret_access_key="testing",
            )
        )
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(lambda i: clients[0].create_training_job(**job_request(f"job-{i}")), range(12)))
        listed = clients[0].list_training_jobs(MaxResults=100)["TrainingJobSummaries"]
    assert len(listed) == 12
    assert seen_statuses == ["InProgress"] * 12


# What each ending of the fault table does to a job on SageMaker, as the drivers play it
# (fleet/trainguard_run/answers.py, sandbox/fault_injection.py): its steps, in order.
PLAYED = {
    Ending.TRAINS_ON: ["start_training"],
    Ending.HANGS: ["start_training"],
    Ending.SLOWS: ["start_training"],
    Ending.DIVERGES: ["start_training"],
    Ending.FAILS: ["start_training", "fail"],
    Ending.FAILS_AFTER_HANG: ["start_training", "fail"],
    Ending.INTERRUPTED: ["start_training", "interrupt_spot", "exceed_max_wait"],
    Ending.REFUSED_AT_LAUNCH: ["fail"],
}


@pytest.mark.parametrize("kind", list(FaultKind))
def test_each_fault_row_says_the_statuses_sagemaker_shows(kind: FaultKind, plane: SimulatedSageMaker) -> None:
    row, name = FAULT_TABLE[kind], f"job-{kind.value.replace('_', '-')}"
    stopping = {"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 7200}
    spot = {"EnableManagedSpotTraining": True, "StoppingCondition": stopping}
    plane.handle("CreateTrainingJob", job_request(name, **(spot if row.ending is Ending.INTERRUPTED else {})))

    def status() -> str:
        described = plane.describe(name)
        return f"{described['TrainingJobStatus']}/{described['SecondaryStatus']}"

    seen = [status()]
    for step in PLAYED[row.ending]:
        getattr(plane, step)(name, *(("a FailureReason",) if step == "fail" else ()))
        seen.append(status())
    assert seen[-len(row.statuses) :] == list(row.statuses)
