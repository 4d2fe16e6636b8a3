"""The evidence ports: JobLogsPort, GpuMetricsPort and Checkpoints. FakeJobLogs, FakeGpuMetrics and FakeCheckpoints,
and adapters/job_activity.py's JobLogs and GpuMetrics and adapters/checkpoints.py's CheckpointReader on moto's
CloudWatch Logs, CloudWatch and S3. The fakes answer alike for every job, host and prefix: the contract holds
them to what the adapters answer for one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

import boto3
import pytest

from tests.contracts.conftest import IMPLEMENTATIONS, REGION
from tests.fakes import NOW, FakeCheckpoints, FakeGpuMetrics, FakeJobLogs
from trainguard.adapters.checkpoints import CheckpointReader
from trainguard.adapters.job_activity import GPU_NAMESPACE, LOG_GROUP, GpuMetrics, JobLogs
from trainguard.workflows.ports import Checkpoints, GpuAveragesPort, GpuMetricsPort, JobLogsPort

JOB = "llama-pretrain"


@dataclass
class Logs:
    logs: JobLogsPort
    log: Callable[[datetime, str], None]  # the job's training script writes a line at that time


@pytest.fixture(params=IMPLEMENTATIONS)
def logs(request: pytest.FixtureRequest) -> Logs:
    if request.param == "fake":
        fake = FakeJobLogs()

        def remember(at: datetime, line: str) -> None:
            if fake.newest is None or at >= fake.newest:
                fake.newest, fake.line = at, line

        return Logs(fake, remember)
    request.getfixturevalue("aws")
    client = boto3.client("logs", region_name=REGION)
    client.create_log_group(logGroupName=LOG_GROUP)
    stream = f"{JOB}/algo-1-1764417600"
    client.create_log_stream(logGroupName=LOG_GROUP, logStreamName=stream)

    def put(at: datetime, line: str) -> None:
        event = {"timestamp": int(at.timestamp() * 1000), "message": line}
        client.put_log_events(logGroupName=LOG_GROUP, logStreamName=stream, logEvents=[event])

    return Logs(JobLogs(client), put)


def test_a_job_without_log_lines_has_no_newest_event(logs: Logs) -> None:
    assert logs.logs.newest_event(JOB, NOW - timedelta(hours=1)) == (None, "")


def test_the_newest_line_since_a_time_is_found_cut_to_300_characters(logs: Logs) -> None:
    logs.log(NOW - timedelta(minutes=30), "step 10 loss 1.93\n")
    logs.log(NOW - timedelta(minutes=20), "step 11 loss 1.91 " + "x" * 400 + "\n")
    newest, line = logs.logs.newest_event(JOB, NOW - timedelta(hours=1))
    assert newest == NOW - timedelta(minutes=20) and line == ("step 11 loss 1.91 " + "x" * 400)[:300]
    assert logs.logs.newest_event(JOB, NOW - timedelta(minutes=10)) == (None, "")  # nothing since


@dataclass
class Prefixes:
    checkpoints: Checkpoints
    holding: Callable[[int], str]  # the URI of a prefix holding that many objects


@pytest.fixture(params=IMPLEMENTATIONS)
def prefixes(request: pytest.FixtureRequest) -> Prefixes:
    if request.param == "fake":
        fake = FakeCheckpoints()

        def configured(count: int) -> str:
            fake.count = count
            return f"s3://ckpt/{count}/"

        return Prefixes(fake, configured)
    request.getfixturevalue("aws")
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket="ckpt")

    def filled(count: int) -> str:
        for i in range(count):
            s3.put_object(Bucket="ckpt", Key=f"{count}/step-{i:05d}/shard.pt", Body=b"x")
        return f"s3://ckpt/{count}/"

    return Prefixes(CheckpointReader(s3), filled)


def test_a_checkpoint_prefix_is_read_as_its_count_and_newest_object(prefixes: Prefixes) -> None:
    state = prefixes.checkpoints.read(prefixes.holding(3))
    assert state.configured and state.object_count == 3 and state.newest_object_time is not None
    assert len(state.object_times) == 3 and max(state.object_times) == state.newest_object_time
    assert not state.is_empty and not state.listing_error


def test_an_empty_prefix_no_uri_and_a_uri_that_is_not_s3(prefixes: Prefixes) -> None:
    empty = prefixes.checkpoints.read(prefixes.holding(0))
    assert empty.is_empty and empty.newest_object_time is None and not empty.listing_error
    assert not prefixes.checkpoints.read("").configured
    assert prefixes.checkpoints.read("https://ckpt/run/").listing_error == "not an s3:// URI"


class GpuFigures(GpuMetricsPort, GpuAveragesPort, Protocol):
    """Both reads of the hosts' GPUUtilization: the stall alarms' busiest minute, the prober's mean."""


@dataclass
class Gpus:
    metrics: GpuFigures
    busy: Callable[[int, list[float]], None]  # each of the job's first n hosts publishes these GPUUtilization data


@pytest.fixture(params=IMPLEMENTATIONS)
def gpus(request: pytest.FixtureRequest) -> Gpus:
    if request.param == "fake":
        fake = FakeGpuMetrics()

        def busy(hosts: int, values: list[float]) -> None:
            fake.value = max(values)
            fake.averages = {host: sum(values) / len(values) for host in range(1, hosts + 1)}

        return Gpus(fake, busy)
    request.getfixturevalue("aws")
    client = boto3.client("cloudwatch", region_name=REGION)

    def publish(hosts: int, values: list[float]) -> None:
        for host in range(1, hosts + 1):
            dimensions = [{"Name": "Host", "Value": f"{JOB}/algo-{host}"}]
            data = [
                {
                    "MetricName": "GPUUtilization",
                    "Dimensions": dimensions,
                    "Value": value,
                    "Timestamp": NOW - timedelta(minutes=10 - minute),
                }
                for minute, value in enumerate(values)
            ]
            client.put_metric_data(Namespace=GPU_NAMESPACE, MetricData=data)

    return Gpus(GpuMetrics(client), publish)


def test_hosts_that_published_nothing_are_absent(gpus: Gpus) -> None:
    assert gpus.metrics.busiest_by_host(JOB, 4, NOW - timedelta(minutes=20), NOW) == {}


def test_each_hosts_busiest_minute_is_read(gpus: Gpus) -> None:
    gpus.busy(4, [10.0, 700.0, 35.5])
    busiest = gpus.metrics.busiest_by_host(JOB, 4, NOW - timedelta(minutes=20), NOW)
    assert busiest == {f"{JOB}/algo-{host}": 700.0 for host in range(1, 5)}


def test_each_hosts_mean_is_read(gpus: Gpus) -> None:
    assert gpus.metrics.average_by_host(JOB, 4, NOW - timedelta(minutes=20), NOW) == {}
    gpus.busy(3, [10.0, 700.0, 35.5])
    means = gpus.metrics.average_by_host(JOB, 4, NOW - timedelta(minutes=20), NOW)
    assert means == {f"{JOB}/algo-{host}": pytest.approx(248.5) for host in range(1, 4)}
