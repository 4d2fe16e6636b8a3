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
