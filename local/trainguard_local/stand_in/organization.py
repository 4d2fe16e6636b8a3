"""An organization in the stand-in: a hub and its spokes, three accounts in two regions (docs/organization.md).

- moto server on 127.0.0.1 serves every account: the hub's ledger, topic and schedules in the hub's account, the
  spokes' alarms, metrics, logs and checkpoint buckets in theirs. A client acts in the account its credentials
  belong to: moto's STS AssumeRole hands out credentials of the role's account, so the hub's functions reach a
  spoke exactly as on AWS, through `trainguard-spoke-<function>-<region>` (adapters/spoke_sessions.py).
- One simulated SageMaker and one simulated Service Quotas per spoke, behind one endpoint each, which answers a
  request with the plane of the account and region it is signed for (accounts.py).
- The spokes' forwarding rules and the hub's bus (infra/spoke_stack.py, infra/hub.py) are played here: moto
  forwards an event to another account's bus without its `account` and `region` (docs/local-aws.md), so each
  spoke's events are matched against the forwarding patterns and the hub's routes with moto's own pattern
  matcher, from the stacks' own patterns (infra/event_patterns.py), and queued for the hub's functions. What the
  hub's refused-events rule matches is parked, as the stack parks it in a queue.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3

from infra.event_patterns import from_enrolled, guarded_events, not_enrolled, spoke_log_lines_pattern
from trainguard.config import GuardConfig
from trainguard.domain.origin import Location
from trainguard.handlers.wiring import PortSet
from trainguard_local.simulation.clock import SimClock
from trainguard_local.stand_in.accounts import PlanesByPlace
from trainguard_local.stand_in.cloudtrail import failed_call_event
from trainguard_local.stand_in.fleet_side import FleetSide
from trainguard_local.stand_in.json_api import ApiError
from trainguard_local.stand_in.json_api_server import JsonApiServer
from trainguard_local.stand_in.local_aws import moto_on_loopback, training_limit
from trainguard_local.stand_in.sagemaker_api_model import SAGEMAKER_API
from trainguard_local.stand_in.sagemaker_control_plane import SimulatedSageMaker
from trainguard_local.stand_in.service_quotas import SimulatedServiceQuotas
from trainguard_local.stand_in.service_quotas_catalogue import SERVICE_QUOTAS_API
from trainguard_local.stand_in.service_quotas_server import ENDPOINT_VARIABLE as QUOTAS_ENDPOINT_VARIABLE
from trainguard_local.stand_in.stack_resources import (
    ACCOUNT,
    REGION,
    TRAINING_LOG_GROUP,
    create_stack_resources,
    stack_config,
)

HUB = Location(ACCOUNT, REGION)
CHECKPOINT_BUCKETS = {"111111111111": "team-a-checkpoints", "222222222222": "team-b-checkpoints"}
# A new account's SageMaker quotas, in every spoke: room for ordinary jobs, p4d at 0.
SPOKE_QUOTAS = {
    "Number of instances across all training jobs": 64,
    "ml.p5.48xlarge for training job usage": 8,
    "ml.g5.12xlarge for training job usage": 4,
    "ml.p4d.24xlarge for training job usage": 0,
}
TRAINING_ROLE_NAME = "TrainingRole"


def training_role(account: str) -> str:
    """The teams' execution role in each account, which the hub may pass to SageMaker there."""
    return f"arn:aws:iam::{account}:role/{TRAINING_ROLE_NAME}"


@dataclass
class Spoke:
    """One enrolled account and region with training jobs: its SageMaker and its quotas, and a session as the
    team that works there (the users' side: launching jobs, writing logs, metrics and checkpoints)."""

    place: Location
    sagemaker: SimulatedSageMaker
    quotas: SimulatedServiceQuotas
    team: FleetSide  # the team's launches and writes, on a boto3 session in the spoke's account and region

    def client(self, service: str) -> Any:
        return self.team.client(service)


def forwarded_patterns() -> dict[str, dict[str, Any]]:
    """What a spoke forwards and the hub routes, as the stacks build them with every option on: the guarded
    events and the log forwarder's lines (infra/spoke_stack.py, infra/stack.py)."""
    return {**guarded_events(watch_failed_launches=True), "LogLines": spoke_log_lines_pattern()}


def matches(pattern: dict[str, Any], event: dict[str, Any]) -> bool:
    """Whether EventBridge's `pattern` matches `event`, by moto's matcher (the one its rules use)."""
    from moto.events.models import EventPattern

    return bool(EventPattern.load(json.dumps(pattern)).matches_event(event))  # type: ignore[arg-type]


@dataclass
class HubBus:
    """The hub's bus: its routes to the functions for the enrolled accounts and regions, and its refused-events
    rule, with the stack's patterns. `queued[route]` holds what each route delivered, `parked` what was refused."""

    accounts: tuple[str, ...]
    regions: tuple[str, ...]
    queued: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    parked: list[dict[str, Any]] = field(default_factory=list)

    def put(self, event: dict[str, Any]) -> None:
        if matches(not_enrolled(self.accounts, self.regions), event):
            self.parked.append(event)
            return
        for route, pattern in forwarded_patterns().items():
            if matches(from_enrolled(pattern, self.accounts, self.regions), event):
                self.queued.setdefault(route, []).append(event)

    def take(self, route: str) -> list[dict[str, Any]]:
        return self.queued.pop(route, [])


@dataclass
class Organization:
    clock: SimClock
    config: GuardConfig
    hub_bus: HubBus
    spokes: dict[Location, Spoke]
    moto_url: str

    def hub_client(self, service: str) -> Any:
        return boto3.client(service, region_name=HUB.region)

    def hub_ports(self) -> PortSet:
        """The hub's functions' ports, as wiring.boto3_ports makes them in Lambda: the hub's own clients, and
        the spoke roles' through STS AssumeRole."""
        from trainguard.adapters.spoke_sessions import spoke_clients_on

        session = boto3.session.Session(region_name=HUB.region)
        return PortSet(self.hub_client, self.config, HUB.region, self.clock, spoke_clients_on(session, self.config))

    def forward(self, event: dict[str, Any]) -> None:
        """A spoke's forwarding rules: what matches the guarded patterns goes to the hub's bus, as it was sent."""
        for pattern in forwarded_patterns().values():
            if matches(pattern, event):
                self.hub_bus.put(event)
                return


@contextmanager
def organization(spoke_places: tuple[Location, ...], *, enrolled_regions: tuple[str, ...]) -> Iterator[Organization]:
    """The hub in moto's default account and region, a spoke at each of `spoke_places` (whose accounts are
    enrolled, with `enrolled_regions`), and this process's clients pointed at the stand-in."""
    with moto_on_loopback() as moto_url:
        clock = SimClock()
        topic = create_stack_resources(
            lambda service: boto3.client(service, region_name=HUB.region), checkpoint_bucket="hub-unused"
        )
        accounts = tuple(dict.fromkeys(place.account for place in spoke_places))
        config = stack_config(
            topic,
            account_id=HUB.account,
            enrolled_accounts=accounts,
            enrolled_regions=enrolled_regions,
            passable_role_arns=tuple(training_role(account) for account in (HUB.account, *accounts)),
        )
        org = Organization(clock, config, HubBus(accounts, enrolled_regions), {}, moto_url)
        # The endpoints first, so that every client made from here on (the teams' too) reaches them.
        sagemaker_planes: PlanesByPlace[SimulatedSageMaker] = PlanesByPlace({})
        quota_planes: PlanesByPlace[SimulatedServiceQuotas] = PlanesByPlace({})
        sagemaker = JsonApiServer(sagemaker_planes, SAGEMAKER_API, thread_name="simulated-sagemaker-organization")
        quotas = JsonApiServer(quota_planes, SERVICE_QUOTAS_API, thread_name="simulated-service-quotas-organization")
        os.environ["AWS_ENDPOINT_URL_SAGEMAKER"] = sagemaker.start().endpoint_url
        os.environ[QUOTAS_ENDPOINT_VARIABLE] = quotas.start().endpoint_url
        os.environ.update(config.to_env())
        for place in spoke_places:
            spoke = org.spokes[place] = _spoke(org, place)
            sagemaker_planes.planes[place], quota_planes.planes[place] = spoke.sagemaker, spoke.quotas
        # Every other place the hub serves (its own account, and each enrolled account in each enrolled region
        # where no team trains) has a SageMaker with no jobs, as on AWS: the hub's stall prober lists the running
        # jobs of every place, and ListTrainingJobs answers an empty list where nothing runs.
        served = [HUB, *(Location(account, region) for account in accounts for region in enrolled_regions)]
        for place in served:
            sagemaker_planes.planes.setdefault(
                place, SimulatedSageMaker(clock=org.clock, account_id=place.account, region=place.region)
            )
        try:
            yield org
        finally:
            quotas.stop()
            sagemaker.stop()


def _spoke(org: Organization, place: Location) -> Spoke:
    """One spoke: the team's session (moto STS: credentials in the spoke's account), its checkpoint bucket and
    training log group, its SageMaker (whose events and refused launches go out through the forwarding rules)."""
    credentials = boto3.client("sts", region_name=place.region).assume_role(
        RoleArn=training_role(place.account), RoleSessionName="team"
    )["Credentials"]
    team = boto3.session.Session(
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
        region_name=place.region,
    )
    bucket = CHECKPOINT_BUCKETS.get(place.account, f"checkpoints-{place.account}")
    s3 = team.client("s3")
    if bucket not in {b["Name"] for b in s3.list_buckets()["Buckets"]}:
        s3.create_bucket(Bucket=bucket, **_bucket_location(place.region))
    logs = team.client("logs")
    if not logs.describe_log_groups(logGroupNamePrefix=TRAINING_LOG_GROUP)["logGroups"]:
        logs.create_log_group(logGroupName=TRAINING_LOG_GROUP)
    quotas = SimulatedServiceQuotas(clock=org.clock, values=SPOKE_QUOTAS, account_id=place.account, region=place.region)

    def refused_launch(operation: str, params: dict[str, Any], error: ApiError) -> None:
        if operation == "CreateTrainingJob":
            event = failed_call_event(
                operation, params, error, account=place.account, region=place.region, now=org.clock()
            )
            org.forward(event)

    sagemaker = SimulatedSageMaker(
        clock=org.clock,
        on_event=org.forward,
        on_failed_call=refused_launch,
        instance_limits=lambda instance_type: training_limit(quotas, instance_type),
        account_id=place.account,
        region=place.region,
    )
    return Spoke(place, sagemaker, quotas, FleetSide(team.client))


def _bucket_location(region: str) -> dict[str, Any]:
    return {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
