"""Parsers for the stall path: alarm state changes and CloudWatch Logs subscription deliveries."""

from __future__ import annotations

import base64
import copy
import gzip
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.conftest import load_fixture
from trainguard.events.alarm_state_change import parse_alarm_state_change
from trainguard.events.log_subscription import parse_log_delivery
from trainguard.events.training_job import MalformedInput

SAMPLES = ["single_metric", "metric_math", "composite", "anomaly_detection"]


@pytest.mark.parametrize("sample", SAMPLES)
def test_the_aws_samples_parse(sample: str) -> None:
    event = load_fixture(f"events/cloudwatch_alarm_state_change.{sample}.awsdocs.json")
    change = parse_alarm_state_change(event)
    assert change.alarm_name == event["detail"]["alarmName"]
    assert change.state == event["detail"]["state"]["value"] and change.previous_state
    assert change.timestamp is not None and change.timestamp.tzinfo is not None


def test_a_muted_alarms_change_names_its_mute_rule_and_window_and_the_others_are_not_muted() -> None:
    change = parse_alarm_state_change(load_fixture("events/cloudwatch_alarm_state_change.muted.awsdocs.json"))
    assert change.mute is not None and change.mute.rule_name == "testMute"
    assert change.mute.window_end == datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    for sample in SAMPLES:
        assert (
            parse_alarm_state_change(load_fixture(f"events/cloudwatch_alarm_state_change.{sample}.awsdocs.json")).mute
            is None
        )


@pytest.mark.parametrize("mute_detail", ["muted", {}, {"mutedByArn": 7, "muteWindowEnd": "soon"}, []])
def test_a_mute_detail_that_cannot_be_read_still_counts_as_muted(mute_detail: Any) -> None:
    """A mute is the team's word to leave the job alone: in doubt, trainguard only tells."""
    event = copy.deepcopy(load_fixture("events/cloudwatch_alarm_state_change.muted.awsdocs.json"))
    event["detail"]["muteDetail"] = mute_detail
    change = parse_alarm_state_change(event)
    assert change.mute is not None and change.mute.rule_name == "an alarm mute rule" and change.mute.window_end is None


def _broken(path: tuple[str, ...], value: Any = None) -> dict[str, Any]:
    event = copy.deepcopy(load_fixture("events/cloudwatch_alarm_state_change.single_metric.awsdocs.json"))
    target = event
    for key in path[:-1]:
        target = target[key]
    if value is None:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return event


@pytest.mark.parametrize(
    "event",
    [
        _broken(("detail",)),
        _broken(("detail", "alarmName")),
        _broken(("detail", "state")),
        _broken(("detail", "state", "value")),
        _broken(("source",), "aws.ec2"),
        _broken(("detail", "alarmName"), 5),
        "text",
        [],
    ],
)
def test_malformed_alarm_events(event: Any) -> None:
    with pytest.raises(MalformedInput):
        parse_alarm_state_change(event)


def delivery(stream: str, events: list[dict[str, Any]], kind: str = "DATA_MESSAGE") -> dict[str, Any]:
    payload = {
        "messageType": kind,
        "owner": "123456789012",
        "logGroup": "/aws/sagemaker/TrainingJobs",
        "logStream": stream,
        "subscriptionFilters": ["trainguard"],
        "logEvents": events,
    }
    return {"awslogs": {"data": base64.b64encode(gzip.compress(json.dumps(payload).encode())).decode()}}


def test_the_newest_event_of_a_training_stream() -> None:
    activity = parse_log_delivery(
        delivery(
            "llama-pretrain/algo-3-1764417600",
            [
                {"id": "1", "timestamp": 1764417660000, "message": "step 10 loss 2.1\n"},
                {"id": "2", "timestamp": 1764417720000, "message": "step 20 loss 2.0\n"},
                {"id": "3", "timestamp": 1764417690000, "message": "late line"},
            ],
        )
    )
    assert activity is not None
    assert (activity.job_name, activity.host, activity.last_line) == ("llama-pretrain", 3, "step 20 loss 2.0")
    assert int(activity.newest.timestamp()) == 1764417720


def test_a_long_last_line_is_cut() -> None:
    activity = parse_log_delivery(delivery("j/algo-1-1", [{"id": "1", "timestamp": 1, "message": "x" * 5000}]))
    assert activity is not None and len(activity.last_line) == 300


@pytest.mark.parametrize(
    "payload",
    [
        delivery("j/algo-1-1", [], "CONTROL_MESSAGE"),
        delivery("j/algo-1-1", []),
        delivery("/aws/lambda/other", [{"id": "1", "timestamp": 1, "message": "m"}]),
        delivery("j/algo-1-1", [{"id": "1", "message": "no time"}]),
    ],
)
def test_deliveries_with_nothing_to_record(payload: dict[str, Any]) -> None:
    assert parse_log_delivery(payload) is None


@pytest.mark.parametrize(
    "event",
    [
        {},
        {"awslogs": {}},
        {"awslogs": {"data": "!!"}},
        {"awslogs": {"data": base64.b64encode(b"not gzip").decode()}},
        "x",
    ],
)
def test_undecodable_deliveries(event: Any) -> None:
    with pytest.raises(MalformedInput):
        parse_log_delivery(event)
