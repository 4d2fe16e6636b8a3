"""The EventBridge "CloudWatch Alarm State Change" event (metric, metric-math and composite alarms).

Shape: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-and-eventbridge.html
(samples in tests/fixtures/events/cloudwatch_alarm_state_change.*). Powertools' CloudWatchAlarmEvent
models the alarm-action payload, not this event (docs/aws-facts.md), so this is our own small model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from trainguard.events.times import parse_aws_time
from trainguard.events.training_job import MalformedInput, event_detail

SOURCE = "aws.cloudwatch"
DETAIL_TYPE = "CloudWatch Alarm State Change"


@dataclass(frozen=True)
class AlarmStateChange:
    event_id: str
    alarm_name: str
    state: str  # OK, ALARM, INSUFFICIENT_DATA
    previous_state: str
    reason: str
    timestamp: datetime | None


def parse_alarm_state_change(event: object) -> AlarmStateChange:
    event, detail = event_detail(event, SOURCE, DETAIL_TYPE, "an alarm state change")
    name = detail.get("alarmName")
    state = detail.get("state")
    if not isinstance(name, str) or not name:
        raise MalformedInput("detail.alarmName is missing or not a string")
    if not isinstance(state, Mapping) or not isinstance(state.get("value"), str):
        raise MalformedInput(f"detail.state.value of {name} is missing")
    previous = detail.get("previousState")
    return AlarmStateChange(
        event_id=str(event.get("id", "")),
        alarm_name=name,
        state=state["value"],
        previous_state=str(previous.get("value", "")) if isinstance(previous, Mapping) else "",
        reason=str(state.get("reason", "")),
        timestamp=parse_aws_time(state.get("timestamp")),
    )
