"""CloudWatch Logs subscription deliveries: the newest event of one log stream, and the times of all, per batch.

The payload is `{"awslogs": {"data": <base64 of gzip of JSON>}}`; the JSON has messageType
(DATA_MESSAGE, or CONTROL_MESSAGE when CloudWatch Logs checks the destination), owner, logGroup,
logStream, subscriptionFilters and logEvents [{id, timestamp (epoch ms), message}]. One payload
holds one log stream (https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/SubscriptionFilters.html).
SageMaker's training streams are `<job-name>/algo-<n>-<epoch-seconds>` (docs/aws-facts.md).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from trainguard.domain.log_clock import is_believable
from trainguard.domain.log_rhythm import PHASE_LINE
from trainguard.events.training_job import MalformedInput

# A spoke's training log lines, forwarded to its hub's bus (infra/spoke_log_forwarder.py): a custom event whose
# detail is the subscription delivery itself, `{"awslogs": {"data": ...}}`, so that the hub reads it as above.
SPOKE_LOG_SOURCE = "trainguard.spoke"
SPOKE_LOG_DETAIL_TYPE = "Training Log Lines"

_STREAM = re.compile(r"^(?P<job>[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62})/algo-(?P<host>\d{1,3})-\d+$")
LAST_LINE_LIMIT = 300
# A delivery reaches Lambda as an asynchronous invocation (256 KB at most); 32 MiB is a 128:1 ratio, more than log
# text compresses, and within the function's 256 MB.
MAX_DECOMPRESSED = 32 * 2**20


@dataclass(frozen=True)
class LogActivity:
    job_name: str
    host: int
    newest: datetime
    last_line: str  # the newest event's message, cut to LAST_LINE_LIMIT characters
    times: tuple[datetime, ...] = ()  # every event's time in the batch: the gaps of the job's log rhythm
    phase_lines: int = 0  # events that announce a long phase (domain/log_rhythm.py's PHASE_LINE)
    # Every event's time and message, in time order: what the lines say about progress (domain/progress_lines.py
    # reads at most MAX_LINE_CHARS of each).
    lines: tuple[tuple[datetime, str], ...] = ()


@dataclass(frozen=True)
class BelievedDelivery:
    """A delivery's lines stamped no later than the bound (domain/log_clock.py), and how many were later."""

    activity: LogActivity | None  # None: nothing believable to record (or a control message, another stream)
    refused: int = 0  # lines stamped after the bound: counted, never recorded
    job_name: str = ""  # the stream's job, when the delivery is a training job's


def _event_time(event: Mapping[str, Any]) -> datetime | None:
    """The event's epoch-millisecond timestamp as a datetime; None when it is not one a datetime can hold."""
    stamp = event.get("timestamp")
    if isinstance(stamp, bool) or not isinstance(stamp, int | float):
        return None
    try:
        return datetime.fromtimestamp(stamp / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _gunzip(compressed: bytes) -> bytes:
    """The delivery's JSON, refused past MAX_DECOMPRESSED: a payload a spoke could forge small and make huge."""
    inflate = zlib.decompressobj(wbits=31)  # gzip framing
    text = inflate.decompress(compressed, MAX_DECOMPRESSED)
    if inflate.unconsumed_tail:
        raise ValueError(f"it inflates to more than {MAX_DECOMPRESSED // 2**20} MiB")
    if not inflate.eof:
        raise EOFError("the gzip stream is cut short")
    return text


def is_forwarded_log_lines(event: object) -> bool:
    """Whether `event` is a spoke's forwarded delivery (on a hub's bus), not a delivery of the hub's own group."""
    return (
        isinstance(event, Mapping)
        and event.get("source") == SPOKE_LOG_SOURCE
        and event.get("detail-type") == SPOKE_LOG_DETAIL_TYPE
    )


def parse_log_delivery(event: object) -> LogActivity | None:
    """The delivery's newest event, or None for a control message, an empty batch, or a stream that is
    not a training job's. Raises MalformedInput for a payload that cannot be decoded. Every line's time is taken
    as written: the handler reads deliveries with parse_believable_delivery."""
    return _parse(event, None).activity


def parse_believable_delivery(event: object, latest: datetime) -> BelievedDelivery:
    """parse_log_delivery of the lines stamped no later than `latest` (domain/log_clock.py's bound), with the
    number of lines stamped later, which are left out."""
    return _parse(event, latest)


def _parse(event: object, latest: datetime | None) -> BelievedDelivery:
    if not isinstance(event, Mapping) or not isinstance(event.get("awslogs"), Mapping):
        raise MalformedInput("not a CloudWatch Logs subscription delivery (no awslogs object)")
    data = event["awslogs"].get("data")
    if not isinstance(data, str):
        raise MalformedInput("awslogs.data is missing")
    try:
        payload: Any = json.loads(_gunzip(base64.b64decode(data, validate=True)))
    except (binascii.Error, OSError, EOFError, zlib.error, ValueError, RecursionError) as err:
        raise MalformedInput(f"awslogs.data cannot be decoded: {err}") from None
    if not isinstance(payload, Mapping):
        raise MalformedInput("awslogs.data is not a JSON object")
    if payload.get("messageType") != "DATA_MESSAGE":
        return BelievedDelivery(None)
    stream = _STREAM.match(str(payload.get("logStream", "")))
    events = payload.get("logEvents")
    if stream is None or not isinstance(events, list):
        return BelievedDelivery(None)
    every = [(moment, e) for e in events if isinstance(e, Mapping) and (moment := _event_time(e)) is not None]
    timed = [(moment, e) for moment, e in every if latest is None or is_believable(moment, latest)]
    refused = len(every) - len(timed)
    if not timed:
        return BelievedDelivery(None, refused, stream["job"])
    moment, newest = max(timed, key=lambda pair: pair[0])
    activity = LogActivity(
        job_name=stream["job"],
        host=int(stream["host"]),
        newest=moment,
        last_line=str(newest.get("message", ""))[:LAST_LINE_LIMIT].rstrip("\n"),
        times=tuple(sorted(moment for moment, _ in timed)),
        phase_lines=sum(1 for _, e in timed if PHASE_LINE.search(str(e.get("message", ""))[:LAST_LINE_LIMIT])),
        lines=tuple(sorted(((moment, str(e.get("message", ""))) for moment, e in timed), key=lambda pair: pair[0])),
    )
    return BelievedDelivery(activity, refused, stream["job"])
