"""Every guarded job is watched, in the stand-in (moto and the simulated SageMaker on 127.0.0.1), with the production
handlers and the operator's CLI: a job of 256 hosts has an idle-GPU alarm on every host, and a job opted in with
`trainguard opt-in` while it trains is found by the next prober cycle, its alarms put and `trainguard status` listing
it. Every AWS call of a prober cycle is counted by operation."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from trainguard.domain.stall_alarms import GPU_PART_PREFIX
from trainguard.domain.stalls import StallSignal, alarm_name
from trainguard.domain.watch_discovery import CHECKS_PER_CYCLE
from trainguard.handlers import job_events, stall_prober
from trainguard.handlers.wiring import PortSet, boto3_ports, reset_production_ports
from trainguard.workflows.stall_prober import SWEEP_EVERY_MINUTES
from trainguard_cli.main import main
from trainguard_local.demo.acts import launch
from trainguard_local.fleet.trainguard_run.in_process_clients import CompositeAlarmsInMoto
from trainguard_local.stand_in.local_aws import ACCOUNT, REGION, LocalAWS, local_aws

pytestmark = pytest.mark.slow

WIDE = "wide-pretrain-256"
LATE = "opted-in-while-training"
OPTED_IN = {"trainguard:enabled": "true"}
SERVICES = ("dynamodb", "cloudwatch", "sagemaker", "sns", "s3")


@pytest.fixture(scope="module")
def aws() -> Iterator[LocalAWS]:
    reset_production_ports()
    with local_aws() as stand_in:
        stand_in.quotas.set_value("ml.p5.48xlarge for training job usage", 256)
        stand_in.quotas.set_value("Number of instances across all training jobs", 300)
        launch(stand_in, WIDE, {"tags": OPTED_IN, "instances": ("ml.p5.48xlarge", 256)})
        launch(stand_in, LATE, {"tags": {"team": "vision"}, "instances": ("ml.g5.xlarge", 1)})
        ports, _ = counted_ports(stand_in)
        for event in stand_in.receive_rule_events():  # as Lambda would: the state changes to the job-events handler
            job_events.handle(event, ports)
        yield stand_in
    reset_production_ports()


def counted_ports(aws: LocalAWS) -> tuple[PortSet, Counter[str]]:
    """The production port set on the stand-in, with every call its clients make counted by operation; moto 5.2
    has no PutCompositeAlarm, so the stand-in's stores it in moto's backend (as the fleet simulator does)."""
    ports, calls = boto3_ports(clock=aws.clock), Counter[str]()
    clients = ports._clients
    for service in SERVICES:
        clients(service).meta.events.register("before-call.*.*", lambda model, **_: calls.update([model.name]))
    CompositeAlarmsInMoto(clients("cloudwatch"), ACCOUNT, REGION)
    return ports, calls


def alarm_names(aws: LocalAWS) -> set[str]:
    pages = (
        aws.client("cloudwatch")
        .get_paginator("describe_alarms")
        .paginate(AlarmNamePrefix="trainguard-", AlarmTypes=["MetricAlarm", "CompositeAlarm"])
    )
    return {a["AlarmName"] for page in pages for a in [*page["MetricAlarms"], *page["CompositeAlarms"]]}


def status(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["status", "--json"]) == 0
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report


def test_a_job_of_256_hosts_has_an_idle_gpu_alarm_on_every_host(aws: LocalAWS) -> None:
    cloudwatch = aws.client("cloudwatch")
    parts = sorted(n for n in alarm_names(aws) if n.startswith(GPU_PART_PREFIX) and n.endswith(WIDE))
    assert len(parts) == 26
    hosts = [
        d["Value"]
        for page in cloudwatch.get_paginator("describe_alarms").paginate(AlarmNames=parts[:100])
        for alarm in page["MetricAlarms"]
        for query in alarm["Metrics"]
        if "MetricStat" in query
        for d in query["MetricStat"]["Metric"]["Dimensions"]
    ]
    assert sorted(hosts) == sorted(f"{WIDE}/algo-{n}" for n in range(1, 257))
    [composite] = cloudwatch.describe_alarms(
        AlarmNames=[alarm_name(StallSignal.IDLE_GPU, WIDE)], AlarmTypes=["CompositeAlarm"]
    )["CompositeAlarms"]
    assert sorted(composite["AlarmRule"].split(" AND ")) == sorted(f'ALARM("{part}")' for part in parts)


def test_a_job_opted_in_while_training_is_watched_by_the_next_prober_cycle(
    aws: LocalAWS, capsys: pytest.CaptureFixture[str]
) -> None:
    assert [w["job_name"] for w in status(capsys)["watched"]] == [WIDE]
    assert main(["opt-in", LATE]) == 0
    said = capsys.readouterr().out
    assert "stall watch starts at the stall prober's next run, within 2 minutes" in said
    ports, calls = counted_ports(aws)
    aws.clock.skip(timedelta(minutes=1 + (-aws.clock().minute - 1) % SWEEP_EVERY_MINUTES))  # a sweep minute
    result = stall_prober.handle({}, ports)
    assert result["started"] == [LATE]
    assert {alarm_name(StallSignal.LOG_SILENCE, LATE), alarm_name(StallSignal.IDLE_GPU, LATE)} <= alarm_names(aws)
    watched = {w["job_name"]: w for w in status(capsys)["watched"]}
    assert set(watched) == {WIDE, LATE} and watched[LATE]["hosts"] == 1 and watched[WIDE]["hosts"] == 256
    # The cycle that starts a watch: the list, one job's tags, its description, its ledger item and its alarms;
    # in a sweep minute, which leaves the new job's alarms alone.
    assert aws.clock().minute % SWEEP_EVERY_MINUTES == 0 and result["swept"] == []
    assert calls["ListTrainingJobs"] == 1 and calls["ListTags"] == 2 and calls["DescribeTrainingJob"] == 1
    assert calls["PutMetricAlarm"] == 2 and calls["UpdateItem"] == 1
    starting = dict(calls)
    # The next cycle, in a minute without a sweep: nothing unwatched left, so no tag is read.
    calls.clear()
    aws.clock.skip(timedelta(minutes=1))
    assert stall_prober.handle({}, ports)["started"] == []
    checkpoints = calls.pop("ListObjectsV2", 0)  # each job's checkpoints every 15 minutes, in turn
    assert dict(calls) == {"Query": 1, "PutMetricData": 1, "ListTrainingJobs": 1} and checkpoints <= 2
    print(f"\nprober cycle that starts a watch (a sweep minute): {starting}")
    print(f"prober calls per steady cycle: {dict(calls)}; tags read per cycle at most {CHECKS_PER_CYCLE}")
