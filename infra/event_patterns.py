"""EventBridge event patterns as plain data, shared by the stack and the tests.

Source, detail-type and field names: "SageMaker Training Job State Change",
https://docs.aws.amazon.com/sagemaker/latest/dg/automating-sagemaker-with-eventbridge.html

The pattern deliberately says nothing about `detail.Tags`: AWS's sample shows a map and the
schema registry a list, and a pattern that assumed the wrong one would silently guard nothing.
Opt-in is decided in the handler, from ListTags.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trainguard.domain.stalls import ALARM_PREFIX
from trainguard.events.log_subscription import SPOKE_LOG_DETAIL_TYPE, SPOKE_LOG_SOURCE

SAGEMAKER_SOURCE = "aws.sagemaker"
TRAINING_JOB_STATE_CHANGE = "SageMaker Training Job State Change"

# Every status the job-events function acts on: InProgress and Stopping start (or update) the stall
# watch and its alarms, Completed ends it, Failed and Stopped end it and may call for a relaunch (a
# failure, MaxRuntimeExceeded, MaxWaitTimeExceeded after spot interruptions, a stop for a stall).
# Not Deleting: a job being deleted has already ended, and its end was handled then.
TRAINING_JOB_STATUSES = ("InProgress", "Stopping", "Completed", "Failed", "Stopped")


def training_job_state_pattern() -> dict[str, Any]:
    return {
        "source": [SAGEMAKER_SOURCE],
        "detail-type": [TRAINING_JOB_STATE_CHANGE],
        "detail": {"TrainingJobStatus": list(TRAINING_JOB_STATUSES)},
    }


CLOUDWATCH_SOURCE = "aws.cloudwatch"
ALARM_STATE_CHANGE = "CloudWatch Alarm State Change"


def stall_alarm_pattern() -> dict[str, Any]:
    """trainguard's stall alarms going to ALARM: the log-silence and idle-GPU alarms of each watched job
    (`trainguard.domain.stalls.alarm_name`), never the parts of an idle-GPU composite, whose prefix
    `trainguard-gpu-part-` does not start with ALARM_PREFIX.

    CloudWatch sends "CloudWatch Alarm State Change" to the default bus for every alarm whose state
    changes, with the alarm's name at `detail.alarmName` and the new state at `detail.state.value`
    (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-and-eventbridge.html;
    the samples in tests/fixtures/events/cloudwatch_alarm_state_change.*). Back to OK or
    INSUFFICIENT_DATA needs no action.
    """
    return {
        "source": [CLOUDWATCH_SOURCE],
        "detail-type": [ALARM_STATE_CHANGE],
        "detail": {"alarmName": [{"prefix": ALARM_PREFIX}], "state": {"value": ["ALARM"]}},
    }


def guarded_events(watch_failed_launches: bool) -> dict[str, dict[str, Any]]:
    """The events trainguard acts on, by name, with their patterns: what a spoke forwards to its hub and what the
    hub routes from its bus (infra/spoke_stack.py, infra/hub.py), in one place. The refused launches only where
    the setting `watch_failed_launches` asks for them (they need a CloudTrail trail)."""
    events = {"TrainingJobStates": training_job_state_pattern(), "StallAlarms": stall_alarm_pattern()}
    if watch_failed_launches:
        events["FailedLaunches"] = failed_training_job_launch_pattern()
    return events


def spoke_log_lines_pattern() -> dict[str, Any]:
    """A spoke's training log deliveries, which its log forwarder puts on the hub's bus (spoke_log_forwarder.py)."""
    return {"source": [SPOKE_LOG_SOURCE], "detail-type": [SPOKE_LOG_DETAIL_TYPE]}


def from_enrolled(pattern: dict[str, Any], accounts: Sequence[str], regions: Sequence[str]) -> dict[str, Any]:
    """`pattern`, for events whose origin is an enrolled account and region (a hub's routes, infra/hub.py)."""
    return {**pattern, "account": list(accounts), "region": list(regions)}


def not_enrolled(accounts: Sequence[str], regions: Sequence[str]) -> dict[str, Any]:
    """Any event on the hub's bus from an account or a region that is not enrolled (its refused-events rule)."""
    return {"$or": [{"account": [{"anything-but": list(accounts)}]}, {"region": [{"anything-but": list(regions)}]}]}


CLOUDTRAIL_API_CALL = "AWS API Call via CloudTrail"
SAGEMAKER_EVENT_SOURCE = "sagemaker.amazonaws.com"


def failed_training_job_launch_pattern() -> dict[str, Any]:
    """CreateTrainingJob calls that SageMaker refused with ResourceLimitExceeded (a quota): no job
    exists, so no state change is sent, and only CloudTrail saw the call.

    CloudTrail delivers API calls to the default bus with detail-type "AWS API Call via CloudTrail",
    source `aws.<service>` and the CloudTrail record as `detail` (eventSource, eventName, errorCode,
    requestParameters, ...); it needs a trail with logging enabled, and delivery is best effort:
    https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-service-event-cloudtrail.html
    `trainguard.events.cloudtrail.parse_failed_launch` reads the event. Not every ResourceLimitExceeded
    is a quota ("not available in this region" uses the same code): the errorMessage decides.
    """
    return {
        "source": [SAGEMAKER_SOURCE],
        "detail-type": [CLOUDTRAIL_API_CALL],
        "detail": {
            "eventSource": [SAGEMAKER_EVENT_SOURCE],
            "eventName": ["CreateTrainingJob"],
            "errorCode": ["ResourceLimitExceeded"],
        },
    }
