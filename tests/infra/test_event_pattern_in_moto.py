"""The stack's real rule patterns, read from the synthesized template, matched by EventBridge in moto.

moto's EventBridge agreed with AWS on every pattern case measured (docs/local-aws.md); its
`test_event_pattern` is a stub, so the pattern is created as a rule with an SQS target and real
events are put on the bus. Events come from AWS's documentation samples in tests/fixtures/events/.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tests.infra.template_queries import (
    JOB_EVENTS_HANDLER,
    STALL_ALARMS_HANDLER,
    function_logical_id,
    rule_targeting,
)

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


STATUSES = ("InProgress", "Stopping", "Completed", "Failed", "Stopped")
TAG_SHAPES: dict[str, object] = {"tags-map": TAGS_AS_MAP, "tags-list": TAGS_AS_LIST, "no-tags": _MISSING}
MATCHING = {
    f"{status.lower()}-{shape}": _training_job_event(f"{status.lower()}-{shape}", status, tags)
    for status in STATUSES
    for shape, tags in TAG_SHAPES.items()
}
NOT_MATCHING = {
    "deleting": _training_job_event("deleting", "Deleting", TAGS_AS_MAP),
    "other-detail-type": _training_job_event(
        "other-detail-type", "Failed", TAGS_AS_MAP, **{"detail-type": "SageMaker Endpoint State Change"}
    ),
    "other-source": _training_job_event("other-source", "Failed", TAGS_AS_MAP, source="custom.sagemaker"),
    "hpo-job": _hpo_event("hpo-job"),
}

ALARM_SAMPLES = ("single_metric", "metric_math", "anomaly_detection", "composite")


def _alarm_event(sample: str, alarm_name: str | None, state: str = "ALARM") -> dict[str, Any]:
    """An AWS sample alarm state change; with `alarm_name`, renamed (detail and resources) to that name."""
    event = copy.deepcopy(_sample(f"cloudwatch_alarm_state_change.{sample}.awsdocs.json"))
    if alarm_name is not None:
        old = event["detail"]["alarmName"]
        event["detail"]["alarmName"] = alarm_name
        event["resources"] = [arn.replace(f":alarm:{old}", f":alarm:{alarm_name}") for arn in event["resources"]]
    event["detail"]["state"]["value"] = state
    return event


# The case is the alarm's name. trainguard-stall-<signal>-<job> (trainguard.domain.stalls.alarm_name).
STALL_ALARMS_MATCHING = {
    f"trainguard-stall-log-silence-{sample}": _alarm_event(sample, f"trainguard-stall-log-silence-{sample}")
    for sample in ALARM_SAMPLES
}
STALL_ALARMS_NOT_MATCHING = {
    # AWS's samples as they are: other people's alarms.
    **{
        _sample(f"cloudwatch_alarm_state_change.{s}.awsdocs.json")["detail"]["alarmName"]: _alarm_event(s, None)
        for s in ALARM_SAMPLES
    },
    # Back to OK: nothing to do.
    "trainguard-stall-idle-gpu-back-to-ok": _alarm_event("metric_math", "trainguard-stall-idle-gpu-back-to-ok", "OK"),
    "trainguard-stall-log-silence-no-data": _alarm_event(
        "single_metric", "trainguard-stall-log-silence-no-data", "INSUFFICIENT_DATA"
    ),
    # A part of an idle-GPU composite: only the composite is acted on.
    "trainguard-gpu-part-1-llama": _alarm_event("metric_math", "trainguard-gpu-part-1-llama"),
    # The prefix must lead the name.
    "my-trainguard-stall-log-silence-x": _alarm_event("single_metric", "my-trainguard-stall-log-silence-x"),
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
    return detail.get("TrainingJobName") or detail.get("HyperParameterTuningJobName") or detail["alarmName"]


def _rule_before(template: dict[str, Any], handler: str) -> dict[str, Any]:
    """The rule in front of that function (the stack has others: the schedules, CloudTrail, alarms)."""
    return dict(template["Resources"][rule_targeting(template, function_logical_id(template, handler))])


def _delivered(pattern: dict[str, Any], events_to_put: list[dict[str, Any]]) -> set[str]:
    """Put every event on the default bus of a moto account whose only rule has this pattern, and read
    back the cases the rule matched. (mock_aws sets fake credentials itself; nothing leaves the process.)"""
    with mock_aws():
        events = boto3.client("events", region_name=REGION)
        sqs = boto3.client("sqs", region_name=REGION)
        queue_url = sqs.create_queue(QueueName="matched")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]
        events.put_rule(Name="under-test", EventPattern=json.dumps(pattern))
        events.put_targets(Rule="under-test", Targets=[{"Id": "matched", "Arn": queue_arn["QueueArn"]}])
        entries = [_entry(e) for e in events_to_put]
        for start in range(0, len(entries), 10):  # PutEvents takes at most 10 entries
            response = events.put_events(Entries=entries[start : start + 10])
            assert response["FailedEntryCount"] == 0, response
        received: set[str] = set()
        while messages := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages"):
            for message in messages:
                received.add(_case_of(message["Body"]))
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
        return received


@pytest.fixture(scope="module")
def delivered(synthesized: Any) -> set[str]:
    rule = _rule_before(synthesized.template, JOB_EVENTS_HANDLER)
    return _delivered(rule["Properties"]["EventPattern"], [*MATCHING.values(), *NOT_MATCHING.values()])


@pytest.fixture(scope="module")
def delivered_alarms(synthesized: Any) -> set[str]:
    rule = _rule_before(synthesized.template, STALL_ALARMS_HANDLER)
    return _delivered(
        rule["Properties"]["EventPattern"], [*STALL_ALARMS_MATCHING.values(), *STALL_ALARMS_NOT_MATCHING.values()]
    )


def test_the_pattern_under_test_is_the_stacks(synthesized: Any) -> None:
    from infra.event_patterns import training_job_state_pattern

    assert _rule_before(synthesized.template, JOB_EVENTS_HANDLER)["Properties"]["EventPattern"] == (
        training_job_state_pattern()
    )


def test_the_five_statuses_arrive_whatever_the_tags_look_like(delivered: set[str]) -> None:
    assert len(MATCHING) == 15
    assert set(MATCHING) <= delivered


def test_other_statuses_sources_detail_types_and_hpo_jobs_do_not_arrive(delivered: set[str]) -> None:
    assert delivered & set(NOT_MATCHING) == set()


def test_the_alarm_pattern_under_test_is_the_stacks(synthesized: Any) -> None:
    from infra.event_patterns import stall_alarm_pattern

    rule = _rule_before(synthesized.template, STALL_ALARMS_HANDLER)
    assert rule["Properties"]["EventPattern"] == stall_alarm_pattern()


def test_trainguard_stall_alarms_going_to_alarm_arrive(delivered_alarms: set[str]) -> None:
    """AWS's four samples (metric, metric math, anomaly detection, composite), renamed to our prefix."""
    assert set(STALL_ALARMS_MATCHING) <= delivered_alarms


def test_other_alarms_other_states_and_gpu_parts_do_not_arrive(delivered_alarms: set[str]) -> None:
    assert len(STALL_ALARMS_NOT_MATCHING) == len(ALARM_SAMPLES) + 4
    assert delivered_alarms & set(STALL_ALARMS_NOT_MATCHING) == set()
