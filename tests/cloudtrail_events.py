"""CloudTrail records and their EventBridge "AWS API Call via CloudTrail" envelopes, built for tests.

No public envelope of a failed CreateTrainingJob was found, so the tests wrap a real record
(tests/fixtures/events/cloudtrail_record.*) in the envelope AWS documents: the record becomes
`detail` unchanged, and the envelope's source, account, time and region come from it
(https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-service-event-cloudtrail.html).
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Mapping
from typing import Any

from trainguard_local.stand_in.cloudtrail import camel_case_record  # noqa: F401  (re-exported for the tests)


def envelope_from_record(record: Mapping[str, Any], error_code: str, error_message: str) -> dict[str, Any]:
    """The event EventBridge would deliver for `record` had the call failed with `error_code`.
    An empty `error_code` keeps the call as it was (a success has no errorCode)."""
    detail = {k: copy.deepcopy(v) for k, v in record.items() if not k.startswith("_")}
    if error_code:
        detail["errorCode"] = error_code
        detail["errorMessage"] = error_message
        detail["responseElements"] = None  # a refused call created nothing
    detail.setdefault("eventType", "AwsApiCall")
    service = str(detail["eventSource"]).removesuffix(".amazonaws.com")
    return {
        "version": "0",
        "id": str(uuid.uuid5(uuid.NAMESPACE_URL, json.dumps(detail, sort_keys=True))),
        "detail-type": "AWS API Call via CloudTrail",
        "source": f"aws.{service}",
        "account": detail.get("recipientAccountId", ""),
        "time": detail.get("eventTime", ""),
        "region": detail.get("awsRegion", ""),
        "resources": [],
        "detail": detail,
    }
