"""Measure the stall prober at scale: `python -m trainguard_local.bench.measure_stalls --jobs 2000`.

It builds a watch list of N jobs in the ledger (moto, in process), runs one prober cycle with the
production adapters, and counts every AWS call by operation (botocore's before-call event). It then
prices a guarded job-hour from the counts and from CloudWatch's and Lambda's published rates (the
rates, with their sources, are in fleet/prices.py, shared with the fleet simulator's guard_cost).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from moto import mock_aws

from trainguard.adapters.alarms import StallAlarms
from trainguard.adapters.ledger import create_table_request
from trainguard.adapters.stall_ledger import StallLedger
from trainguard.config import GuardConfig
from trainguard.domain.stall_alarms import plan_stall_alarms
from trainguard.domain.stalls import StallThresholds
from trainguard.domain.watched_job import WatchedJob
from trainguard.handlers.wiring import build_ports
from trainguard.workflows.function_ports import StallProberPorts
from trainguard.workflows.stall_prober import probe
from trainguard_local.fleet.prices import (  # us-east-1 list prices, each with its source
    ALARM_METRIC_MONTH,
    COMPOSITE_ALARM_MONTH,
    CUSTOM_METRIC_MONTH,
    DYNAMODB_READ_PER_MILLION,
    HOURS_PER_MONTH,
    LAMBDA_ARM_GB_SECOND,
    LAMBDA_REQUEST,
    PUT_METRIC_DATA_PER_1000,
)


def measure(
    jobs: int,
    hosts_per_job: int = 8,
    with_alarms: bool = False,
    cycles: int = 1,
    on_progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """One prober cycle's AWS calls and cost at `jobs` watched jobs; `on_progress` is told what runs."""
    calls: Counter[str] = Counter()
    tell = on_progress or (lambda what: None)
    now = datetime(2026, 11, 29, 12, 7, tzinfo=UTC)  # a minute that is not a sweep minute
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
        for client in (dynamodb, cloudwatch):
            client.meta.events.register("before-call.*.*", lambda model, **_: calls.update([model.name]))
        dynamodb.create_table(**create_table_request("ledger"))
        ledger = StallLedger(dynamodb, "ledger")
        for n in range(jobs):
            if n % 100 == 0:
                tell(f"watch list {n:,} of {jobs:,}")
            name = f"job-{n:05d}-llama-70b-pretrain"
            ledger.watch(
                WatchedJob(name, "ml.p4d.24xlarge", hosts_per_job, StallThresholds(), now - timedelta(hours=2))
            )
            ledger.record_log_activity(name, now - timedelta(minutes=n % 40), f"step {n} loss 1.234")
            if with_alarms:
                StallAlarms(cloudwatch).create(
                    plan_stall_alarms(name, "ml.p4d.24xlarge", hosts_per_job, StallThresholds())
                )
        calls.clear()
        ports = _ports(dynamodb, cloudwatch, now)
        tell(f"prober cycle 1 of {cycles}")
        started = time.perf_counter()
        report = probe(ports)
        seconds = time.perf_counter() - started
        per_cycle_calls = Counter(calls)
        timings = [seconds]
        for cycle in range(2, cycles + 1):  # more cycles, for a median
            tell(f"prober cycle {cycle} of {cycles}")
            started = time.perf_counter()
            probe(ports)
            timings.append(time.perf_counter() - started)
        seconds = statistics.median(timings)
        calls.clear()
        calls.update(per_cycle_calls)
        sweep_ports = replace(ports, clock=lambda: now.replace(minute=15))
        before = Counter(calls)
        tell("the cycle with the orphan sweep")
        probe(sweep_ports)
        sweep_calls = Counter({k: v - before.get(k, 0) for k, v in calls.items() if v - before.get(k, 0)})
        watched_bytes = sum(len(json.dumps(i)) for i in dynamodb.scan(TableName="ledger")["Items"])
    per_cycle = dict(Counter({k: v for k, v in before.items()}))
    return {
        "jobs": jobs,
        "alarms_created": with_alarms,
        "hosts_per_job": hosts_per_job,
        "watched": report.watched,
        "calls_per_cycle": per_cycle,
        "calls_per_sweep_cycle": dict(sweep_calls),
        "cycle_seconds_in_process": round(seconds, 3),
        "cycles_timed": cycles,
        "watch_list_bytes": watched_bytes,
        "cost_per_job_hour_usd": _costs(jobs, hosts_per_job, per_cycle, seconds, watched_bytes),
    }


def _ports(dynamodb: Any, cloudwatch: Any, now: datetime) -> StallProberPorts:
    """The stall prober's production ports on moto clients."""
    region = "us-east-1"
    config = GuardConfig(ledger_table_name="ledger", topic_arn=f"arn:aws:sns:{region}:123456789012:trainguard")
    clients = {
        "dynamodb": dynamodb,
        "cloudwatch": cloudwatch,
        "sns": boto3.client("sns", region_name=region),
        "s3": boto3.client("s3", region_name=region),
    }
    return build_ports(StallProberPorts, clients.__getitem__, config, region, lambda: now)


def _costs(jobs: int, hosts: int, calls: dict[str, int], seconds: float, watched_bytes: int) -> dict[str, float]:
    alarms = (1 + hosts) * ALARM_METRIC_MONTH / HOURS_PER_MONTH  # log silence + one metric per host
    if hosts > 10:
        alarms += COMPOSITE_ALARM_MONTH / HOURS_PER_MONTH  # the composite
    metric = CUSTOM_METRIC_MONTH / HOURS_PER_MONTH
    puts = calls.get("PutMetricData", 0) * 60 * PUT_METRIC_DATA_PER_1000 / 1000 / jobs
    lambda_seconds = seconds * 60 / jobs
    prober = 60 * LAMBDA_REQUEST / jobs + lambda_seconds * 0.256 * LAMBDA_ARM_GB_SECOND
    reads = 60 * (watched_bytes / 4096 / 2) * DYNAMODB_READ_PER_MILLION / 1_000_000 / jobs  # eventually consistent
    return {
        "alarms": round(alarms, 6),
        "log_silence_metric": round(metric, 6),
        "put_metric_data": round(puts, 8),
        "prober_lambda": round(prober, 8),
        "watch_list_reads": round(reads, 8),
        "total": round(alarms + metric + puts + prober + reads, 6),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--with-alarms", action="store_true", help="also create every job's alarms (slow in moto)")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.jobs, args.hosts, args.with_alarms), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
