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
    mute: AlarmMute | None = None  # the alarm mute rule that muted this change's actions


@dataclass(frozen=True)
class AlarmMute:
    """`detail.muteDetail`: the alarm mute rule that muted the alarm, and its window. From AWS's samples
    (cloudwatch-and-eventbridge.html): {"mutedByArn": "arn:aws:cloudwatch:us-east-1:1234567890:alarm-mute-rule:
    testMute", "muteWindowStart": "2026-01-01T10:00:00.000+0000", "muteWindowEnd": "2026-01-01T12:00:00.000+0000"},
    beside `state` in `detail`. A muteDetail that is not an object, or has no rule ARN, still counts as muted:
    a mute is the team's word to leave the job alone, so doubt falls on the side of not stopping."""

    rule_arn: str
    window_end: datetime | None
    window_start: str = ""  # as the event gives it: with the rule, what tells one mute window from the next

    @property
    def rule_name(self) -> str:
        return self.rule_arn.rsplit(":", 1)[-1] if self.rule_arn else "an alarm mute rule"


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
        mute=_mute(detail.get("muteDetail")),
    )


def _mute(raw: object) -> AlarmMute | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        return AlarmMute("", None)
    arn = raw.get("mutedByArn")
    end, start = raw.get("muteWindowEnd"), raw.get("muteWindowStart")
    return AlarmMute(
        arn if isinstance(arn, str) else "",
        parse_aws_time(end) if isinstance(end, str) else None,
        start if isinstance(start, str) else "",
    )
