"""An event about another account's or region's job is never acted on with this account's rights
(handlers/origin.py): a hub's bus receives its spokes' events, and until the hub acts through a spoke's role,
each is logged, counted and skipped."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.cloudtrail_events import envelope_from_record
from tests.conftest import load_fixture
from tests.fakes import ROLE, described_job, fake_ports
from tests.unit.test_handlers import failed_event
from trainguard.domain.outcome import OutcomeKind
from trainguard.handlers import failed_launches, job_events, stall_alarms

HOME = "123456789012"
ALARM = load_fixture("events/cloudwatch_alarm_state_change.single_metric.awsdocs.json")
QUOTA_MESSAGE = (
    "The account-level service limit 'ml.p4d.24xlarge for training job usage' is 0 Instances, with current "
    "utilization of 0 Instances and a request delta of 2 Instances. Please use AWS Service Quotas to request "
    "an increase for this quota."
)


def refused_launch() -> dict[str, Any]:
    """An opted-in CreateTrainingJob refused at a quota of 0, as EventBridge delivers its CloudTrail record."""
    record = copy.deepcopy(load_fixture("events/cloudtrail_record.create_training_job.medzen_sanitized_real.json"))
    record["requestParameters"]["roleArn"] = ROLE
    record["requestParameters"]["tags"] = [{"key": "trainguard:enabled", "value": "true"}]
    return envelope_from_record(record, "ResourceLimitExceeded", QUOTA_MESSAGE)


def _from(event: dict[str, Any], account: str, region: str) -> dict[str, Any]:
    moved = copy.deepcopy(event)
    moved.update(account=account, region=region)
    return moved


@pytest.mark.parametrize(("account", "region"), [("111111111111", "us-east-1"), (HOME, "eu-west-1"), ("", "")])
def test_a_failure_from_another_account_or_region_is_skipped_and_nothing_is_done(account: str, region: str) -> None:
    ports = fake_ports(account_id=HOME)
    ports.jobs.add(described_job(), {"trainguard:enabled": "true"})  # the same name exists here: never touched

    outcome = job_events.handle(_from(failed_event(), account, region), ports)

    assert outcome.kind is OutcomeKind.SKIPPED
    assert f"acts only on jobs of its own account {HOME} in us-east-1" in outcome.reason
    assert ports.jobs.attempts == [] and ports.jobs.stops == [] and ports.notifier.sent == []
    assert ports.ledger.steps == {} and ports.stall_ledger.watched() == []


def test_a_failure_from_its_own_account_and_region_is_acted_on() -> None:
    ports = fake_ports(account_id=HOME)
    ports.jobs.add(described_job(), {"trainguard:enabled": "true"})

    assert job_events.handle(_from(failed_event(), HOME, "us-east-1"), ports).kind is OutcomeKind.RELAUNCHED


def test_outside_a_deployed_stack_the_origin_is_not_checked() -> None:
    ports = fake_ports()  # account_id unset: the tests' and the stand-in's own events
    ports.jobs.add(described_job(), {"trainguard:enabled": "true"})

    assert job_events.handle(_from(failed_event(), "111111111111", "eu-west-1"), ports).kind is OutcomeKind.RELAUNCHED


def test_an_alarm_and_a_refused_launch_from_elsewhere_are_skipped_too() -> None:
    alarm = _from(ALARM, "111111111111", "us-east-1")
    alarm["detail"]["alarmName"] = "trainguard-stall-logs-llama-pretrain"
    alarm["detail"]["state"]["value"] = "ALARM"
    ports = fake_ports(account_id=HOME)

    for outcome in (
        stall_alarms.handle(alarm, ports),
        failed_launches.handle(_from(refused_launch(), "111111111111", "us-east-1"), ports),
    ):
        assert outcome.kind is OutcomeKind.SKIPPED and "acts only on jobs of its own account" in outcome.reason
    assert ports.alarms.rearmed == [] and ports.jobs.stops == [] and ports.quotas.requests == []
    assert ports.ledger.steps == {} and ports.notifier.sent == []


@pytest.mark.parametrize(
    ("account", "region", "own_account", "acts"),
    [
        (HOME, "us-east-1", HOME, True),
        ("111111111111", "us-east-1", HOME, False),
        (HOME, "eu-west-1", HOME, False),
        ("111111111111", "eu-west-1", "", True),  # outside a deployed stack: not known, not checked
    ],
)
def test_the_domain_says_whose_job_an_event_is_about(account: str, region: str, own_account: str, acts: bool) -> None:
    from trainguard.domain.origin import elsewhere

    reason = elsewhere(account, region, own_account, "us-east-1")
    assert (reason is None) is acts
    if reason:
        assert f"from account {account} in {region}" in reason
