"""The stall alarms of a job (domain/stall_alarms.py): valid API requests, the 10-metric limit, names, thresholds."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import botocore.session
import pytest
from botocore.validate import ParamValidator

from trainguard.domain.policy import TagKeys
from trainguard.domain.stall_alarms import (
    GPU_METRIC,
    GPU_NAMESPACE,
    GPU_PART_PREFIX,
    LOG_SILENCE_METRIC,
    LOG_SILENCE_NAMESPACE,
    MAX_GPU_HOSTS,
    MAX_RULE_CHARACTERS,
    AlarmKind,
    StallAlarmPlan,
    gpu_part_name,
    is_never_composite,
    owned_alarm_job,
    parse_gpu_part_name,
    plan_stall_alarms,
    possible_gpu_part_names,
)
from trainguard.domain.stalls import ALARM_PREFIX, StallSignal, StallThresholds, alarm_name, parse_alarm_name

HOST_COUNTS = [1, 2, 8, 10, 11, 16, 63, 64, 65, 256, 999, 1000]  # 1,000: MAX_GPU_HOSTS
LONGEST_JOB = "j" * 63  # SageMaker training job names are at most 63 characters
MODEL = botocore.session.get_session().get_service_model("cloudwatch")
DEFAULTS = StallThresholds()


def plan(hosts: int, job: str = "llama-pretrain", instance_type: str = "ml.p4d.24xlarge") -> StallAlarmPlan:
    return plan_stall_alarms(job, instance_type, hosts, DEFAULTS)


def gpu_alarms(p: StallAlarmPlan) -> list[dict[str, Any]]:
    return [a for a in p.metric_alarms if "Metrics" in a]


def assert_valid(operation: str, request: dict[str, Any]) -> None:
    report = ParamValidator().validate(request, MODEL.operation_model(operation).input_shape)
    assert not report.has_errors(), report.generate_report()


def rule_children(rule: str) -> list[str]:
    return re.findall(r'ALARM\("([^"]+)"\)', rule)


@pytest.mark.parametrize("hosts", HOST_COUNTS)
def test_every_request_is_valid_for_the_api(hosts: int) -> None:
    p = plan(hosts, LONGEST_JOB)
    for kind, request in p.creation_order():
        assert_valid("PutCompositeAlarm" if kind is AlarmKind.COMPOSITE else "PutMetricAlarm", request)
        # ParamValidator checks types, required members and minimums; the maximums are checked here.
        assert len(request["AlarmName"]) <= MODEL.shape_for("AlarmName").metadata["max"]
        assert len(request["AlarmDescription"]) <= MODEL.shape_for("AlarmDescription").metadata["max"]
        assert request["Tags"] == [{"Key": "trainguard:job", "Value": LONGEST_JOB}]
        assert not {"AlarmActions", "OKActions", "InsufficientDataActions"} & request.keys()
    for composite in p.composite_alarms:
        assert len(composite["AlarmRule"]) <= MODEL.shape_for("AlarmRule").metadata["max"]


@pytest.mark.parametrize("hosts", HOST_COUNTS)
def test_no_alarm_references_more_than_ten_metrics_and_each_returns_one_series(hosts: int) -> None:
    for alarm in gpu_alarms(plan(hosts)):
        queries = alarm["Metrics"]
        assert sum("MetricStat" in q for q in queries) <= 10
        assert len(queries) <= 20
        returned = [q for q in queries if q["ReturnData"]]
        assert len(returned) == 1 and returned[0]["Expression"] == "MAX(METRICS())"
        assert {q["MetricStat"]["Period"] for q in queries if "MetricStat" in q} == {60}  # one period for all


@pytest.mark.parametrize("hosts", HOST_COUNTS)
def test_every_host_is_watched_exactly_once(hosts: int) -> None:
    watched = Counter(
        q["MetricStat"]["Metric"]["Dimensions"][0]["Value"]
        for alarm in gpu_alarms(plan(hosts))
        for q in alarm["Metrics"]
        if "MetricStat" in q
    )
    assert watched == Counter(f"llama-pretrain/algo-{n}" for n in range(1, hosts + 1))
    for alarm in gpu_alarms(plan(hosts)):
        for q in alarm["Metrics"]:
            if "MetricStat" in q:
                metric = q["MetricStat"]["Metric"]
                assert (metric["Namespace"], metric["MetricName"], q["MetricStat"]["Stat"]) == (
                    GPU_NAMESPACE,
                    GPU_METRIC,
                    "Maximum",
                )


@pytest.mark.parametrize("hosts", HOST_COUNTS)
def test_the_idle_gpu_signal_is_one_alarm_up_to_ten_hosts_and_a_composite_of_every_part_above(hosts: int) -> None:
    p = plan(hosts)
    signal = alarm_name(StallSignal.IDLE_GPU, "llama-pretrain")
    parts = gpu_alarms(p)
    assert len(parts) == -(-hosts // 10)
    if hosts <= 10:
        assert p.composite_alarms == [] and parts[0]["AlarmName"] == signal
        return
    (composite,) = p.composite_alarms
    assert composite["AlarmName"] == signal
    assert rule_children(composite["AlarmRule"]) == [a["AlarmName"] for a in parts]
    assert composite["AlarmRule"] == " AND ".join(f'ALARM("{a["AlarmName"]}")' for a in parts)
    assert [a["AlarmName"] for a in parts] == [gpu_part_name(i, "llama-pretrain") for i in range(1, len(parts) + 1)]
    # The EventBridge rule matches the `trainguard-stall-` prefix: it must see the composite, never a part.
    assert all(not a["AlarmName"].startswith(ALARM_PREFIX) for a in parts)


@pytest.mark.parametrize("hosts", HOST_COUNTS)
def test_composites_are_created_last_and_deleted_first(hosts: int) -> None:
    p = plan(hosts)
    kinds = [kind for kind, _ in p.creation_order()]
    assert kinds == sorted(kinds, key=lambda k: k is AlarmKind.COMPOSITE)
    composite_names = [a["AlarmName"] for a in p.composite_alarms]
    assert p.deletion_order()[: len(composite_names)] == composite_names
    assert sorted(p.deletion_order()) == sorted(p.all_names)
    assert len(set(p.all_names)) == len(p.all_names) == len(p.metric_alarms) + len(p.composite_alarms)


@pytest.mark.parametrize("hosts", HOST_COUNTS)
def test_every_name_is_within_255_characters_and_parses_back_to_the_job(hosts: int) -> None:
    for name in plan(hosts, LONGEST_JOB).all_names:
        assert len(name) <= 255
        assert owned_alarm_job(name) == LONGEST_JOB


@pytest.mark.parametrize(
    ("instance_type", "percent", "limit"),
    [
        ("ml.p4d.24xlarge", 5, 40.0),  # 8 GPUs: GPUUtilization runs 0-800
        ("ml.g5.12xlarge", 5, 20.0),
        ("ml.g5.xlarge", 10, 10.0),
        ("ml.m5.xlarge", 5, 5.0),  # unknown GPU count: one GPU, the strictest limit
        ("ml.p4d.24xlarge", 0, 0.0),
    ],
)
def test_the_per_host_limit_is_the_percent_times_the_gpus(instance_type: str, percent: int, limit: float) -> None:
    thresholds = StallThresholds(gpu_idle_percent=percent, gpu_idle_minutes=25)
    for alarm in gpu_alarms(plan_stall_alarms("job", instance_type, 16, thresholds)):
        assert alarm["Threshold"] == limit
        assert alarm["ComparisonOperator"] == "LessThanOrEqualToThreshold"
        assert alarm["EvaluationPeriods"] == alarm["DatapointsToAlarm"] == 25
        assert alarm["TreatMissingData"] == "notBreaching"


def test_the_log_silence_alarm_fires_when_the_silence_reaches_the_jobs_own_limit() -> None:
    """The prober publishes silence minus the job's limit, so the alarm's threshold is 0 whatever the limit."""
    p = plan_stall_alarms("bert-finetune", "ml.g5.xlarge", 1, StallThresholds(stall_minutes=45))
    log_alarm = p.metric_alarms[0]
    assert {k: v for k, v in log_alarm.items() if k != "AlarmDescription"} == {
        "AlarmName": "trainguard-stall-log-silence-bert-finetune",
        "Namespace": LOG_SILENCE_NAMESPACE,
        "MetricName": LOG_SILENCE_METRIC,
        "Dimensions": [{"Name": "JobName", "Value": "bert-finetune"}],
        "Statistic": "Maximum",
        "Period": 60,
        "EvaluationPeriods": 1,
        "DatapointsToAlarm": 1,
        "Threshold": 0.0,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "TreatMissingData": "notBreaching",
        "Tags": [{"Key": "trainguard:job", "Value": "bert-finetune"}],
    }
    assert "trainguard" in log_alarm["AlarmDescription"] and "45 min" in log_alarm["AlarmDescription"]


def test_the_job_tag_follows_the_tag_prefix() -> None:
    p = plan_stall_alarms("job", "ml.p4d.24xlarge", 12, DEFAULTS, keys=TagKeys(prefix="acme"))
    assert {tag["Key"] for _, a in p.creation_order() for tag in a["Tags"]} == {"acme:job"}


@pytest.mark.parametrize(
    ("job", "hosts", "thresholds", "message"),
    [
        ("", 4, DEFAULTS, "job name"),
        ("job", 4, StallThresholds(gpu_idle_minutes=1441), "one day"),
        ("job", 4, StallThresholds(gpu_idle_minutes=0), "gpu-idle-minutes"),
    ],
)
def test_what_cannot_be_watched_raises(job: str, hosts: int, thresholds: StallThresholds, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        plan_stall_alarms(job, "ml.p4d.24xlarge", hosts, thresholds)


@pytest.mark.parametrize(
    ("name", "job"),
    [
        ("trainguard-stall-log-silence-llama-pretrain", "llama-pretrain"),
        ("trainguard-stall-idle-gpu-llama-pretrain-retry1", "llama-pretrain-retry1"),
        ("trainguard-gpu-part-7-llama-pretrain", "llama-pretrain"),
        ("trainguard-gpu-part-12-7-b", "7-b"),  # a job name that starts with digits
        ("trainguard-gpu-part-0-job", None),
        ("trainguard-gpu-part-x-job", None),
        ("trainguard-gpu-part-3-", None),
        ("trainguard-stall-cpu-job", None),
        ("trainguard-prober-health", None),
        ("my-own-alarm", None),
    ],
)
def test_owned_alarm_job(name: str, job: str | None) -> None:
    assert owned_alarm_job(name) == job


def test_the_possible_part_names_cover_the_largest_job() -> None:
    parts = [a["AlarmName"] for a in gpu_alarms(plan(MAX_GPU_HOSTS))]
    assert possible_gpu_part_names("llama-pretrain") == parts and len(parts) == 100
    # the rearm reads them in one DescribeAlarms call
    assert len(parts) <= MODEL.operation_model("DescribeAlarms").input_shape.members["AlarmNames"].metadata["max"]


@pytest.mark.parametrize("hosts", HOST_COUNTS)
def test_a_composite_names_no_more_children_than_cloudwatch_takes(hosts: int) -> None:
    """PutCompositeAlarm's AlarmRule: "as many as 100 children alarms" and "as many as 500 elements" (botocore)."""
    for composite in plan(hosts, LONGEST_JOB).composite_alarms:
        children = rule_children(composite["AlarmRule"])
        assert len(children) == -(-hosts // 10) <= 100
        assert len(composite["AlarmRule"]) <= MAX_RULE_CHARACTERS


@pytest.mark.parametrize(
    ("hosts", "because"),
    [
        (0, "gives 0 hosts"),
        (-1, "gives -1 hosts"),
        (MAX_GPU_HOSTS + 1, "1,001 hosts"),
        (4096, "4,096 hosts"),
    ],
)
def test_a_job_whose_gpus_no_alarm_can_watch_is_watched_on_log_silence(hosts: int, because: str) -> None:
    p = plan(hosts, LONGEST_JOB)
    assert because in p.gpu_unwatched
    assert p.all_names == [alarm_name(StallSignal.LOG_SILENCE, LONGEST_JOB)] and not p.composite_alarms
    assert_valid("PutMetricAlarm", p.metric_alarms[0])


@pytest.mark.parametrize("hosts", [1, 10, 11, 256, MAX_GPU_HOSTS])
def test_a_job_whose_gpus_are_watched_has_no_unwatched_reason(hosts: int) -> None:
    p = plan(hosts)
    assert p.gpu_unwatched == "" and alarm_name(StallSignal.IDLE_GPU, "llama-pretrain") in p.all_names


def test_part_names_round_trip() -> None:
    assert parse_gpu_part_name(gpu_part_name(3, "a-1-b")) == (3, "a-1-b")
    assert gpu_part_name(1, "job").startswith(GPU_PART_PREFIX)
    assert parse_alarm_name(gpu_part_name(1, "job")) is None


@pytest.mark.parametrize(
    ("name", "never_composite"),
    [
        (alarm_name(StallSignal.LOG_SILENCE, "job"), True),
        (gpu_part_name(2, "job"), True),
        (alarm_name(StallSignal.IDLE_GPU, "job"), False),  # a composite above 10 hosts
        ("someone-elses-alarm", False),
    ],
)
def test_which_names_are_never_composite(name: str, never_composite: bool) -> None:
    assert is_never_composite(name) is never_composite


def test_the_validator_catches_a_malformed_request() -> None:
    request = dict(plan(12).metric_alarms[1])
    request["Metrics"] = [{**request["Metrics"][0], "ReturnData": "no"}]
    with pytest.raises(AssertionError, match="ReturnData"):
        assert_valid("PutMetricAlarm", request)
