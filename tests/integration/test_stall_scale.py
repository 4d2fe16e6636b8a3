"""The stall prober's cost does not grow with calls per job: one Query and one PutMetricData per 1,000 jobs
a minute, whatever the fleet; and it rides out throttling with botocore's retries."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from moto import mock_aws

from trainguard.adapters.alarms import StallAlarms
from trainguard.adapters.ledger import create_table_request
from trainguard.adapters.stall_ledger import StallLedger
from trainguard.domain.stall_alarms import LOG_SILENCE_METRIC
from trainguard.domain.stalls import StallThresholds
from trainguard.domain.watched_job import WatchedJob
from trainguard_local.bench.measure_stalls import measure

pytestmark = pytest.mark.slow


def test_calls_per_cycle_for_1001_jobs() -> None:
    result = measure(1001)
    assert result["watched"] == 1001
    # ListTrainingJobs: the search for opted-in jobs nobody watches (one page: moto lists no job InProgress here)
    assert result["calls_per_cycle"] == {"Query": 1, "PutMetricData": math.ceil(1001 / 1000), "ListTrainingJobs": 1}
    assert result["cost_per_job_hour_usd"]["total"] < 0.01


def test_the_prober_rides_out_5xx_on_put_metric_data() -> None:
    """Injected at botocore's send step, so the client's real retry configuration (standard mode) is what
    recovers. (CloudWatch speaks smithy-rpc-v2-cbor in this botocore; a 503 needs no body to be retried.)"""
    now = datetime(2026, 11, 29, 12, 7, tzinfo=UTC)
    with mock_aws():
        cloudwatch = boto3.client(
            "cloudwatch", region_name="us-east-1", config=Config(retries={"mode": "standard", "max_attempts": 5})
        )
        throttled = {"left": 2}

        def throttle(**_: object) -> AWSResponse | None:
            if throttled["left"]:
                throttled["left"] -= 1
                return AWSResponse("https://monitoring.us-east-1.amazonaws.com/", 503, {}, _Raw(b""))
            return None

        cloudwatch.meta.events.register("before-send.cloudwatch.PutMetricData", throttle)
        StallAlarms(cloudwatch).publish_log_silence({"job-a": 12.0}, now)
        assert throttled["left"] == 0  # two failed attempts, then the retry went through
        stats = cloudwatch.get_metric_statistics(
            Namespace="TrainGuard",
            MetricName=LOG_SILENCE_METRIC,
            Dimensions=[{"Name": "JobName", "Value": "job-a"}],
            StartTime=now - timedelta(minutes=5),
            EndTime=now + timedelta(minutes=5),
            Period=60,
            Statistics=["Maximum"],
        )
        assert [p["Maximum"] for p in stats["Datapoints"]] == [12.0]


def test_the_watch_list_reads_back_every_job_with_its_last_line() -> None:
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(**create_table_request("ledger"))
        ledger = StallLedger(dynamodb, "ledger")
        start = datetime(2026, 11, 29, 10, tzinfo=UTC)
        for n in range(30):
            ledger.watch(WatchedJob(f"job-{n}", "ml.p4d.24xlarge", 8, StallThresholds(), start))
            ledger.record_log_activity(f"job-{n}", start, "x" * 300)
        assert len(ledger.watched()) == 30


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: object) -> list[bytes]:
        return [self._body]

    def read(self) -> bytes:
        return self._body


def test_an_organizations_hub_prober_makes_one_query_per_place_and_assumes_each_spoke_role_once() -> None:
    from trainguard_local.bench.hub_at_scale import ORG_HUB, measure_organization

    result = measure_organization(250, accounts=2, regions=("us-east-1", "us-west-2"))

    first, second = result["cycles"]
    spokes = result["places"] - 1
    assert result["places"] == 5 and first["watched"] == second["watched"] == 250
    assert first["calls"]["AssumeRole"] == spokes and "AssumeRole" not in second["calls"]  # credentials reused
    hub = second["calls_by_place"].pop(f"{ORG_HUB}/us-east-1")
    assert hub["Query"] == result["places"]  # each place's watch list: one Query, in the hub's own ledger
    assert hub["PutMetricData"] == 1  # the hub's own jobs' silence, in its own account
    assert len(second["calls_by_place"]) == spokes
    for place, calls in second["calls_by_place"].items():
        assert calls.get("PutMetricData") == 1 and "Query" not in calls, place  # each spoke's silence, there
