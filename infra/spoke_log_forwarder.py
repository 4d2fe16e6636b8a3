"""Forward this spoke's training log deliveries towards the hub (infra/spoke_stack.py deploys it as inline code).

The spoke has no package of trainguard's: this file is the function's whole code, read by the spoke stack into
its template (Lambda's inline ZipFile). CloudFormation no longer limits inline code to 4 KB (aws/aws-cdk#20624);
the spoke keeps it under 4,096 characters all the same, to keep its template small (tests/infra check).

Each CloudWatch Logs subscription delivery goes out as one custom event on this account's default bus, whose
detail is the delivery itself; the spoke's forwarding rule takes it to the hub's bus with this account and region
as its origin, and the hub's log-activity function parses it as it parses its own account's
(trainguard/events/log_subscription.py). A delivery too large for one PutEvents entry (256 KB) keeps its newest
lines, each cut to 300 characters, halved until it fits.
"""

import base64
import gzip
import json
import os

import boto3

LIMIT = 200_000
_events = None


def handler(event, context, client=None):
    global _events
    data = event["awslogs"]["data"]
    if len(data) > LIMIT:
        payload = json.loads(gzip.decompress(base64.b64decode(data)))
        if payload.get("messageType") != "DATA_MESSAGE":
            return 0
        lines = [dict(line, message=line["message"][:300]) for line in payload["logEvents"][-2000:]]
        while True:
            payload["logEvents"] = lines
            data = base64.b64encode(gzip.compress(json.dumps(payload).encode())).decode()
            if len(data) <= LIMIT or len(lines) == 1:
                break
            lines = lines[len(lines) // 2 :]
    if client is None:
        _events = _events or boto3.client("events")
        client = _events
    response = client.put_events(
        Entries=[
            {
                "Source": os.environ["SOURCE"],
                "DetailType": os.environ["DETAIL_TYPE"],
                "Detail": json.dumps({"awslogs": {"data": data}}),
            }
        ]
    )
    if response.get("FailedEntryCount"):
        raise RuntimeError(f"EventBridge refused the log lines: {response['Entries']}")
    return 1
