"""The stall-alarm adapter (adapters/alarms.py): exact requests with botocore's Stubber, a round trip in moto.

moto 5.2 has no PutCompositeAlarm ("The put_composite_alarm action has not been implemented"), though
its PutMetricAlarm already stores an AlarmRule and DescribeAlarms returns alarms with one as
CompositeAlarms. The `cloudwatch` fixture adds the operation, and the two rules moto does not enforce,
as AWS states them: a composite's children must exist (awsdocs/aws-cloudformation-user-guide#911), an
alarm a composite depends on cannot be deleted (cloud-custodian/cloud-custodian#7763), and one
DeleteAlarms call deletes at most one composite (botocore, DeleteAlarms).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws
from moto.cloudwatch.exceptions import ValidationError
from moto.cloudwatch.responses import CloudWatchResponse

from trainguard.adapters.alarms import StallAlarms, delete_batches
from trainguard.adapters.permissions import declared_actions
from trainguard.domain.stall_alarms import is_never_composite, parse_gpu_part_name, plan_stall_alarms
from trainguard.domain.stalls import StallSignal, StallThresholds, alarm_name

REGION = "us-east-1"
AT = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
JOB = "llama-pretrain"
TAGS = [{"Key": "trainguard:job", "Value": JOB}]
PLAN = plan_stall_alarms(JOB, "ml.p4d.24xlarge", 12, StallThresholds())
LOG = "trainguard-stall-log-silence-llama-pretrain"
GPU = "trainguard-stall-idle-gpu-llama-pretrain"
PART1 = "trainguard-gpu-part-1-llama-pretrain"
PART2 = "trainguard-gpu-part-2-llama-pretrain"


def host_query(i: int, host: int) -> dict[str, Any]:
    return {
        "Id": f"m{i}",
        "MetricStat": {
            "Metric": {
                "Namespace": "/aws/sagemaker/TrainingJobs",
                "MetricName": "GPUUtilization",
                "Dimensions": [{"Name": "Host", "Value": f"{JOB}/algo-{host}"}],
            },
            "Period": 60,
            "Stat": "Maximum",
        },
        "ReturnData": False,
    }


def part_request(name: str, hosts: range) -> dict[str, Any]:
    return {
        "AlarmName": name,
        "AlarmDescription": PLAN.metric_alarms[1 if name == PART1 else 2]["AlarmDescription"],
        "Metrics": [
            *(host_query(i, host) for i, host in enumerate(hosts, start=1)),
            {"Id": "busiest", "Expression": "MAX(METRICS())", "Label": "busiest host", "ReturnData": True},
        ],
        "EvaluationPeriods": 20,
        "DatapointsToAlarm": 20,
        "Threshold": 40.0,  # 5% of each of 8 GPUs
        "ComparisonOperator": "LessThanOrEqualToThreshold",
        "TreatMissingData": "notBreaching",
        "Tags": TAGS,
    }


@pytest.fixture
def stubbed() -> Iterator[tuple[StallAlarms, Stubber]]:
    client = boto3.client("cloudwatch", region_name=REGION)
    with Stubber(client) as stubber:
        yield StallAlarms(client), stubber
        stubber.assert_no_pending_responses()


def test_a_12_host_job_gets_its_parts_before_the_composite(stubbed: tuple[StallAlarms, Stubber]) -> None:
    alarms, stub = stubbed
    log_request = {**PLAN.metric_alarms[0], "Threshold": 0.0, "Tags": TAGS}
    assert log_request["AlarmName"] == LOG and log_request["Dimensions"] == [{"Name": "JobName", "Value": JOB}]
    stub.add_response("put_metric_alarm", {}, log_request)
    stub.add_response("put_metric_alarm", {}, part_request(PART1, range(1, 11)))
    stub.add_response("put_metric_alarm", {}, part_request(PART2, range(11, 13)))
    stub.add_response(
        "put_composite_alarm",
        {},
        {
            "AlarmName": GPU,
            "AlarmDescription": PLAN.composite_alarms[0]["AlarmDescription"],
            "AlarmRule": f'ALARM("{PART1}") AND ALARM("{PART2}")',
            "Tags": TAGS,
        },
    )
    alarms.create(PLAN)


def test_deletion_takes_the_composite_first_and_its_parts_after(stubbed: tuple[StallAlarms, Stubber]) -> None:
    alarms, stub = stubbed
    stub.add_response("delete_alarms", {}, {"AlarmNames": [GPU, LOG]})
    stub.add_response("delete_alarms", {}, {"AlarmNames": [PART1, PART2]})
    alarms.delete(PLAN.deletion_order())


def test_deleting_alarms_already_gone_is_a_no_op_and_other_errors_raise(stubbed: tuple[StallAlarms, Stubber]) -> None:
    alarms, stub = stubbed
    stub.add_client_error("delete_alarms", "ResourceNotFound", expected_params={"AlarmNames": [LOG]})
    alarms.delete([LOG])
    stub.add_client_error("delete_alarms", "ValidationError", expected_params={"AlarmNames": [PART1]})
    with pytest.raises(Exception, match="ValidationError"):
        alarms.delete([PART1])


def test_delete_batches_hold_at_most_100_names_and_one_possible_composite() -> None:
    jobs = [f"job-{i}" for i in range(250)]
    names = [alarm_name(s, job) for job in jobs for s in StallSignal]
    names += [f"trainguard-gpu-part-{p}-job-{i}" for i in range(3) for p in (1, 2)] + ["someone-elses"]
    batches = delete_batches(names + names[:10])  # repeated names are deleted once
    assert sorted(n for b in batches for n in b) == sorted(set(names))
    assert all(len(b) <= 100 for b in batches)
    assert all(sum(not is_never_composite(n) for n in b) <= 1 for b in batches)
    last_possible_composite = max(i for i, b in enumerate(batches) if any(not is_never_composite(n) for n in b))
    first_part = min(i for i, b in enumerate(batches) if any(parse_gpu_part_name(n) for n in b))
    assert first_part > last_possible_composite
    assert len(batches) == 251 + 1  # 250 idle-GPU alarms + 1 foreign name, each heading a call; then the parts


def test_list_owned_reads_both_prefixes_every_page_and_both_kinds(stubbed: tuple[StallAlarms, Stubber]) -> None:
    alarms, stub = stubbed
    kinds = ["MetricAlarm", "CompositeAlarm"]
    stall = {"AlarmNamePrefix": "trainguard-stall-", "AlarmTypes": kinds}
    stub.add_response(
        "describe_alarms",
        {"MetricAlarms": [{"AlarmName": LOG, "StateValue": "OK"}], "CompositeAlarms": [], "NextToken": "t"},
        stall,
    )
    stub.add_response(
        "describe_alarms",
        {
            "MetricAlarms": [{"AlarmName": "trainguard-stall-unparseable", "StateValue": "OK"}],
            "CompositeAlarms": [{"AlarmName": GPU, "StateValue": "ALARM"}],
        },
        {**stall, "NextToken": "t"},
    )
    stub.add_response(
        "describe_alarms",
        {"MetricAlarms": [{"AlarmName": PART1, "StateValue": "INSUFFICIENT_DATA"}]},
        {"AlarmNamePrefix": "trainguard-gpu-part-", "AlarmTypes": kinds},
    )
    assert alarms.list_owned() == {LOG: "OK", GPU: "ALARM", PART1: "INSUFFICIENT_DATA"}


def test_log_silence_of_2500_jobs_goes_out_in_3_calls(stubbed: tuple[StallAlarms, Stubber]) -> None:
    alarms, stub = stubbed
    values = {f"job-{i}": float(i % 90) for i in range(2500)}
    datum = [
        {
            "MetricName": "LogSilenceOverLimitMinutes",
            "Dimensions": [{"Name": "JobName", "Value": job}],
            "Timestamp": AT,
            "Value": minutes,
        }
        for job, minutes in values.items()
    ]
    for start, end in [(0, 1000), (1000, 2000), (2000, 2500)]:
        stub.add_response("put_metric_data", {}, {"Namespace": "TrainGuard", "MetricData": datum[start:end]})
    alarms.publish_log_silence(values, AT)
    alarms.publish_log_silence({}, AT)  # nothing to publish: no call


def test_a_log_silence_that_cloudwatch_would_reject_raises(stubbed: tuple[StallAlarms, Stubber]) -> None:
    alarms, _ = stubbed
    with pytest.raises(ValueError, match="NaN"):
        alarms.publish_log_silence({"job": float("nan")}, AT)


def test_the_declared_permissions_cover_every_call_and_tagging_on_create() -> None:
    assert set(declared_actions(StallAlarms)) == {
        f"cloudwatch:{op}"
        for op in (
            "PutMetricAlarm",
            "PutCompositeAlarm",
            "DeleteAlarms",
            "DescribeAlarms",
            "TagResource",
            "PutMetricData",
            "SetAlarmState",
        )
    }


def test_rearming_a_metric_alarm_sets_it_to_ok(stubbed: tuple[StallAlarms, Stubber]) -> None:
    alarms, stub = stubbed
    stub.add_response("set_alarm_state", {}, {"AlarmName": LOG, "StateValue": "OK", "StateReason": "r" * 1023})
    alarms.rearm(LOG, "r" * 2000)  # StateReason holds at most 1023 characters


def test_rearming_the_idle_gpu_composite_sets_its_parts_in_alarm_to_ok_first(
    stubbed: tuple[StallAlarms, Stubber],
) -> None:
    alarms, stub = stubbed
    stub.add_response(
        "describe_alarms",
        {"MetricAlarms": [{"AlarmName": PART1, "StateValue": "ALARM"}, {"AlarmName": PART2, "StateValue": "OK"}]},
        {"AlarmNames": [f"trainguard-gpu-part-{i}-{JOB}" for i in range(1, 101)], "AlarmTypes": ["MetricAlarm"]},
    )
    stub.add_response("set_alarm_state", {}, {"AlarmName": PART1, "StateValue": "OK", "StateReason": "why"})
    stub.add_client_error("set_alarm_state", "ResourceNotFound")  # deleted meanwhile: no error
    alarms.rearm(GPU, "why")


# --- moto round trip ----------------------------------------------------------------------------------------

_CHILD = re.compile(r'(?:ALARM|OK|INSUFFICIENT_DATA)\("([^"]+)"\)')


def _put_composite_alarm(self: CloudWatchResponse) -> Any:
    existing = self.cloudwatch_backend.alarms
    missing = [n for n in _CHILD.findall(self._get_param("AlarmRule")) if n not in existing]
    if missing:
        raise ValidationError(f"Could not save the composite alarm as alarms {missing} in the alarm rule do not exist")
    return CloudWatchResponse.put_metric_alarm(self)


def _strict_delete_alarms(original: Any) -> Any:
    def delete_alarms(self: CloudWatchResponse) -> Any:
        names = self._get_param("AlarmNames", [])
        existing = self.cloudwatch_backend.alarms
        if sum(1 for n in names if n in existing and existing[n].rule) > 1:
            raise ValidationError("a DeleteAlarms call can delete at most one composite alarm")
        depended = [n for n in names if any(a.rule and n in _CHILD.findall(a.rule) for a in existing.values())]
        if depended:
            raise ValidationError(
                f"Cannot delete {','.join(depended)} as there are composite alarm(s) depending on them."
            )
        return original(self)

    return delete_alarms


@pytest.fixture
def cloudwatch(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setattr(CloudWatchResponse, "put_composite_alarm", _put_composite_alarm, raising=False)
    monkeypatch.setattr(CloudWatchResponse, "delete_alarms", _strict_delete_alarms(CloudWatchResponse.delete_alarms))
    with mock_aws():
        yield boto3.client("cloudwatch", region_name=REGION)


def test_the_stand_in_enforces_the_order_aws_does(cloudwatch: Any) -> None:
    alarms = StallAlarms(cloudwatch)
    with pytest.raises(Exception, match="do not exist"):
        cloudwatch.put_composite_alarm(**PLAN.composite_alarms[0])
    alarms.create(PLAN)
    with pytest.raises(Exception, match="depending on them"):
        cloudwatch.delete_alarms(AlarmNames=[PART1])


def test_create_list_and_delete_round_trip(cloudwatch: Any) -> None:
    alarms = StallAlarms(cloudwatch)
    small = plan_stall_alarms("bert-finetune", "ml.g5.xlarge", 4, StallThresholds())
    huge = plan_stall_alarms("gpt-pretrain", "ml.p5.48xlarge", 64, StallThresholds())
    cloudwatch.put_metric_alarm(**{**small.metric_alarms[0], "AlarmName": "someone-elses-alarm"})
    for p in (PLAN, small, huge):
        alarms.create(p)
    alarms.create(PLAN)  # repeated: overwritten, not duplicated

    owned = alarms.list_owned()
    assert sorted(owned) == sorted(PLAN.all_names + small.all_names + huge.all_names)
    composite = cloudwatch.describe_alarms(AlarmNames=[GPU], AlarmTypes=["CompositeAlarm"])["CompositeAlarms"][0]
    assert composite["AlarmRule"] == f'ALARM("{PART1}") AND ALARM("{PART2}")'
    assert cloudwatch.list_tags_for_resource(ResourceARN=composite["AlarmArn"])["Tags"] == TAGS

    for name in (PART1, PART2, GPU, alarm_name(StallSignal.IDLE_GPU, "bert-finetune")):
        cloudwatch.set_alarm_state(AlarmName=name, StateValue="ALARM", StateReason="test")
    alarms.rearm(GPU, "not a stall now")
    alarms.rearm(alarm_name(StallSignal.IDLE_GPU, "bert-finetune"), "not a stall now")  # a metric alarm: no parts
    states = alarms.list_owned()
    assert [states[n] for n in (PART1, PART2, GPU, alarm_name(StallSignal.IDLE_GPU, "bert-finetune"))] == ["OK"] * 4

    alarms.delete(list(owned))  # the orphan sweep's call: every owned name of three jobs at once
    assert alarms.list_owned() == {}
    remaining = cloudwatch.describe_alarms(AlarmTypes=["MetricAlarm", "CompositeAlarm"])
    assert [a["AlarmName"] for a in remaining["MetricAlarms"] + remaining["CompositeAlarms"]] == ["someone-elses-alarm"]
    alarms.delete(PLAN.deletion_order())  # again: nothing left, no error
