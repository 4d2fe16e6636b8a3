"""The stack's real rule pattern, read from the synthesized template, matched by EventBridge in moto.

moto's EventBridge agreed with AWS on every pattern case measured (../shared/LOCAL_AWS.md); its
`test_event_pattern` is a stub, so the pattern is created as a rule with an SQS target and real
events are put on the bus. Events come from AWS's documentation samples in tests/fixtures/events/.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tests.infra.template_queries import JOB_EVENTS_HANDLER, function_logical_id, rule_targeting

pytestmark = pytest.mark.slow

EVENTS_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "events"
REGION = "us-east-1"
TAGS_AS_MAP = {"trainguard:enabled": "true", "team": "vision"}
TAGS_AS_LIST = [{"Key": "trainguard:enabled", "Value": "true"}, {"Key": "team", "Value": "vision"}]
_MISSING = object()


def _sample(name: str) -> dict[str, Any]:
    event = json.loads((EVENTS_DIR / name).read_text())
    return {k: v for k, v in event.items() if k not in ("_source", "_note")}


def _training_job_event(case: str, status: str, tags: object = _MISSING, **envelope: str) -> dict[str, Any]:
    event = copy.deepcopy(_sample("sagemaker_training_job_state_change.awsdocs.json"))
    event["detail"].update(TrainingJobName=case, TrainingJobStatus=status, SecondaryStatus=status)
    if status == "Failed":
        event["detail"]["FailureReason"] = "InternalServerError: We encountered an internal error. Please try again."
    if tags is _MISSING:
        del event["detail"]["Tags"]
    else:
        event["detail"]["Tags"] = tags
    event.update(envelope)
    return event


def _hpo_event(case: str) -> dict[str, Any]:
    event = _sample("sagemaker_hpo_job_state_change.awsdocs.json")
    event["detail"]["HyperParameterTuningJobName"] = case
    event["detail"]["HyperParameterTuningJobStatus"] = "Failed"
    return event


MATCHING = {
    "failed-tags-map": _training_job_event("failed-tags-map", "Failed", TAGS_AS_MAP),
    "failed-tags-list": _training_job_event("failed-tags-list", "Failed", TAGS_AS_LIST),
    "failed-no-tags": _training_job_event("failed-no-tags", "Failed"),
    "stopped-tags-map": _training_job_event("stopped-tags-map", "Stopped", TAGS_AS_MAP),
    "stopped-tags-list": _training_job_event("stopped-tags-list", "Stopped", TAGS_AS_LIST),
    "stopped-no-tags": _training_job_event("stopped-no-tags", "Stopped"),
}
NOT_MATCHING = {
    "completed": _training_job_event("completed", "Completed", TAGS_AS_MAP),
    "in-progress": _training_job_event("in-progress", "InProgress", TAGS_AS_MAP),
    "stopping": _training_job_event("stopping", "Stopping", TAGS_AS_MAP),
    "other-detail-type": _training_job_event(
        "other-detail-type", "Failed", TAGS_AS_MAP, **{"detail-type": "SageMaker Endpoint State Change"}
    ),
    "other-source": _training_job_event("other-source", "Failed", TAGS_AS_MAP, source="custom.sagemaker"),
    "hpo-job": _hpo_event("hpo-job"),
}


def _entry(event: dict[str, Any]) -> dict[str, Any]:
    return {
        "Source": event["source"],
        "DetailType": event["detail-type"],
        "Detail": json.dumps(event["detail"]),
        "Resources": event["resources"],
    }


def _case_of(body: str) -> str:
    detail = json.loads(body)["detail"]
    return detail.get("TrainingJobName") or detail["HyperParameterTuningJobName"]


def _job_ended_rule(template: dict[str, Any]) -> dict[str, Any]:
    """The rule in front of the job-events function (the stack has others: the quota check, CloudTrail)."""
    return dict(template["Resources"][rule_targeting(template, function_logical_id(template, JOB_EVENTS_HANDLER))])


@pytest.fixture(scope="module")
def delivered(synthesized: Any) -> Iterator[set[str]]:
    """Put every case on the default bus of a moto account whose only rule is the stack's rule.
    (mock_aws sets fake credentials itself; nothing leaves the process.)"""
    rule = _job_ended_rule(synthesized.template)
    with mock_aws():
        events = boto3.client("events", region_name=REGION)
        sqs = boto3.client("sqs", region_name=REGION)
        queue_url = sqs.create_queue(QueueName="matched")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]
        events.put_rule(Name="training-job-ended", EventPattern=json.dumps(rule["Properties"]["EventPattern"]))
        events.put_targets(Rule="training-job-ended", Targets=[{"Id": "matched", "Arn": queue_arn["QueueArn"]}])
        entries = [_entry(e) for e in (*MATCHING.values(), *NOT_MATCHING.values())]
        for start in range(0, len(entries), 10):  # PutEvents takes at most 10 entries
            response = events.put_events(Entries=entries[start : start + 10])
            assert response["FailedEntryCount"] == 0, response
        received: set[str] = set()
        while messages := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages"):
            for message in messages:
                received.add(_case_of(message["Body"]))
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
        yield received


def test_the_pattern_under_test_is_the_stacks(synthesized: Any) -> None:
    from infra.event_patterns import training_job_ended_pattern

    assert _job_ended_rule(synthesized.template)["Properties"]["EventPattern"] == training_job_ended_pattern()


def test_failed_and_stopped_training_jobs_arrive_whatever_the_tags_look_like(delivered: set[str]) -> None:
    assert set(MATCHING) <= delivered


def test_other_statuses_sources_detail_types_and_hpo_jobs_do_not_arrive(delivered: set[str]) -> None:
    assert delivered & set(NOT_MATCHING) == set()
