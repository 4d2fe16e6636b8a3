"""The log rhythm's way from a spoke to its hub (docs/organization.md): the spoke's forwarder puts each
subscription delivery as it came on its own account's default bus (infra/spoke_log_forwarder.py), whose rule
forwards it to the hub's bus; the hub's log-activity function records it for the job of the account and region
that sent it, in that place's records."""

from __future__ import annotations

import base64
import gzip
import json
import os
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from infra import spoke_log_forwarder
from tests.fakes import NOW, FakePlaces
from tests.unit.test_rhythm_workflows import delivery
from tests.unit.test_stall_workflows import training
from trainguard.domain.origin import Location
from trainguard.events.log_subscription import SPOKE_LOG_DETAIL_TYPE, SPOKE_LOG_SOURCE, parse_log_delivery
from trainguard.handlers import log_activity
from trainguard.workflows.stall_watch import follow_training_state

HUB = {"account_id": "123456789012", "enrolled_accounts": ("111111111111",), "enrolled_regions": ("us-west-2",)}
SPOKE = Location("111111111111", "us-west-2")


class Bus:
    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.entries += Entries
        return {"FailedEntryCount": 0, "Entries": [{"EventId": "e"} for _ in Entries]}


@pytest.fixture(autouse=True)
def forwarder_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the spoke stack sets (infra/spoke_stack.py)."""
    for name, value in (("SOURCE", SPOKE_LOG_SOURCE), ("DETAIL_TYPE", SPOKE_LOG_DETAIL_TYPE)):
        monkeypatch.setitem(os.environ, name, value)


def forwarded(entry: dict[str, Any], place: Location = SPOKE, time: str = "2026-12-02T07:00:00Z") -> dict[str, Any]:
    """The entry as EventBridge delivers it from the hub's bus: put on the spoke's default bus and forwarded by its
    rule, it carries the spoke's account and region."""
    return {
        "version": "0",
        "id": "1",
        "detail-type": entry["DetailType"],
        "source": entry["Source"],
        "account": place.account,
        "time": time,
        "region": place.region,
        "resources": [],
        "detail": json.loads(entry["Detail"]),
    }


def test_a_delivery_goes_to_the_hubs_bus_as_it_came() -> None:
    bus, sent = Bus(), delivery("llama-pretrain", [NOW - timedelta(seconds=20), NOW])

    assert spoke_log_forwarder.handler(sent, None, client=bus) == 1

    [entry] = bus.entries
    assert "EventBusName" not in entry and entry["Source"] == SPOKE_LOG_SOURCE  # the spoke's own default bus
    assert json.loads(entry["Detail"]) == sent
    assert len(entry["Detail"]) < 256 * 1024


def test_a_delivery_too_large_for_one_entry_keeps_its_newest_lines() -> None:
    times = [NOW - timedelta(seconds=n) for n in range(20_000, -1, -1)]
    sent = delivery("llama-pretrain", times, message="x" * 2000)
    assert len(sent["awslogs"]["data"]) > spoke_log_forwarder.LIMIT  # type: ignore[index]
    bus = Bus()

    spoke_log_forwarder.handler(sent, None, client=bus)

    [entry] = bus.entries
    assert len(entry["Detail"]) < 256 * 1024  # PutEvents' limit for one entry
    activity = parse_log_delivery(json.loads(entry["Detail"]))
    assert activity is not None and activity.newest == NOW.replace(microsecond=(NOW.microsecond // 1000) * 1000)
    assert len(activity.times) == 2000


def test_a_delivery_of_text_that_compresses_poorly_is_halved_until_it_fits() -> None:
    times = [NOW - timedelta(seconds=n) for n in range(3000, -1, -1)]
    sent = delivery("llama-pretrain", times)
    payload = json.loads(gzip.decompress(base64.b64decode(sent["awslogs"]["data"])))  # type: ignore[index]
    for line in payload["logEvents"]:
        line["message"] = base64.b64encode(os.urandom(300)).decode()  # random text: about 4:3 compressed
    data = base64.b64encode(gzip.compress(json.dumps(payload).encode())).decode()
    bus = Bus()

    spoke_log_forwarder.handler({"awslogs": {"data": data}}, None, client=bus)

    [entry] = bus.entries
    assert len(entry["Detail"]) < 256 * 1024
    activity = parse_log_delivery(json.loads(entry["Detail"]))
    assert activity is not None
    assert int(activity.newest.timestamp() * 1000) == payload["logEvents"][-1]["timestamp"]  # the newest kept
    assert 100 < len(activity.times) < 2000  # the newest lines, as many as fit


def test_a_control_message_too_large_for_one_entry_is_not_forwarded() -> None:
    control = {
        "messageType": "CONTROL_MESSAGE",
        "logEvents": [],
        "noise": base64.b64encode(os.urandom(300_000)).decode(),
    }
    data = base64.b64encode(gzip.compress(json.dumps(control).encode())).decode()
    assert len(data) > spoke_log_forwarder.LIMIT
    bus = Bus()

    assert spoke_log_forwarder.handler({"awslogs": {"data": data}}, None, client=bus) == 0
    assert bus.entries == []


def test_the_hub_records_a_spoke_jobs_lines_in_that_spokes_records_only() -> None:
    hub = FakePlaces(**HUB)
    home, spoke = hub.by_place[None], hub.fakes_at(SPOKE)
    for ports in (home, spoke):  # the same job name at home and in the spoke
        training(ports)
        follow_training_state(ports, "llama-pretrain")
    bus = Bus()
    spoke_log_forwarder.handler(delivery("llama-pretrain", [NOW - timedelta(seconds=10), NOW]), None, client=bus)

    result = log_activity.handle(forwarded(bus.entries[0]), hub)

    assert result["recorded"] is True
    [in_spoke] = spoke.stall_ledger.watched_job("llama-pretrain")
    [at_home] = home.stall_ledger.watched_job("llama-pretrain")
    assert in_spoke.last_log_time is not None and at_home.last_log_time is None


def test_the_hub_refuses_log_lines_from_an_account_that_is_not_enrolled() -> None:
    hub = FakePlaces(**HUB)
    bus = Bus()
    spoke_log_forwarder.handler(delivery("llama-pretrain", [NOW]), None, client=bus)

    result = log_activity.handle(forwarded(bus.entries[0], Location("333333333333", "us-west-2")), hub)

    assert result["recorded"] is False and "333333333333" in result["reason"]
    assert list(hub.by_place) == [None]


def test_a_delivery_that_inflates_past_the_limit_is_refused_as_malformed_not_decoded() -> None:
    from trainguard.events.log_subscription import MAX_DECOMPRESSED
    from trainguard.events.training_job import MalformedInput

    bomb = gzip.compress(b" " * (MAX_DECOMPRESSED + 1024))  # about 33 KB that inflate to 32 MiB and more
    with pytest.raises(MalformedInput, match="more than 32 MiB"):
        parse_log_delivery({"awslogs": {"data": base64.b64encode(bomb).decode()}})


def test_a_cut_gzip_stream_is_malformed() -> None:
    from trainguard.events.training_job import MalformedInput

    whole = gzip.compress(json.dumps({"messageType": "DATA_MESSAGE", "logEvents": []}).encode())
    with pytest.raises(MalformedInput, match="cut short"):
        parse_log_delivery({"awslogs": {"data": base64.b64encode(whole[:-12]).decode()}})


# Issue 24: one forged `trainguard.spoke` event stamped in 2100 made the hub ignore every later real line.
YEAR_2100 = datetime(2100, 1, 1, tzinfo=UTC)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, float]:
    """The metrics the log-activity handler adds, by name."""
    from trainguard.handlers.log_activity import metrics

    added: dict[str, float] = {}
    monkeypatch.setattr(
        metrics, "add_metric", lambda name, unit, value: added.__setitem__(name, added.get(name, 0) + value)
    )
    return added


def _spoke_hub() -> tuple[FakePlaces, Any]:
    hub = FakePlaces(**HUB)
    spoke = hub.fakes_at(SPOKE)
    training(spoke)
    follow_training_state(spoke, "llama-pretrain")
    return hub, spoke


@pytest.mark.parametrize(
    "envelope_time",
    [
        pytest.param("2026-11-29T12:00:05Z", id="sent-now"),
        pytest.param("2100-01-01T00:00:00Z", id="envelope-forged-too"),  # PutEvents takes a Time per entry
    ],
)
def test_a_forwarded_line_stamped_in_the_future_is_refused_and_counted_and_later_real_lines_are_recorded(
    envelope_time: str, counted: dict[str, float]
) -> None:
    from trainguard.metric_names import LOG_LINES_FROM_THE_FUTURE

    hub, spoke = _spoke_hub()
    bus = Bus()
    spoke_log_forwarder.handler(delivery("llama-pretrain", [NOW - timedelta(seconds=5), YEAR_2100]), None, client=bus)
    spoke_log_forwarder.handler(delivery("llama-pretrain", [NOW]), None, client=bus)
    forged, real = (forwarded(entry, time=envelope_time) for entry in bus.entries)

    assert log_activity.handle(forged, hub)["recorded"] is True  # the believable line only
    assert counted == {LOG_LINES_FROM_THE_FUTURE: 1}
    [job] = spoke.stall_ledger.watched_job("llama-pretrain")
    assert job.last_log_time is not None and job.last_log_time < NOW

    assert log_activity.handle(real, hub)["recorded"] is True
    [job] = spoke.stall_ledger.watched_job("llama-pretrain")
    assert job.last_log_time == NOW.replace(microsecond=0)  # the real line, so its silence can be measured


@pytest.mark.parametrize(
    ("ahead", "believed"),
    [
        (timedelta(minutes=4, seconds=59), True),  # within the skew (domain/log_clock.py's 5 minutes)
        (timedelta(minutes=5), True),
        (timedelta(minutes=5, seconds=1), False),
        (timedelta(days=365 * 74), False),
    ],
)
def test_a_direct_deliverys_lines_are_bounded_by_the_functions_own_clock(
    ahead: timedelta, believed: bool, counted: dict[str, float]
) -> None:
    from tests.fakes import fake_ports
    from trainguard.metric_names import LOG_LINES_FROM_THE_FUTURE

    ports = fake_ports()
    training(ports)
    follow_training_state(ports, "llama-pretrain")

    result = log_activity.handle(delivery("llama-pretrain", [NOW + ahead]), ports)

    assert result["recorded"] is believed
    assert counted == ({} if believed else {LOG_LINES_FROM_THE_FUTURE: 1})
    [job] = ports.stall_ledger.watched_job("llama-pretrain")
    assert (job.last_log_time is not None) is believed


def test_a_future_time_recorded_before_the_bound_is_replaced_by_the_next_real_line() -> None:
    from dataclasses import replace

    hub, spoke = _spoke_hub()
    ledger = spoke.stall_ledger
    ledger.jobs["llama-pretrain"] = replace(ledger.jobs["llama-pretrain"], last_log_time=YEAR_2100)
    bus = Bus()
    spoke_log_forwarder.handler(delivery("llama-pretrain", [NOW]), None, client=bus)

    assert log_activity.handle(forwarded(bus.entries[0]), hub)["recorded"] is True
    [job] = ledger.watched_job("llama-pretrain")
    assert job.last_log_time == NOW.replace(microsecond=0)
