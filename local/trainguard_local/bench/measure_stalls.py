"""Measure the stall prober at scale: `python -m trainguard_local.bench.measure_stalls --jobs 2000`.

It builds a watch list of N jobs in the ledger (moto, in process), runs one prober cycle with the
production adapters, and counts every AWS call by operation (botocore's before-call event). It then
prices a guarded job-hour from the counts and from CloudWatch's and Lambda's published rates (the
rates, with their sources, are in fleet/prices.py, shared with the fleet simulator's guard_cost).

`--organization` measures an organization's hub instead (docs/organization.md, "Scale"): N jobs spread over the
hub's own account and region and every enrolled spoke (`--accounts`, `--regions`), each with a checkpoint prefix,
and two cycles of the hub's stall prober handler (the first assumes each spoke role; the second reuses them),
with every call counted by operation and by the account and region it lands in.
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
    from trainguard.handlers import stall_prober

    region = "us-east-1"
    config = GuardConfig(ledger_table_name="ledger", topic_arn=f"arn:aws:sns:{region}:123456789012:trainguard")
    clients = {
        "dynamodb": dynamodb,
        "cloudwatch": cloudwatch,
        "sns": boto3.client("sns", region_name=region),
        "s3": boto3.client("s3", region_name=region),
    }
    return stall_prober.build_ports(Site(clients.__getitem__, config, region, lambda: now))


ORG_HUB = "123456789012"


def measure_organization(
    jobs: int,
    accounts: int,
    regions: tuple[str, ...] = ("us-east-1", "us-west-2"),
    on_progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Two cycles of an organization's hub prober (trainguard.handlers.stall_prober.handle) over `jobs` watched
    jobs spread evenly over its own place and its spokes: the calls of each cycle by operation and by place,
    and each cycle's wall time in process (moto's own work included)."""
    from botocore.client import BaseClient

    from trainguard.adapters.spoke_sessions import spoke_clients_on
    from trainguard.domain.origin import Location
    from trainguard.handlers import stall_prober
    from trainguard.handlers.observability import metrics
    from trainguard.handlers.wiring import PortSet

    tell = on_progress or (lambda what: None)
    now = datetime(2026, 11, 29, 12, 7, tzinfo=UTC)  # a minute that is not a sweep minute
    enrolled = tuple(str(222200000000 + n) for n in range(accounts))
    calls: Counter[tuple[str, str, str]] = Counter()  # (operation, access key, region)
    original = BaseClient._make_api_call

    def counted(client: BaseClient, operation: str, params: dict[str, Any]) -> Any:
        key = client._request_signer._credentials.access_key  # type: ignore[attr-defined]
        calls[(operation, key, client.meta.region_name)] += 1
        return original(client, operation, params)

    with mock_aws():
        session = boto3.session.Session(region_name="us-east-1")
        session.client("dynamodb").create_table(**create_table_request("ledger"))
        config = GuardConfig(
            ledger_table_name="ledger",
            topic_arn=f"arn:aws:sns:us-east-1:{ORG_HUB}:trainguard",
            account_id=ORG_HUB,
            enrolled_accounts=enrolled,
            enrolled_regions=regions,
        )
        setup = PortSet(session.client, config, "us-east-1", lambda: now, spoke_clients_on(session, config))
        places: list[Location | None] = [None, *setup.spokes()]
        for index, place in enumerate(places):
            tell(f"watch list of place {index + 1} of {len(places)}")
            ports = setup.at(stall_prober.build_ports, place)
            bucket = f"checkpoints-{index}"
            ports.checkpoints._client.create_bucket(  # type: ignore[attr-defined]
                Bucket=bucket,
                **(
                    {}
                    if ports.region == "us-east-1"
                    else {"CreateBucketConfiguration": {"LocationConstraint": ports.region}}
                ),
            )
            for n in range(index, jobs, len(places)):
                name = f"job-{n:05d}-llama-70b-pretrain"
                since = now - timedelta(hours=2)
                job = WatchedJob(
                    name, "ml.p4d.24xlarge", 8, StallThresholds(), since, checkpoint_uri=f"s3://{bucket}/{name}/"
                )
                ports.stall_ledger.watch(job)  # type: ignore[attr-defined]
                ports.stall_ledger.record_log_activity(name, now - timedelta(minutes=n % 40), f"step {n}")  # type: ignore[attr-defined]
        # The hub's functions as a new Lambda container has them: no spoke role assumed yet.
        hub = PortSet(session.client, config, "us-east-1", lambda: now, spoke_clients_on(session, config))
        cycles = []
        BaseClient._make_api_call = counted  # type: ignore[method-assign]
        try:
            for cycle in (1, 2):
                tell(f"hub prober cycle {cycle} of 2")
                calls.clear()
                started = time.perf_counter()
                result = stall_prober.handle({}, hub)
                seconds = time.perf_counter() - started
                metrics.clear_metrics()
                cycles.append(
                    {"seconds_in_process": round(seconds, 2), "watched": result["watched"], **_by_place(calls)}
                )
        finally:
            BaseClient._make_api_call = original  # type: ignore[method-assign]
    return {"jobs": jobs, "places": len(places), "accounts": accounts + 1, "regions": list(regions), "cycles": cycles}


def _by_place(calls: Counter[tuple[str, str, str]]) -> dict[str, Any]:
    from moto.iam.models import get_account_id_from

    by_operation: Counter[str] = Counter()
    per_place: dict[str, Counter[str]] = {}
    for (operation, key, region), count in calls.items():
        by_operation[operation] += count
        per_place.setdefault(f"{get_account_id_from(key)}/{region}", Counter())[operation] += count
    return {
        "calls": dict(sorted(by_operation.items())),
        "calls_by_place": {place: dict(sorted(counts.items())) for place, counts in sorted(per_place.items())},
    }


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
