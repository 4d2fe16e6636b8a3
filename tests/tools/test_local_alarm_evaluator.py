"""The local alarm evaluator against moto: states over a fake clock, metric math, missing data, a
composite, and the events it sends through EventBridge to a rule shaped like the stack's."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from trainguard_local.stand_in.alarm_evaluation import ALARM, INSUFFICIENT_DATA, OK
from trainguard_local.stand_in.alarm_evaluator import (
    LocalAlarmEvaluator,
    compute_expression,
    put_composite_alarm_in_moto,
)

pytestmark = pytest.mark.slow

REGION = "us-east-1"
NAMESPACE = "/aws/sagemaker/TrainingJobs"
START = datetime(2026, 3, 2, 10, 0, 20, tzinfo=UTC)
GPU = {"Namespace": NAMESPACE, "MetricName": "GPUUtilization"}
STALL_PATTERN = {
    "source": ["aws.cloudwatch"],
    "detail-type": ["CloudWatch Alarm State Change"],
    "detail": {"alarmName": [{"prefix": "trainguard-stall-"}], "state": {"value": ["ALARM"]}},
}


@dataclass
class FakeClock:
    now: datetime = START

    def __call__(self) -> datetime:
        return self.now

    def minute(self) -> datetime:
        self.now += timedelta(minutes=1)
        return self.now


@dataclass
class Local:
    cloudwatch: Any
    sqs: Any
    queue_url: str
    clock: FakeClock
    evaluator: LocalAlarmEvaluator
    emitted: list[dict[str, Any]] = field(default_factory=list)

    def gpu(self, host: str, value: float) -> None:
        """A GPUUtilization point in the current minute, which the next tick completes."""
        at = self.clock.now.replace(second=17)
        self.cloudwatch.put_metric_data(
            Namespace=NAMESPACE,
            MetricData=[
                {"MetricName": "GPUUtilization", "Dimensions": [{"Name": "Host", "Value": host}]}
                | {"Timestamp": at, "Value": value, "Unit": "Percent"}
            ],
        )

    def tick(self) -> list[tuple[str, str, str]]:
        """One minute on; evaluate; the (alarm, from, to) changes."""
        self.clock.minute()
        events = self.evaluator.evaluate_all()
        self.emitted += events
        return [
            (e["detail"]["alarmName"], e["detail"]["previousState"]["value"], e["detail"]["state"]["value"])
            for e in events
        ]

    def described(self, name: str) -> str:
        page = self.cloudwatch.describe_alarms(AlarmNames=[name], AlarmTypes=["MetricAlarm", "CompositeAlarm"])
        return str((page["MetricAlarms"] + page["CompositeAlarms"])[0]["StateValue"])

    def delivered(self) -> list[dict[str, Any]]:
        messages = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10).get("Messages", [])
        return [json.loads(m["Body"]) for m in messages]


@pytest.fixture(scope="module")
def clients() -> tuple[Any, Any, Any]:
    """Clients made once: moto intercepts any client made after it is imported, whenever a mock is on."""
    return (
        boto3.client("cloudwatch", region_name=REGION),
        boto3.client("events", region_name=REGION),
        boto3.client("sqs", region_name=REGION),
    )


@pytest.fixture
def local(clients: tuple[Any, Any, Any]) -> Iterator[Local]:
    cloudwatch, events, sqs = clients
    with mock_aws():
        queue_url = sqs.create_queue(QueueName="stall-alarms")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        events.put_rule(Name="stall-alarms", EventPattern=json.dumps(STALL_PATTERN))
        events.put_targets(Rule="stall-alarms", Targets=[{"Id": "queue", "Arn": queue_arn}])
        clock = FakeClock()
        yield Local(cloudwatch, sqs, queue_url, clock, LocalAlarmEvaluator(cloudwatch, events, clock))


def idle_gpu_alarm(local: Local, name: str, hosts: list[str], treat: str = "missing") -> None:
    """The idle-GPU alarm: MAX over the job's hosts of GPUUtilization at or below 5, 3 minutes of 3."""
    metrics: list[dict[str, Any]] = [
        {
            "Id": f"m{i}",
            "MetricStat": {
                "Metric": GPU | {"Dimensions": [{"Name": "Host", "Value": host}]},
                "Period": 60,
                "Stat": "Maximum",
            },
            "ReturnData": False,
        }
        for i, host in enumerate(hosts)
    ]
    metrics.append({"Id": "busiest", "Expression": "MAX(METRICS())", "Label": "Busiest GPU", "ReturnData": True})
    local.cloudwatch.put_metric_alarm(
        AlarmName=name,
        AlarmDescription="every GPU of the job is idle",
        Metrics=metrics,
        EvaluationPeriods=3,
        DatapointsToAlarm=3,
        Threshold=5.0,
        ComparisonOperator="LessThanOrEqualToThreshold",
        TreatMissingData=treat,
    )


def host_alarm(local: Local, name: str, host: str) -> None:
    """A single-metric alarm: one host's GPUs at or below 5 for 3 minutes of 3."""
    local.cloudwatch.put_metric_alarm(
        AlarmName=name,
        AlarmDescription="one host is idle",
        Namespace=NAMESPACE,
        MetricName="GPUUtilization",
        Dimensions=[{"Name": "Host", "Value": host}],
        Statistic="Maximum",
        Period=60,
        EvaluationPeriods=3,
        DatapointsToAlarm=3,
        Threshold=5.0,
        ComparisonOperator="LessThanOrEqualToThreshold",
    )


def test_a_single_metric_alarm_goes_from_insufficient_data_to_ok_to_alarm(local: Local) -> None:
    host_alarm(local, "trainguard-stall-idle-gpu-job1", "job1/algo-1")
    assert local.evaluator.evaluate_all() == []
    assert local.described("trainguard-stall-idle-gpu-job1") == INSUFFICIENT_DATA  # AWS's start, not moto's OK

    changes = []
    for value in (80.0, 75.0, 90.0, 0.0, 0.0, 0.0):  # busy for 3 minutes, then idle for 3
        local.gpu("job1/algo-1", value)
        changes.append(local.tick())
    assert changes == [
        [("trainguard-stall-idle-gpu-job1", INSUFFICIENT_DATA, OK)],  # one busy point: 0 of 3 breaching is OK
        [],
        [],
        [],
        [],
        [("trainguard-stall-idle-gpu-job1", OK, ALARM)],  # the third idle minute
    ]
    assert local.described("trainguard-stall-idle-gpu-job1") == ALARM
    [delivered] = local.delivered()
    assert delivered["detail"]["state"]["reason"].startswith("Threshold Crossed: 3 out of the last 3 datapoints [0.0 (")
    assert json.loads(delivered["detail"]["state"]["reasonData"])["recentDatapoints"] == [0.0, 0.0, 0.0]


def test_a_point_in_the_unfinished_minute_waits_for_the_minute_to_end(local: Local) -> None:
    host_alarm(local, "trainguard-stall-idle-gpu-job1", "job1/algo-1")
    local.gpu("job1/algo-1", 80.0)
    assert local.evaluator.evaluate_all() == []  # the minute of the point is not over
    assert local.tick() == [("trainguard-stall-idle-gpu-job1", INSUFFICIENT_DATA, OK)]


def test_max_of_the_hosts_alarms_only_when_every_host_is_idle(local: Local) -> None:
    hosts = ["job2/algo-1", "job2/algo-2", "job2/algo-3"]
    idle_gpu_alarm(local, "trainguard-stall-idle-gpu-job2", hosts)
    history = []
    for minute in range(8):
        for host in hosts:  # algo-1 idles throughout; the others idle from minute 3 on
            local.gpu(host, 0.0 if host.endswith("1") or minute >= 3 else 95.0)
        history += local.tick()
    assert history == [
        ("trainguard-stall-idle-gpu-job2", INSUFFICIENT_DATA, OK),
        ("trainguard-stall-idle-gpu-job2", OK, ALARM),
    ]
    assert local.described("trainguard-stall-idle-gpu-job2") == ALARM
    assert len(local.delivered()) == 1


def test_missing_data_treated_as_not_breaching_never_alarms(local: Local) -> None:
    idle_gpu_alarm(local, "trainguard-stall-idle-gpu-job3", ["job3/algo-1"], treat="notBreaching")
    history = []
    for minute in range(12):
        if minute in (2, 7):  # two lone idle points; otherwise nothing is published
            local.gpu("job3/algo-1", 0.0)
        history += local.tick()
    assert history == [("trainguard-stall-idle-gpu-job3", INSUFFICIENT_DATA, OK)]
    assert local.delivered() == []


def test_a_composite_and_alarms_when_both_members_do(local: Local) -> None:
    host_alarm(local, "idle-algo-1", "job4/algo-1")
    host_alarm(local, "idle-algo-2", "job4/algo-2")
    put_composite_alarm_in_moto("trainguard-stall-job4", 'ALARM("idle-algo-1") AND ALARM(idle-algo-2)', "both idle")
    composite_history = []
    for minute in range(7):  # algo-1 idles throughout; algo-2 from minute 3 on
        local.gpu("job4/algo-1", 0.0)
        local.gpu("job4/algo-2", 0.0 if minute >= 3 else 60.0)
        composite_history += [c for c in local.tick() if c[0] == "trainguard-stall-job4"]
    assert composite_history == [
        ("trainguard-stall-job4", INSUFFICIENT_DATA, OK),
        ("trainguard-stall-job4", OK, ALARM),
    ]
    assert local.described("trainguard-stall-job4") == ALARM
    [delivered] = local.delivered()  # the members' names lack the prefix: only the composite matches
    assert delivered["detail"]["alarmName"] == "trainguard-stall-job4"
    assert delivered["detail"]["configuration"] == {
        "description": "both idle",
        "alarmRule": 'ALARM("idle-algo-1") AND ALARM(idle-algo-2)',
    }
    triggering = json.loads(delivered["detail"]["state"]["reasonData"])["triggeringAlarms"]
    assert [t["arn"].rsplit(":", 1)[1] for t in triggering] == ["idle-algo-1", "idle-algo-2"]
    assert delivered["detail"]["state"]["reason"].startswith(
        "arn:aws:cloudwatch:us-east-1:123456789012:alarm:idle-algo-2"
    )


def test_the_delivered_events_match_the_stall_rule_and_have_the_keys_of_aws_samples(
    local: Local, fixture: Callable[[str], Any]
) -> None:
    host_alarm(local, "trainguard-stall-idle-gpu-job5", "job5/algo-1")
    idle_gpu_alarm(local, "trainguard-stall-idle-gpu-job6", ["job6/algo-1", "job6/algo-2"])
    host_alarm(local, "someone-elses-alarm", "job5/algo-1")  # goes to ALARM too, but is not ours
    put_composite_alarm_in_moto("trainguard-stall-job5", "ALARM(trainguard-stall-idle-gpu-job5)")
    for _ in range(4):
        for host in ("job5/algo-1", "job6/algo-1", "job6/algo-2"):
            local.gpu(host, 1.0)
        local.tick()
    delivered = {e["detail"]["alarmName"]: e for e in local.delivered()}
    assert sorted(delivered) == [
        "trainguard-stall-idle-gpu-job5",
        "trainguard-stall-idle-gpu-job6",
        "trainguard-stall-job5",
    ]
    emitted = {e["detail"]["alarmName"]: e for e in local.emitted if e["detail"]["state"]["value"] == ALARM}
    assert "someone-elses-alarm" in emitted
    samples = {
        name: fixture(f"events/cloudwatch_alarm_state_change.{name}.awsdocs.json")
        for name in ("single_metric", "metric_math", "composite")
    }
    for name, kind in [
        ("trainguard-stall-idle-gpu-job5", "single_metric"),
        ("trainguard-stall-idle-gpu-job6", "metric_math"),
        ("trainguard-stall-job5", "composite"),
    ]:
        event, sample = emitted[name], samples[kind]
        assert delivered[name]["detail"] == event["detail"]
        assert delivered[name]["id"] == event["id"]
        assert set(event) == set(sample)  # moto leaves "account" out of what it delivers; we return it
        assert (event["source"], event["detail-type"]) == (sample["source"], sample["detail-type"])
        assert event["resources"] == [f"arn:aws:cloudwatch:us-east-1:123456789012:alarm:{name}"]
        detail = event["detail"]
        assert set(detail) == set(sample["detail"])
        assert set(detail["state"]) == set(sample["detail"]["state"]) - {
            "actionsSuppressedBy",
            "actionsSuppressedReason",
        }
        assert detail["state"]["timestamp"] == "2026-03-02T10:03:20.000+0000"
        if kind == "composite":  # OK since the first minute (its member was not in ALARM)
            assert detail["previousState"]["value"] == OK
            assert set(detail["previousState"]) == set(sample["detail"]["previousState"])
        else:  # the initial state, shaped like the metric-math sample's previousState
            assert detail["previousState"] == {
                "value": INSUFFICIENT_DATA,
                "reason": "Unchecked: Initial alarm creation",
                "timestamp": "2026-03-02T10:01:20.000+0000",
            }
            assert set(detail["previousState"]) == set(samples["metric_math"]["detail"]["previousState"])
        reason_data = json.loads(detail["state"]["reasonData"])
        assert set(reason_data) == set(json.loads(sample["detail"]["state"]["reasonData"]))
        if kind == "composite":
            assert set(detail["configuration"]) == {"alarmRule"}
            continue
        assert set(detail["configuration"]) == set(sample["detail"]["configuration"])
        for ours in detail["configuration"]["metrics"]:
            [alike, *_] = [
                m for m in sample["detail"]["configuration"]["metrics"] if ("expression" in m) == ("expression" in ours)
            ]
            assert set(ours) == set(alike)
            if "metricStat" in ours:
                assert set(ours["metricStat"]) == set(alike["metricStat"])
                assert set(ours["metricStat"]["metric"]) == set(alike["metricStat"]["metric"])


def test_set_alarm_state_by_hand_lasts_until_the_next_evaluation(local: Local) -> None:
    host_alarm(local, "trainguard-stall-idle-gpu-job7", "job7/algo-1")
    local.gpu("job7/algo-1", 80.0)
    assert local.tick() == [("trainguard-stall-idle-gpu-job7", INSUFFICIENT_DATA, OK)]
    local.cloudwatch.set_alarm_state(AlarmName="trainguard-stall-idle-gpu-job7", StateValue="ALARM", StateReason="test")
    assert local.tick() == [("trainguard-stall-idle-gpu-job7", ALARM, OK)]
    assert local.described("trainguard-stall-idle-gpu-job7") == OK


def test_an_unsupported_expression_is_named(local: Local) -> None:
    local.cloudwatch.put_metric_alarm(
        AlarmName="banded",
        Metrics=[
            {"Id": "m1", "ReturnData": False, "MetricStat": {"Metric": GPU, "Period": 60, "Stat": "Average"}},
            {"Id": "e1", "Expression": "m1 * 2", "ReturnData": True},
        ],
        EvaluationPeriods=1,
        Threshold=1.0,
        ComparisonOperator="GreaterThanThreshold",
    )
    with pytest.raises(NotImplementedError, match=r"'m1 \* 2'"):
        local.evaluator.evaluate_all()


def test_expressions_over_the_values_present() -> None:
    t1, t2 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC), datetime(2026, 3, 2, 10, 1, tzinfo=UTC)
    series = {"m0": {t1: 1.0, t2: 4.0}, "m1": {t1: 3.0}}
    assert compute_expression("MAX(METRICS())", series) == {t1: 3.0, t2: 4.0}
    assert compute_expression("MIN( METRICS() )", series) == {t1: 1.0, t2: 4.0}
    assert compute_expression("SUM(METRICS())", series) == {t1: 4.0, t2: 4.0}
    assert compute_expression("AVG(METRICS())", series) == {t1: 2.0, t2: 4.0}
    assert compute_expression("m1", series) == {t1: 3.0}
    with pytest.raises(NotImplementedError, match="RATE"):
        compute_expression("RATE(m1)", series)
