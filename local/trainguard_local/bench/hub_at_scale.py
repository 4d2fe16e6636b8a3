"""An organization's hub at scale (docs/organization.md, "Scale"): its stall prober over N watched jobs spread over
the hub's own account and region and every enrolled spoke, each call counted by operation and by place; run by
`python -m trainguard_local.bench.measure_stalls --organization`."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from moto import mock_aws

from trainguard.adapters.ledger import create_table_request
from trainguard.config import GuardConfig
from trainguard.domain.stalls import StallThresholds
from trainguard.domain.watched_job import WatchedJob
from trainguard.handlers.wiring import PortSet

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
    from trainguard.adapters.spoke_sessions import spoke_clients_on
    from trainguard.handlers.wiring import PortSet

    tell = on_progress or (lambda what: None)
    now = datetime(2026, 11, 29, 12, 7, tzinfo=UTC)  # a minute that is not a sweep minute
    with mock_aws():
        session = boto3.session.Session(region_name="us-east-1")
        session.client("dynamodb").create_table(**create_table_request("ledger"))
        config = GuardConfig(
            ledger_table_name="ledger",
            topic_arn=f"arn:aws:sns:us-east-1:{ORG_HUB}:trainguard",
            account_id=ORG_HUB,
            enrolled_accounts=tuple(str(222200000000 + n) for n in range(accounts)),
            enrolled_regions=regions,
        )
        setup = PortSet(session.client, config, "us-east-1", lambda: now, spoke_clients_on(session, config))
        places = _fill_places(setup, jobs, now, tell)
        # The hub's functions as a new Lambda container has them: no spoke role assumed yet.
        hub = PortSet(session.client, config, "us-east-1", lambda: now, spoke_clients_on(session, config))
        cycles = _hub_cycles(hub, tell)
    return {"jobs": jobs, "places": places, "accounts": accounts + 1, "regions": list(regions), "cycles": cycles}


def _fill_places(setup: PortSet, jobs: int, now: datetime, tell: Callable[[str], None]) -> int:
    """The watch list of `jobs` jobs spread evenly over the hub's own place and every spoke, each job with a
    checkpoint prefix in its place's bucket; how many places there are."""
    from trainguard.domain.origin import Location
    from trainguard.handlers import stall_prober

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
    return len(places)


def _hub_cycles(hub: PortSet, tell: Callable[[str], None]) -> list[dict[str, Any]]:
    """Two cycles of the hub's stall prober handler, each call counted by operation, account and region."""
    from botocore.client import BaseClient

    from trainguard.handlers import stall_prober
    from trainguard.handlers.observability import metrics

    calls: Counter[tuple[str, str, str]] = Counter()  # (operation, access key, region)
    original = BaseClient._make_api_call

    def counted(client: BaseClient, operation: str, params: dict[str, Any]) -> Any:
        key = client._request_signer._credentials.access_key  # type: ignore[attr-defined]
        calls[(operation, key, client.meta.region_name)] += 1
        return original(client, operation, params)

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
            cycles.append({"seconds_in_process": round(seconds, 2), "watched": result["watched"], **_by_place(calls)})
    finally:
        BaseClient._make_api_call = original  # type: ignore[method-assign]
    return cycles


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
