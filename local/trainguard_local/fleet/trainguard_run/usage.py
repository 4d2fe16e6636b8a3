"""What trainguard used in a run, counted at its own clients and at each handler invocation, in the
units AWS bills (fleet/guard_cost.py prices them).

- API calls by operation, in all and per handler; the handler's invocations (each is one Lambda request).
- Per handler, the billed quantities of its calls: PutMetricData requests, GetMetricData metrics, S3
  LIST requests, SNS publish requests (64 KB chunks), DynamoDB read and write request units.
  DynamoDB units come from item sizes (AWS's rules, prices.py): a read from the items it returned (a
  Query also from the items its filter dropped, at the average size of those returned), strongly
  consistent or not as the request asked; a write from the request's own attributes (an UpdateItem's
  key and values), at least one unit. The ledger's items are far below 1 KB, so most writes are one unit.
- Each alarm's life, from PutMetricAlarm or PutCompositeAlarm to the DeleteAlarms that names it, with
  the metrics it references; an alarm put again keeps its first start.
- The Powertools metrics each invocation emitted (EMF: each name is a custom metric, billed in the
  hours it is sent).
- Every SNS message, as the production code published it (the demo prints them).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from trainguard.domain.stall_alarms import LOG_SILENCE_METRIC
from trainguard_local.fleet.guard_cost import AlarmLife, HandlerUsage, UsageSummary
from trainguard_local.fleet.prices import DYNAMODB_READ_UNIT_BYTES, DYNAMODB_WRITE_UNIT_BYTES, SNS_PUBLISH_CHUNK_BYTES
from trainguard_local.simulation.clock import SimClock

_READS = frozenset({"GetItem", "Query", "Scan", "BatchGetItem"})
_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem"})


@dataclass(frozen=True)
class Notification:
    at: float  # hours on the run's clock
    subject: str
    message: str
    attributes: dict[str, str]


class GuardUsage:
    def __init__(self, clock: SimClock) -> None:
        self.clock = clock
        self.calls: Counter[str] = Counter()  # trainguard's calls, "service:Operation"
        self.handlers: dict[str, HandlerUsage] = {}
        self.notifications: list[Notification] = []
        self.on_notification: Callable[[Notification], None] | None = None
        self.metric_hours: set[tuple[str, str, int]] = set()  # (handler, EMF metric name, hour since the epoch)
        self._open: dict[str, tuple[float, int, bool, str | None]] = {}  # alarm -> (start, metrics, composite, job)
        self._lives: list[AlarmLife] = []
        self._handler = "(outside a handler)"
        self._request: tuple[str, dict[str, Any]] = ("", {})  # the DynamoDB request awaiting its answer

    @property
    def hours(self) -> float:
        return self.clock.hours_of(self.clock.now)

    def attach(self, service: str, client: Any) -> None:
        """Count every call this client makes (botocore's before-parameter-build: once per call, before
        retries), and DynamoDB's units from each answer (after-call, which errors reach too)."""
        service_id = client.meta.service_model.service_id.hyphenize()

        def before(params: dict[str, Any], model: Any, **_: Any) -> None:
            self._counted(service, model.name, params)

        client.meta.events.register(f"before-parameter-build.{service_id}", before)
        if service == "dynamodb":
            client.meta.events.register(f"after-call.{service_id}", self._dynamodb_answer)

    # ---- invocations ----------------------------------------------------------------------------

    def invoked(self, handler: str) -> None:
        self._handler = handler
        self.handlers.setdefault(handler, HandlerUsage()).invocations += 1

    def returned(self, emitted_metrics: Iterable[str]) -> None:
        """The invocation ended; `emitted_metrics`: the Powertools metrics it added (flushed as EMF)."""
        hour = self._hour(self.hours)
        self.metric_hours.update((self._handler, name, hour) for name in emitted_metrics)
        self._handler = "(outside a handler)"

    # ---- the run's usage, summed -----------------------------------------------------------------

    def summary(self, span_hours: float, every_minute: tuple[str, ...] = ("stall_prober",)) -> UsageSummary:
        """What the run used over `span_hours` (alarms still alive end then). A custom metric is billed in
        each hour it is sent: each watched job's log silence in every hour of its watch (the prober sends it
        every minute), and each Powertools metric in the hours it was emitted, or in every hour of the span
        for the handlers a deployment runs `every_minute`."""
        lives = self.alarm_lives(span_hours)
        log_silence = sum(self._hours_touched(life.start, life.end) for life in lives if life.log_silence_of)
        emitted = {(name, hour) for handler, name, hour in self.metric_hours if handler not in every_minute}
        every_hour = {name for handler, name, _ in self.metric_hours if handler in every_minute}
        hours = range(self._hour(0.0), self._hour(span_hours) + 1)
        emitted |= {(name, hour) for name in every_hour for hour in hours}
        return UsageSummary(span_hours, dict(self.handlers), lives, float(log_silence), float(len(emitted)))

    def alarm_lives(self, until: float) -> list[AlarmLife]:
        """Every alarm's life; those still alive end at `until`."""
        still = [AlarmLife(n, s, max(until, s), m, c, j) for n, (s, m, c, j) in self._open.items()]
        return [*self._lives, *still]

    def _hour(self, hours: float) -> int:
        """The clock hour (since the epoch) of a moment of the run."""
        return math.floor(self.clock.at_hours(hours).timestamp() / 3600)

    def _hours_touched(self, start: float, end: float) -> int:
        return self._hour(end) - self._hour(start) + 1

    # ---- counting -------------------------------------------------------------------------------

    def _counted(self, service: str, operation: str, params: dict[str, Any]) -> None:
        key = f"{service}:{operation}"
        self.calls[key] += 1
        usage = self.handlers.setdefault(self._handler, HandlerUsage())
        usage.calls[key] += 1
        if key == "cloudwatch:PutMetricData":
            usage.add("put_metric_data_requests", 1)
        elif key == "cloudwatch:GetMetricData":
            usage.add(
                "get_metric_data_metrics", sum(1 for q in params.get("MetricDataQueries", []) if "MetricStat" in q)
            )
        elif key == "s3:ListObjectsV2":
            usage.add("s3_list_requests", 1)
        elif key == "sns:Publish":
            self._published(params, usage)
        elif key == "cloudwatch:PutMetricAlarm":
            metrics = sum(1 for q in params.get("Metrics", []) if "MetricStat" in q) or 1
            job = _dimension(params, "JobName") if params.get("MetricName") == LOG_SILENCE_METRIC else None
            self._open.setdefault(params["AlarmName"], (self.hours, metrics, False, job))
        elif key == "cloudwatch:PutCompositeAlarm":
            self._open.setdefault(params["AlarmName"], (self.hours, 0, True, None))
        elif key == "cloudwatch:DeleteAlarms":
            for name in params.get("AlarmNames", []):
                if name in self._open:
                    start, metrics, composite, job = self._open.pop(name)
                    self._lives.append(AlarmLife(name, start, self.hours, metrics, composite, job))
        elif service == "dynamodb":
            self._request = (operation, params)

    def _published(self, params: dict[str, Any], usage: HandlerUsage) -> None:
        attributes = {k: str(v.get("StringValue", "")) for k, v in params.get("MessageAttributes", {}).items()}
        size = len(str(params.get("Message", "")).encode()) + len(json.dumps(params.get("MessageAttributes", {})))
        usage.add("sns_publish_requests", max(1, math.ceil(size / SNS_PUBLISH_CHUNK_BYTES)))
        notification = Notification(
            self.hours, str(params.get("Subject", "")), str(params.get("Message", "")), attributes
        )
        self.notifications.append(notification)
        if self.on_notification is not None:
            self.on_notification(notification)

    def _dynamodb_answer(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        operation, params = self._request
        if operation != model.name:
            return
        usage = self.handlers.setdefault(self._handler, HandlerUsage())
        if operation in _READS:
            usage.add("dynamodb_read_units", read_units(operation, params, parsed))
        elif operation in _WRITES:
            usage.add("dynamodb_write_units", write_units(operation, params))


def read_units(operation: str, params: Mapping[str, Any], parsed: Mapping[str, Any]) -> float:
    """Read request units of one answered read (AWS's rules, prices.py)."""
    consistency = 1.0 if params.get("ConsistentRead") else 0.5
    if operation == "GetItem":
        return _units(item_bytes(parsed.get("Item", {})), DYNAMODB_READ_UNIT_BYTES) * consistency
    if operation == "BatchGetItem":
        items = [i for table in parsed.get("Responses", {}).values() for i in table]
        return sum(_units(item_bytes(i), DYNAMODB_READ_UNIT_BYTES) for i in items) * 0.5 or 0.5
    items = parsed.get("Items", [])
    read: float = sum(item_bytes(item) for item in items)
    dropped = max(0, int(parsed.get("ScannedCount", len(items))) - len(items))  # read, then filtered out
    read += dropped * (read / len(items) if items else 1)
    return _units(read, DYNAMODB_READ_UNIT_BYTES) * consistency


def write_units(operation: str, params: Mapping[str, Any]) -> float:
    """Write request units of one write, from the request's own attributes (at least one)."""
    if operation == "PutItem":
        size = item_bytes(params.get("Item", {}))
    else:
        size = item_bytes(params.get("Key", {})) + item_bytes(params.get("ExpressionAttributeValues", {}))
    return _units(size, DYNAMODB_WRITE_UNIT_BYTES)


def item_bytes(item: Mapping[str, Any]) -> int:
    """An item's size as DynamoDB counts it: each attribute's name plus its value (typed, low-level form)."""
    return sum(len(name.encode()) + _value_bytes(value) for name, value in item.items())


def _value_bytes(value: Mapping[str, Any]) -> int:
    [(kind, data)] = value.items()
    if kind == "S":
        return len(str(data).encode())
    if kind == "N":
        digits = len(str(data).lstrip("-").replace(".", "").strip("0"))
        return math.ceil(digits / 2) + 1  # "1 byte per two significant digits, plus 1 byte"
    if kind == "B":
        return len(data)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + sum(len(k.encode()) + _value_bytes(v) + 1 for k, v in data.items())
    if kind == "L":
        return 3 + sum(_value_bytes(v) + 1 for v in data)
    return sum(len(str(member).encode()) for member in data)  # SS, NS, BS


def _units(size: float, unit_bytes: int) -> float:
    return float(max(1, math.ceil(size / unit_bytes)))


def _dimension(params: Mapping[str, Any], name: str) -> str | None:
    return next((d["Value"] for d in params.get("Dimensions", []) if d.get("Name") == name), None)
