"""GuardUsage: what trainguard's clients did, counted in the units AWS bills (boto3 clients on moto, in process)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from trainguard.domain.stall_alarms import LOG_SILENCE_METRIC, LOG_SILENCE_NAMESPACE
from trainguard_local.fleet.trainguard_run.usage import GuardUsage, item_bytes, read_units, write_units
from trainguard_local.simulation.clock import SimClock

REGION = "us-east-1"


@pytest.fixture
def counted() -> Iterator[tuple[GuardUsage, dict[str, Any]]]:
    with mock_aws():
        usage = GuardUsage(SimClock(datetime(2026, 11, 29, 0, 0, tzinfo=UTC)))
        clients = {s: boto3.client(s, region_name=REGION) for s in ("cloudwatch", "sns", "dynamodb", "s3")}
        for service, client in clients.items():
            usage.attach(service, client)
        yield usage, clients


def test_calls_are_counted_per_handler_with_their_billed_quantities(counted: tuple[GuardUsage, dict[str, Any]]) -> None:
    usage, clients = counted
    topic = clients["sns"].create_topic(Name="trainguard")["TopicArn"]  # outside a handler
    usage.invoked("stall_prober")
    clients["cloudwatch"].put_metric_data(
        Namespace=LOG_SILENCE_NAMESPACE, MetricData=[{"MetricName": LOG_SILENCE_METRIC, "Value": 3.0}]
    )
    usage.returned(["ProberCycles"])
    usage.invoked("job_events")
    clients["sns"].publish(
        TopicArn=topic,
        Subject="[trainguard] relaunched job-a",
        Message="x" * 70_000,  # two 64 KB chunks
        MessageAttributes={"outcome": {"DataType": "String", "StringValue": "relaunched"}},
    )
    usage.returned([])

    prober, events = usage.handlers["stall_prober"], usage.handlers["job_events"]
    assert (prober.invocations, events.invocations) == (1, 1)
    assert prober.calls == {"cloudwatch:PutMetricData": 1}
    assert prober.quantities == {"put_metric_data_requests": 1}
    assert events.quantities == {"sns_publish_requests": 2}
    assert usage.calls["sns:CreateTopic"] == 1 and usage.calls["sns:Publish"] == 1
    [message] = usage.notifications
    assert message.subject == "[trainguard] relaunched job-a" and message.attributes == {"outcome": "relaunched"}


def test_an_alarm_lives_from_its_put_to_its_deletion(counted: tuple[GuardUsage, dict[str, Any]]) -> None:
    usage, clients = counted
    cloudwatch = clients["cloudwatch"]
    usage.clock.set_hours(1.0)
    usage.invoked("job_events")
    cloudwatch.put_metric_alarm(
        AlarmName="trainguard-stall-log-silence-job-a",
        Namespace=LOG_SILENCE_NAMESPACE,
        MetricName=LOG_SILENCE_METRIC,
        Dimensions=[{"Name": "JobName", "Value": "job-a"}],
        Statistic="Maximum",
        Period=60,
        EvaluationPeriods=1,
        Threshold=30,
        ComparisonOperator="GreaterThanOrEqualToThreshold",
    )
    cloudwatch.put_metric_alarm(
        AlarmName="trainguard-stall-idle-gpu-job-a",
        Metrics=[{"Id": f"h{n}", "ReturnData": False, "MetricStat": _gpu(n), "Label": f"host {n}"} for n in (1, 2, 3)]
        + [{"Id": "peak", "Expression": "MAX(METRICS())", "ReturnData": True}],
        EvaluationPeriods=20,
        Threshold=5,
        ComparisonOperator="LessThanOrEqualToThreshold",
    )
    usage.clock.set_hours(3.5)
    cloudwatch.delete_alarms(AlarmNames=["trainguard-stall-log-silence-job-a"])
    usage.returned([])

    lives = {life.name: life for life in usage.alarm_lives(until=5.0)}
    silence, idle = lives["trainguard-stall-log-silence-job-a"], lives["trainguard-stall-idle-gpu-job-a"]
    assert (silence.start, silence.end, silence.metrics, silence.log_silence_of) == (1.0, 3.5, 1, "job-a")
    assert (idle.start, idle.end, idle.metrics, idle.log_silence_of) == (1.0, 5.0, 3, None)  # still alive at 5 h
    summary = usage.summary(span_hours=5.0)
    assert summary.watched_job_hours == pytest.approx(2.5)
    assert summary.log_silence_metric_hours == 3  # sent in the hours starting at 1, 2 and 3 h


def test_dynamodb_units_follow_the_item_sizes(counted: tuple[GuardUsage, dict[str, Any]]) -> None:
    usage, clients = counted
    dynamodb = clients["dynamodb"]
    dynamodb.create_table(
        TableName="ledger",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    usage.invoked("job_events")
    big = {"pk": {"S": "job#a"}, "body": {"S": "x" * 5000}}  # 5,010 bytes: 5 write units, 2 strong read units
    dynamodb.put_item(TableName="ledger", Item=big)
    dynamodb.get_item(TableName="ledger", Key={"pk": {"S": "job#a"}}, ConsistentRead=True)
    dynamodb.get_item(TableName="ledger", Key={"pk": {"S": "job#a"}})  # eventually consistent: half
    dynamodb.get_item(TableName="ledger", Key={"pk": {"S": "job#none"}}, ConsistentRead=True)  # nothing: 1 unit
    usage.returned([])

    assert usage.handlers["job_events"].quantities == {"dynamodb_write_units": 5.0, "dynamodb_read_units": 4.0}


@pytest.mark.parametrize(
    ("item", "size"),
    [
        ({"name": {"S": "abc"}}, 4 + 3),
        ({"n": {"N": "123"}}, 1 + 2 + 1),  # 3 significant digits: 2 bytes, plus 1
        ({"n": {"N": "-0.5000"}}, 1 + 1 + 1),
        ({"ok": {"BOOL": True}}, 2 + 1),
        ({"m": {"M": {"a": {"S": "xy"}}}}, 1 + 3 + (1 + 2 + 1)),  # map overhead 3, each element 1
        ({"l": {"L": [{"S": "xy"}, {"NULL": True}]}}, 1 + 3 + (2 + 1) + (1 + 1)),
    ],
)
def test_item_sizes_follow_dynamodbs_rules(item: dict[str, Any], size: int) -> None:
    # https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html
    assert item_bytes(item) == size


def test_a_query_pays_for_what_its_filter_dropped() -> None:
    items = [{"pk": {"S": "x" * 2000}}] * 2  # 4,004 bytes returned, 2 more items read and dropped
    assert read_units("Query", {"ConsistentRead": True}, {"Items": items, "ScannedCount": 4}) == 2.0
    assert read_units("Query", {}, {"Items": [], "ScannedCount": 0}) == 0.5
    assert write_units("UpdateItem", {"Key": {"pk": {"S": "a"}}, "ExpressionAttributeValues": {}}) == 1.0


def _gpu(host: int) -> dict[str, Any]:
    metric = {
        "Namespace": "/aws/sagemaker/TrainingJobs",
        "MetricName": "GPUUtilization",
        "Dimensions": [{"Name": "Host", "Value": f"job-a/algo-{host}"}],
    }
    return {"Metric": metric, "Period": 60, "Stat": "Maximum"}
