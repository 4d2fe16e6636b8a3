"""Clients in an organization's spoke (adapters/spoke_sessions.py), on moto, whose STS AssumeRole hands out
credentials that act in the account the role's ARN names: the job's ports reach the spoke's account and region
through its role for this function, the hub's own ports stay at home, nothing is served outside the enrolled
accounts and regions, and the credentials are taken again before they run out."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from trainguard.adapters.ledger import create_table_request
from trainguard.adapters.spoke_sessions import NotEnrolled, SpokeSessions, spoke_clients_on
from trainguard.config import GuardConfig
from trainguard.domain.model import TrainingJob
from trainguard.domain.origin import Location
from trainguard.handlers import job_events, retry_launcher
from trainguard.handlers.wiring import PortSet, Site

HUB, SPOKE, OTHER = "123456789012", "111111111111", "222222222222"
SPOKE_REGION = "us-west-2"


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def home() -> Iterator[Any]:
    with mock_aws():
        yield boto3.session.Session(region_name="us-east-1")


def sessions(home: Any, clock: Clock | None = None) -> SpokeSessions:
    return SpokeSessions(
        home,
        "job-events",
        enrolled_accounts=(SPOKE,),
        enrolled_regions=("us-east-1", SPOKE_REGION),
        clock=clock or Clock(),
    )


def test_a_spokes_clients_act_in_its_account_and_region_through_the_functions_spoke_role(home: Any) -> None:
    clients = sessions(home).clients_in(Location(SPOKE, SPOKE_REGION))

    identity = clients("sts").get_caller_identity()
    assert identity["Account"] == SPOKE
    assert ":assumed-role/trainguard-spoke-job-events-us-west-2/trainguard-job-events" in identity["Arn"]
    assert clients("sagemaker").meta.region_name == SPOKE_REGION
    assert clients("sagemaker").meta is clients("sagemaker").meta  # one client per service and place


@pytest.mark.parametrize(("account", "region"), [(OTHER, SPOKE_REGION), (SPOKE, "eu-west-1"), (HUB, "us-east-1")])
def test_nothing_is_served_outside_the_enrolled_accounts_and_regions(home: Any, account: str, region: str) -> None:
    with pytest.raises(NotEnrolled, match=f"account {account} in {region} is not enrolled"):
        sessions(home).clients_in(Location(account, region))


def test_the_credentials_are_taken_again_before_they_run_out(home: Any) -> None:
    clock = Clock()
    spoke = sessions(home, clock)
    client = spoke.clients_in(Location(SPOKE, SPOKE_REGION))("sagemaker")  # as an adapter holds it
    first = client.meta
    clock.now += timedelta(minutes=30)
    assert client.meta is first  # still 30 minutes left: the same client
    clock.now += timedelta(minutes=25)  # 5 minutes left: less than REFRESH_BEFORE
    assert client.meta is not first  # the adapter's client now calls with fresh credentials


def test_a_spoke_jobs_ports_reach_its_account_and_the_hubs_own_stay_home(home: Any) -> None:
    spokes = sessions(home)
    spoke_clients = spokes.clients_in(Location(SPOKE, SPOKE_REGION))
    config = GuardConfig(ledger_table_name="ledger", topic_arn=f"arn:aws:sns:us-east-1:{HUB}:tg")
    ports = job_events.build_ports(
        Site(home.client, config, "us-east-1", lambda: datetime.now(UTC), Location(SPOKE, SPOKE_REGION), spoke_clients)
    )
    assert spokes._held == {}  # building the ports assumed no role: the first call will

    name = "llama-pretrain"
    spoke_clients("sagemaker").create_training_job(
        TrainingJobName=name,
        AlgorithmSpecification={"TrainingImage": "image", "TrainingInputMode": "File"},
        RoleArn=f"arn:aws:iam::{SPOKE}:role/TrainingRole",
        OutputDataConfig={"S3OutputPath": "s3://out/"},
        ResourceConfig={"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 1, "VolumeSizeInGB": 50},
        StoppingCondition={"MaxRuntimeInSeconds": 3600},
    )
    found = ports.jobs.describe(name)
    assert isinstance(found, TrainingJob) and found.name == name  # found in the spoke, not in the hub
    assert home.client("sagemaker").list_training_jobs()["TrainingJobSummaries"] == []
    assert ports.region == SPOKE_REGION
    for port in ("jobs", "alarms", "checkpoints", "quotas"):
        assert _client_of(getattr(ports, port)).meta.region_name == SPOKE_REGION, port
    for port in ("ledger", "notifier", "stall_ledger", "scheduler"):
        assert _client_of(getattr(ports, port)).meta.region_name == "us-east-1", port


def _client_of(adapter: Any) -> Any:
    (client,) = [value for value in vars(adapter).values() if hasattr(value, "meta") and hasattr(value, "_endpoint")]
    return client


def hub_port_set(home: Any, enrolled_accounts: tuple[str, ...] = (SPOKE, OTHER), **settings: Any) -> PortSet:
    """A hub's ports on moto, as boto3_ports makes them: the ledger table made, the spokes enrolled."""
    home.client("dynamodb").create_table(**create_table_request("ledger"))
    config = GuardConfig(
        ledger_table_name="ledger",
        topic_arn=f"arn:aws:sns:us-east-1:{HUB}:tg",
        account_id=HUB,
        enrolled_accounts=enrolled_accounts,
        enrolled_regions=("us-east-1", SPOKE_REGION),
        **settings,
    )
    return PortSet(home.client, config, "us-east-1", lambda: datetime.now(UTC), spoke_clients_on(home, config))


def test_a_hubs_ledger_keeps_each_places_records_apart(home: Any) -> None:
    hub = hub_port_set(home)
    now = datetime.now(UTC)
    places = [None, Location(SPOKE, SPOKE_REGION), Location(SPOKE, "us-east-1"), Location(OTHER, SPOKE_REGION)]
    ledgers = [hub.at(retry_launcher.build_ports, place).ledger for place in places]

    firsts = [ledger.begin_step("llama-pretrain", "end", now).state.value for ledger in ledgers]

    assert firsts == ["first"] * 4  # the same job name in four places: four records, none a duplicate of another
    assert [ledger.begin_step("llama-pretrain", "end", now + timedelta(minutes=5)) for ledger in ledgers[:1]]
    keys = {item["pk"]["S"] for item in home.client("dynamodb").scan(TableName="ledger")["Items"]}
    assert keys == {
        "job#llama-pretrain",
        f"{SPOKE}#{SPOKE_REGION}#job#llama-pretrain",
        f"{SPOKE}#us-east-1#job#llama-pretrain",
        f"{OTHER}#{SPOKE_REGION}#job#llama-pretrain",
    }


def test_a_hubs_relaunches_count_against_their_accounts_budget_and_the_organizations(home: Any) -> None:
    hub = hub_port_set(home, retry_budget_per_hour=2, organization_retry_budget_per_hour=3)
    now = datetime.now(UTC)
    east, west, other = (
        hub.at(retry_launcher.build_ports, place).ledger
        for place in (Location(SPOKE, "us-east-1"), Location(SPOKE, SPOKE_REGION), Location(OTHER, SPOKE_REGION))
    )

    # One account's budget is shared by its regions: 2 an hour for SPOKE, whichever region; a launch of the same
    # name in two regions is two launches.
    takes = [east.take_launch_budget("a", now, 2), west.take_launch_budget("a", now, 2)]
    assert [*takes, east.take_launch_budget("b", now, 2)] == [True, True, False]
    # The organization's 3rd launch of the hour is OTHER's first; its 4th is refused, and OTHER's count is given
    # back (OTHER has used 1 of its 2).
    assert other.take_launch_budget("c", now, 2) is True
    assert other.take_launch_budget("d", now, 2) is False
    assert other.take_launch_budget("c", now, 2) is True  # a redelivery: no second unit of either budget
    items = {
        item["pk"]["S"]: int(item["used"]["N"]) for item in home.client("dynamodb").scan(TableName="ledger")["Items"]
    }
    assert items == {
        f"{SPOKE}#budget#retries": 2,
        f"{OTHER}#budget#retries": 1,
        "organization#budget#retries": 3,
    }
    # A launch that did not happen gives its unit back to both budgets; a second give-back gives nothing.
    west.give_back_launch_budget("a", now)
    west.give_back_launch_budget("a", now)
    used = {item["pk"]["S"]: item["used"]["N"] for item in home.client("dynamodb").scan(TableName="ledger")["Items"]}
    assert (used[f"{SPOKE}#budget#retries"], used["organization#budget#retries"]) == ("1", "2")


def test_a_lazy_client_answers_copy_and_probes_of_special_names_without_assuming(home: Any) -> None:
    import copy

    spokes = sessions(home)
    client = spokes.clients_in(Location(SPOKE, SPOKE_REGION))("sagemaker")
    copy.copy(client)  # no RecursionError: special names are not forwarded
    assert not hasattr(client, "__wrapped__") and spokes._held == {}  # and no role assumed for them


def test_places_served_at_once_each_assume_their_own_role_once(home: Any) -> None:
    from concurrent.futures import ThreadPoolExecutor

    spokes = SpokeSessions(
        home,
        "stall-prober",
        enrolled_accounts=(SPOKE, OTHER),
        enrolled_regions=("us-east-1", SPOKE_REGION),
        clock=Clock(),
    )
    places = [Location(a, r) for a in (SPOKE, OTHER) for r in ("us-east-1", SPOKE_REGION)] * 4

    def who(place: Location) -> str:
        return str(spokes.clients_in(place)("sts").get_caller_identity()["Arn"])

    with ThreadPoolExecutor(max_workers=8) as pool:
        arns = list(pool.map(who, places))

    assert len(spokes._held) == 4  # one session per place, however many threads asked at once
    for place, arn in zip(places, arns, strict=True):
        assert f"::{place.account}:assumed-role/trainguard-spoke-stall-prober-{place.region}/" in arn


def test_a_hubs_own_account_has_one_budget_across_its_regions(home: Any) -> None:
    hub = hub_port_set(home, enrolled_accounts=(HUB, SPOKE), retry_budget_per_hour=1)
    now = datetime.now(UTC)
    at_home, elsewhere = (
        hub.at(retry_launcher.build_ports, place).ledger for place in (None, Location(HUB, SPOKE_REGION))
    )

    assert at_home.take_launch_budget("a", now, 1) is True
    assert elsewhere.take_launch_budget("b", now, 1) is False  # the same account: its one launch this hour is taken
    used = {
        item["pk"]["S"]: int(item["used"]["N"]) for item in home.client("dynamodb").scan(TableName="ledger")["Items"]
    }
    assert used == {f"{HUB}#budget#retries": 1, "organization#budget#retries": 1}
