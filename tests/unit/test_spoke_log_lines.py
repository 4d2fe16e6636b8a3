"""The log rhythm's way from a spoke to its hub (docs/organization.md): the spoke's forwarder puts each
subscription delivery as it came on its own account's default bus (infra/spoke_log_forwarder.py), whose rule
forwards it to the hub's bus; the hub's log-activity function records it for the job of the account and region
that sent it, in that place's records."""

from __future__ import annotations

import base64
import gzip
import json
import os
from datetime import timedelta
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


def forwarded(entry: dict[str, Any], place: Location = SPOKE) -> dict[str, Any]:
    """The entry as EventBridge delivers it from the hub's bus: put on the spoke's default bus and forwarded by its
    rule, it carries the spoke's account and region."""
    return {
        "version": "0",
        "id": "1",
        "detail-type": entry["DetailType"],
        "source": entry["Source"],
        "account": place.account,
        "time": "2026-12-02T07:00:00Z",
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
    home, spoke = hub.by_place[None], hub.at(type(hub.by_place[None]), SPOKE)
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
