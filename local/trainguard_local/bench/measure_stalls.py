"""Measure the stall prober at scale: `python -m trainguard_local.bench.measure_stalls --jobs 2000`.

It builds a watch list of N jobs in the ledger (moto, in process), runs one prober cycle with the
production adapters, and counts every AWS call by operation (botocore's before-call event). It then
prices a guarded job-hour from the counts and from CloudWatch's and Lambda's published rates (the
rates, with their sources, are in fleet/prices.py, shared with the fleet simulator's guard_cost).

`--organization` measures an organization's hub instead (docs/organization.md, "Scale"): N jobs spread over the
hub's own account and region and every enrolled spoke (`--accounts`, `--regions`), each with a checkpoint prefix,
and two cycles of the hub's stall prober handler (the first assumes each spoke role; the second reuses them),
with every call counted by operation and by the account and region it lands in (hub_at_scale.py).
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
from trainguard.handlers.wiring import Site
from trainguard.workflows.function_ports import StallProberPorts
from trainguard.workflows.stall_prober import ProbeReport, probe
from trainguard_local.bench.hub_at_scale import measure_organization
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
        sagemaker = boto3.client("sagemaker", region_name="us-east-1")  # the search for unwatched jobs lists it
        for client in (dynamodb, cloudwatch, sagemaker):
            client.meta.events.register("before-call.*.*", lambda model, **_: calls.update([model.name]))
        _fill_watch_list(dynamodb, cloudwatch, jobs, hosts_per_job, with_alarms, now, tell)
        calls.clear()
        ports = _ports(dynamodb, cloudwatch, sagemaker, now)
        report, seconds, one_cycle = _timed_cycles(ports, calls, cycles, tell)
        tell("the cycle with the orphan sweep")
        sweep_calls = _sweep_calls(replace(ports, clock=lambda: now.replace(minute=15)), calls, one_cycle)
        watched_bytes = sum(len(json.dumps(i)) for i in dynamodb.scan(TableName="ledger")["Items"])
    per_cycle = dict(one_cycle)
    return {
        "jobs": jobs,
        "alarms_created": with_alarms,
        "hosts_per_job": hosts_per_job,
        "watched": report.watched,
        "calls_per_cycle": per_cycle,
        "calls_per_sweep_cycle": sweep_calls,
        "cycle_seconds_in_process": round(seconds, 3),
        "cycles_timed": cycles,
        "watch_list_bytes": watched_bytes,
        "cost_per_job_hour_usd": _costs(jobs, hosts_per_job, per_cycle, seconds, watched_bytes),
    }


def _fill_watch_list(
    dynamodb: Any,
    cloudwatch: Any,
    jobs: int,
    hosts_per_job: int,
    with_alarms: bool,
    now: datetime,
    tell: Callable[[str], None],
) -> None:
    """The ledger's watch list of `jobs` jobs, each with its newest log line (and its alarms, `with_alarms`)."""
    dynamodb.create_table(**create_table_request("ledger"))
    ledger = StallLedger(dynamodb, "ledger")
    for n in range(jobs):
        if n % 100 == 0:
            tell(f"watch list {n:,} of {jobs:,}")
        name = f"job-{n:05d}-llama-70b-pretrain"
        ledger.watch(WatchedJob(name, "ml.p4d.24xlarge", hosts_per_job, StallThresholds(), now - timedelta(hours=2)))
        ledger.record_log_activity(name, now - timedelta(minutes=n % 40), f"step {n} loss 1.234")
        if with_alarms:
            StallAlarms(cloudwatch).create(plan_stall_alarms(name, "ml.p4d.24xlarge", hosts_per_job, StallThresholds()))


def _timed_cycles(
    ports: StallProberPorts, calls: Counter[str], cycles: int, tell: Callable[[str], None]
) -> tuple[ProbeReport, float, Counter[str]]:
    """The first cycle's report, the median wall time of `cycles` prober cycles, and the calls of one cycle."""
    tell(f"prober cycle 1 of {cycles}")
    started = time.perf_counter()
    report = probe(ports)
    timings = [time.perf_counter() - started]
    one_cycle = Counter(calls)
    for cycle in range(2, cycles + 1):  # more cycles, for a median
        tell(f"prober cycle {cycle} of {cycles}")
        started = time.perf_counter()
        probe(ports)
        timings.append(time.perf_counter() - started)
    return report, statistics.median(timings), one_cycle


def _sweep_calls(sweep_ports: StallProberPorts, calls: Counter[str], one_cycle: Counter[str]) -> dict[str, int]:
    """What a cycle in a sweep minute calls beyond the calls of one cycle (`one_cycle`)."""
    calls.clear()
    calls.update(one_cycle)
    probe(sweep_ports)
    return dict(Counter({k: v - one_cycle.get(k, 0) for k, v in calls.items() if v - one_cycle.get(k, 0)}))


def _ports(dynamodb: Any, cloudwatch: Any, sagemaker: Any, now: datetime) -> StallProberPorts:
    """The stall prober's production ports on moto clients."""
    from trainguard.handlers import stall_prober

    region = "us-east-1"
    config = GuardConfig(ledger_table_name="ledger", topic_arn=f"arn:aws:sns:{region}:123456789012:trainguard")
    clients = {
        "dynamodb": dynamodb,
        "cloudwatch": cloudwatch,
        "sagemaker": sagemaker,
        "sns": boto3.client("sns", region_name=region),
        "s3": boto3.client("s3", region_name=region),
    }
    return stall_prober.build_ports(Site(clients.__getitem__, config, region, lambda: now))


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
    parser.add_argument("--organization", action="store_true", help="an organization's hub and its spokes")
    parser.add_argument("--accounts", type=int, default=10, help="with --organization: the enrolled accounts")
    parser.add_argument("--regions", default="us-east-1,us-west-2", help="with --organization: the enrolled regions")
    args = parser.parse_args(argv)
    if args.organization:
        regions = tuple(args.regions.split(","))
        print(json.dumps(measure_organization(args.jobs, args.accounts, regions), indent=2))
        return 0
    print(json.dumps(measure(args.jobs, args.hosts, args.with_alarms), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
