"""Where an event's job is acted on (domain/origin.py, handlers/origin.py): an event from the function's own
account and region with its own ports; in an organization's hub, an event from an enrolled spoke with that
spoke's ports, in its region; anything else, or an event whose resources name another place than its sender,
is logged, counted and skipped, and nothing is done anywhere."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from tests.cloudtrail_events import envelope_from_record
from tests.conftest import load_fixture
from tests.fakes import NOW, ROLE, FakePlaces, described_job, fake_ports
from tests.unit.test_handlers import failed_event
from tests.unit.test_stall_workflows import training
from trainguard.domain.origin import Location, Refused, place_of
from trainguard.domain.outcome import OutcomeKind
from trainguard.domain.stalls import StallSignal, alarm_name
from trainguard.handlers import failed_launches, job_events, retry_launcher, stall_alarms, stall_prober
from trainguard.workflows.job_ended import handle_job_end
from trainguard.workflows.stall_watch import follow_training_state

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


SPOKE = Location("111111111111", "us-west-2")
HUB = {"account_id": HOME, "enrolled_accounts": (SPOKE.account, "222222222222"), "enrolled_regions": ("us-west-2",)}


def _from(event: dict[str, Any], account: str, region: str) -> dict[str, Any]:
    """`event` as its sender there would send it: its `account` and `region`, and the ARNs it names, theirs."""
    moved = copy.deepcopy(event)
    text = json.dumps(moved).replace(":us-east-1:123456789012:", f":{region}:{account}:")
    moved = json.loads(text)
    moved.update(account=account, region=region)
    return moved


def _failed_alarm(account: str, region: str) -> dict[str, Any]:
    alarm = _from(ALARM, account, region)
    alarm["detail"]["alarmName"] = alarm_name(StallSignal.LOG_SILENCE, "llama-pretrain")
    alarm["detail"]["state"]["value"] = "ALARM"
    return alarm


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
    ports = fake_ports(account_id=HOME)

    for outcome in (
        stall_alarms.handle(_failed_alarm("111111111111", "us-east-1"), ports),
        failed_launches.handle(_from(refused_launch(), "111111111111", "us-east-1"), ports),
    ):
        assert outcome.kind is OutcomeKind.SKIPPED and "acts only on jobs of its own account" in outcome.reason
    assert ports.alarms.rearmed == [] and ports.jobs.stops == [] and ports.quotas.requests == []
    assert ports.ledger.steps == {} and ports.notifier.sent == []


def test_a_hub_relaunches_a_spoke_job_with_that_spoke_s_ports_in_its_region_and_touches_nothing_at_home() -> None:
    hub = FakePlaces(**HUB)
    home = hub.by_place[None]
    home.jobs.add(described_job(), {"trainguard:enabled": "true"})  # a job of the same name at home
    spoke = hub.fakes_at(SPOKE)
    spoke.jobs.add(described_job(), {"trainguard:enabled": "true"})

    outcome = job_events.handle(_from(failed_event(), SPOKE.account, SPOKE.region), hub)

    assert outcome.kind is OutcomeKind.RELAUNCHED
    assert [attempt["TrainingJobName"] for attempt in spoke.jobs.attempts] == [outcome.new_job_name]
    assert spoke.region == "us-west-2" and "region=us-west-2" in spoke.notifier.sent[0].body
    assert home.jobs.attempts == [] and home.notifier.sent == [] and home.ledger.steps == {}


def test_a_hub_refuses_an_account_or_a_region_that_is_not_enrolled_and_acts_nowhere() -> None:
    hub = FakePlaces(**HUB)
    for account, region in (("333333333333", "us-west-2"), (SPOKE.account, "eu-west-1")):
        outcome = job_events.handle(_from(failed_event(), account, region), hub)
        assert outcome.kind is OutcomeKind.SKIPPED
        assert "and of the accounts and regions enrolled in its hub" in outcome.reason
    assert list(hub.by_place) == [None] and hub.by_place[None].jobs.attempts == []


def test_a_spoke_cannot_make_the_hub_act_on_another_account_s_job() -> None:
    """A compromised spoke forging an event about another enrolled account's job: its `account` is its own (EventBridge
    sets it), and the job's ARN names the other. Nothing is done, in either account."""
    hub = FakePlaces(**HUB)
    forged = _from(failed_event(), "222222222222", "us-west-2")
    forged["account"] = SPOKE.account

    outcome = job_events.handle(forged, hub)

    assert outcome.kind is OutcomeKind.SKIPPED and "names a resource of account 222222222222" in outcome.reason
    assert list(hub.by_place) == [None]


def test_a_hub_stops_a_spoke_job_on_its_stall_alarm_in_that_spoke() -> None:
    hub = FakePlaces(**HUB)
    home = hub.by_place[None]
    spoke = hub.fakes_at(SPOKE)
    for ports in (home, spoke):  # a job of the same name in both places, both silent for 40 minutes
        training(ports)
        follow_training_state(ports, "llama-pretrain")
        ports.job_logs.newest, ports.job_logs.line = NOW - timedelta(minutes=40), "step 9000 loss 1.71"

    outcome = stall_alarms.handle(_failed_alarm(SPOKE.account, SPOKE.region), hub)

    assert outcome.kind is OutcomeKind.STALL_STOPPED
    assert spoke.jobs.stops == ["llama-pretrain"] and home.jobs.stops == [] and home.notifier.sent == []


def test_a_scheduled_relaunch_of_a_spoke_job_is_made_in_that_spoke() -> None:
    hub = FakePlaces(**HUB)
    spoke = hub.fakes_at(SPOKE)
    capacity = "CapacityError: Unable to provision requested ML compute capacity."
    spoke.jobs.add(described_job(reason=capacity), {"trainguard:enabled": "true"})
    assert handle_job_end(spoke, "llama-pretrain").kind is OutcomeKind.RELAUNCH_SCHEDULED  # job-events, in the spoke
    event = {"failed_job_name": "llama-pretrain", "reason": "capacity", **vars(SPOKE)}

    retry_launcher.handle(event, hub)

    assert spoke.jobs.attempts and hub.by_place[None].jobs.attempts == []
    forged = {
        "failed_job_name": "llama-pretrain",
        "reason": "capacity",
        "account": "333333333333",
        "region": "us-west-2",
    }
    assert retry_launcher.handle(forged, hub).kind is OutcomeKind.SKIPPED


def test_the_prober_of_a_hub_probes_home_and_every_enrolled_spoke_each_in_its_own_place() -> None:
    hub = FakePlaces(**HUB)
    other = Location("222222222222", "us-west-2")
    for place, job in ((None, "at-home"), (SPOKE, "in-spoke"), (other, "in-other")):
        ports = hub.fakes_at(place)
        training(ports, job)
        follow_training_state(ports, job)

    result = stall_prober.handle({}, hub)

    assert result["watched"] == 3
    published = {place: [set(batch) for batch in ports.alarms.published] for place, ports in hub.by_place.items()}
    assert published == {None: [{"at-home"}], SPOKE: [{"in-spoke"}], other: [{"in-other"}]}


OWN = Location(HOME, "us-east-1")


@pytest.mark.parametrize(
    ("origin", "arns", "own", "expected"),
    [
        (OWN, [], OWN, None),
        (Location("111111111111", "us-east-1"), [], OWN, Refused),
        (Location(HOME, "eu-west-1"), [], OWN, Refused),
        (Location("111111111111", "eu-west-1"), [], Location("", "us-east-1"), None),  # outside a deployed stack
        (SPOKE, [], OWN, SPOKE),
        (SPOKE, ["arn:aws:sagemaker:us-west-2:111111111111:training-job/a"], OWN, SPOKE),
        (SPOKE, ["arn:aws:sagemaker:us-west-2:222222222222:training-job/a"], OWN, Refused),
        (SPOKE, ["arn:aws:sagemaker:us-east-1:111111111111:training-job/a"], OWN, Refused),
        (OWN, ["arn:aws:sagemaker:us-west-2:111111111111:training-job/a"], OWN, Refused),
        (SPOKE, ["arn:aws:s3:::a-bucket"], OWN, SPOKE),  # an ARN without account or region names no place
    ],
)
def test_the_domain_says_where_an_event_is_acted_on(
    origin: Location, arns: list[str], own: Location, expected: object
) -> None:
    place = place_of(origin, arns, own=own, enrolled_accounts=HUB["enrolled_accounts"], enrolled_regions=("us-west-2",))
    if expected is Refused:
        assert isinstance(place, Refused) and f"{origin.account or '?'}" in place.reason
    else:
        assert place == expected


class _Unreachable:
    """A spoke's watch list that cannot be read this time."""

    def watched(self) -> list[Any]:
        raise ConnectionError("the spoke's endpoint did not answer")


def test_a_spoke_the_prober_cannot_serve_is_counted_and_the_others_are_served() -> None:
    hub = FakePlaces(**HUB)
    other = Location("222222222222", "us-west-2")
    for place in (None, other):
        ports = hub.fakes_at(place)
        training(ports)
        follow_training_state(ports, "llama-pretrain")
    broken = hub.fakes_at(SPOKE)
    object.__setattr__(broken, "stall_ledger", _Unreachable())

    result = stall_prober.handle({}, hub)

    assert result["watched"] == 2  # home's job and the other spoke's; SPOKE's failure is logged and counted


def test_the_home_s_own_failure_is_raised_so_that_the_cycle_is_retried_and_alarmed() -> None:
    hub = FakePlaces(**HUB)
    object.__setattr__(hub.by_place[None], "stall_ledger", _Unreachable())
    with pytest.raises(ConnectionError):
        stall_prober.handle({}, hub)


def test_a_hubs_notification_names_its_account_and_region_in_subject_body_attributes_and_chat() -> None:
    from trainguard.domain.chat_messages import compose_chat_message
    from trainguard.domain.messages import Notification, naming_the_account

    plain = Notification("[trainguard] relaunched llama-pretrain", "What happened\n  it failed", {"job_name": "x"})

    named = naming_the_account(plain, SPOKE.account, SPOKE.region)

    assert named.subject == "[trainguard 111111111111 us-west-2] relaunched llama-pretrain"
    assert named.body.startswith("Account 111111111111, region us-west-2.") and named.body.endswith(plain.body)
    assert named.attributes == {"job_name": "x", "account": SPOKE.account, "region": SPOKE.region}
    long = naming_the_account(replace(plain, subject="[trainguard] " + "j" * 95), SPOKE.account, SPOKE.region)
    assert len(long.subject) < 100 and long.subject.endswith("...")  # SNS: subjects under 100 characters
    chat = compose_chat_message(named, notification_id="m-1")
    assert chat["content"]["title"] == "relaunched llama-pretrain"
    assert {SPOKE.account, SPOKE.region} <= set(chat["content"].get("keywords", []))


def test_a_scheduled_relaunch_of_a_spoke_job_carries_its_place_and_is_named_apart_from_homes() -> None:
    from trainguard.adapters.scheduler import RelaunchScheduler, schedule_name

    class Scheduler:
        def __init__(self) -> None:
            self.created: list[dict[str, Any]] = []

        def create_schedule(self, **request: Any) -> None:
            self.created.append(request)

    client = Scheduler()
    adapter = RelaunchScheduler(client, group_name="g", target_arn="arn:t", role_arn="arn:r", spoke=SPOKE)

    name = adapter.schedule_relaunch("llama-pretrain", NOW, "capacity")

    [request] = client.created
    assert json.loads(request["Target"]["Input"]) == {
        "failed_job_name": "llama-pretrain",
        "reason": "capacity",
        "account": SPOKE.account,
        "region": SPOKE.region,
    }
    assert name != schedule_name("llama-pretrain") and name == schedule_name("llama-pretrain", SPOKE)
    assert name != schedule_name("llama-pretrain", Location("222222222222", SPOKE.region))
