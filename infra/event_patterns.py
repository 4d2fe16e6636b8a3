"""EventBridge event patterns as plain data, shared by the stack and the tests.

Source, detail-type and field names: "SageMaker Training Job State Change",
https://docs.aws.amazon.com/sagemaker/latest/dg/automating-sagemaker-with-eventbridge.html

The pattern deliberately says nothing about `detail.Tags`: AWS's sample shows a map and the
schema registry a list, and a pattern that assumed the wrong one would silently guard nothing.
Opt-in is decided in the handler, from ListTags.
"""

from __future__ import annotations

from typing import Any

SAGEMAKER_SOURCE = "aws.sagemaker"
TRAINING_JOB_STATE_CHANGE = "SageMaker Training Job State Change"

# The statuses that can call for action in the foundation: a failure (retry or tell) and a stop
# (MaxRuntimeExceeded, MaxWaitTimeExceeded after spot interruptions).
ACTIONABLE_TRAINING_STATUSES = ("Failed", "Stopped")


def training_job_ended_pattern() -> dict[str, Any]:
    return {
        "source": [SAGEMAKER_SOURCE],
        "detail-type": [TRAINING_JOB_STATE_CHANGE],
        "detail": {"TrainingJobStatus": list(ACTIONABLE_TRAINING_STATUSES)},
    }


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
