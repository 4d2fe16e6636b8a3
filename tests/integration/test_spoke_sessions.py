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

from trainguard.adapters.spoke_sessions import Location, NotEnrolled, SpokeSessions
from trainguard.config import GuardConfig
from trainguard.domain.model import TrainingJob
from trainguard.handlers.wiring import build_ports
from trainguard.workflows.function_ports import JobEventsPorts

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
    assert clients("sagemaker") is clients("sagemaker")  # one client per service and place


@pytest.mark.parametrize(("account", "region"), [(OTHER, SPOKE_REGION), (SPOKE, "eu-west-1"), (HUB, "us-east-1")])
def test_nothing_is_served_outside_the_enrolled_accounts_and_regions(home: Any, account: str, region: str) -> None:
    with pytest.raises(NotEnrolled, match=f"account {account} in {region} is not enrolled"):
        sessions(home).clients_in(Location(account, region))


def test_the_credentials_are_taken_again_before_they_run_out(home: Any) -> None:
    clock = Clock()
    spoke = sessions(home, clock)
    first = spoke.clients_in(Location(SPOKE, SPOKE_REGION))("sagemaker")
    clock.now += timedelta(minutes=30)
    assert spoke.clients_in(Location(SPOKE, SPOKE_REGION))("sagemaker") is first  # still 30 minutes left
    clock.now += timedelta(minutes=25)  # 5 minutes left: less than REFRESH_BEFORE
    assert spoke.clients_in(Location(SPOKE, SPOKE_REGION))("sagemaker") is not first


def test_a_spoke_jobs_ports_reach_its_account_and_the_hubs_own_stay_home(home: Any) -> None:
    spoke_clients = sessions(home).clients_in(Location(SPOKE, SPOKE_REGION))
    config = GuardConfig(ledger_table_name="ledger", topic_arn=f"arn:aws:sns:us-east-1:{HUB}:tg")
    ports = build_ports(
        JobEventsPorts,
        lambda service: home.client(service),
        config,
        SPOKE_REGION,
        lambda: datetime.now(UTC),
        spoke_clients,
    )

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
