"""SchedulerPort: FakeScheduler and adapters/scheduler.py's RelaunchScheduler on moto's EventBridge Scheduler."""

from __future__ import annotations

import re
from datetime import timedelta

import boto3
import pytest

from tests.contracts.conftest import IMPLEMENTATIONS, REGION
from tests.fakes import NOW, FakeScheduler
from trainguard.adapters.scheduler import RelaunchScheduler
from trainguard.workflows.ports import SchedulerPort

LONG_NAME = "llama-pretrain-" + "x" * 48  # 63 characters: the longest job name


@pytest.fixture(params=IMPLEMENTATIONS)
def scheduler(request: pytest.FixtureRequest) -> SchedulerPort:
    if request.param == "fake":
        return FakeScheduler()
    request.getfixturevalue("aws")
    client = boto3.client("scheduler", region_name=REGION)
    client.create_schedule_group(Name="trainguard")
    return RelaunchScheduler(
        client,
        group_name="trainguard",
        target_arn="arn:aws:lambda:us-east-1:123456789012:function:launcher",
        role_arn="arn:aws:iam::123456789012:role/scheduler",
    )


def test_a_relaunch_is_scheduled_once_per_failed_job(scheduler: SchedulerPort) -> None:
    first = scheduler.schedule_relaunch(LONG_NAME, NOW + timedelta(minutes=10), "capacity")
    assert scheduler.schedule_relaunch(LONG_NAME, NOW + timedelta(minutes=40), "capacity again") == first


def test_schedule_names_are_valid_and_one_per_failed_job(scheduler: SchedulerPort) -> None:
    names = [scheduler.schedule_relaunch(job, NOW, "capacity") for job in (LONG_NAME, LONG_NAME + "y", "a")]
    assert len(set(names)) == 3
    assert all(re.fullmatch(r"[0-9a-zA-Z_.-]{1,64}", name) for name in names)  # EventBridge Scheduler's Name
