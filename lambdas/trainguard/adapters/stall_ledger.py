"""DynamoDB: the jobs trainguard watches for stalls, their newest log line, and the stalls it stopped.

`stall-watch` / <job>: one item per watched job (the prober reads them all with one Query), with its
newest log line, its log rhythm (a JSON string: the gap buckets of domain/log_rhythm.py, about 200 bytes), its
progress (a JSON string: domain/progress_watch.py's state, at most 32 intervals and a phase name, under 700 bytes)
and its progress rules' figures (`progress_settings`, from its tags when the watch began), and, while a muted
stall alarm waits for its mute window to end, `muted_until` and `muted_alarm`;
`job#<job>` / `stall`: the evidence of a stop, which the job-ended path reads to relaunch.

IAM: each method's `needs`, granted on the ledger table.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from datetime import UTC, datetime
from typing import Any

from trainguard.adapters.ledger import OWN_RECORDS, RETENTION, TTL_ATTRIBUTE, LedgerScope, conditional_update
from trainguard.adapters.permissions import needs
from trainguard.domain.log_rhythm import LogRhythm
from trainguard.domain.progress_settings import ProgressSettings
from trainguard.domain.progress_watch import ProgressState
from trainguard.domain.stalls import StallThresholds
from trainguard.domain.watched_job import LoggedLines, WatchedJob

_WATCH = "stall-watch"


class StallLedger:
    """One place's watched jobs and stalls (ledger.LedgerScope: in a hub, each spoke's records are its own)."""

    def __init__(self, client: Any, table_name: str, scope: LedgerScope = OWN_RECORDS) -> None:
        self._client = client
        self._table = table_name
        self._scope = scope

    @needs("dynamodb:UpdateItem")
    def watch(self, job: WatchedJob) -> None:
        """Start (or update) watching a job; keeps the newest log line already recorded."""
        self._client.update_item(
            TableName=self._table,
            Key=self._scope.key(_WATCH, job.job_name),
            UpdateExpression="SET instance_type = :type, host_count = :hosts, thresholds = :thresholds, "
            "training_since = :since, stopping_since = :stopping, checkpoint_uri = :uri, "
            "progress_settings = :progress",
            ExpressionAttributeValues={
                ":type": {"S": job.instance_type},
                ":hosts": {"N": str(job.host_count)},
                ":thresholds": {"S": json.dumps({k: v for k, v in asdict(job.thresholds).items() if k != "problems"})},
                ":since": _time_or_null(job.training_since),
                ":stopping": _time_or_null(job.stopping_since),
                ":uri": {"S": job.checkpoint_uri},
                ":progress": {"S": _compact(job.progress_settings.to_json())},
            },
        )

    @needs("dynamodb:DeleteItem")
    def unwatch(self, job_name: str) -> None:
        self._client.delete_item(TableName=self._table, Key=self._scope.key(_WATCH, job_name))

    @needs("dynamodb:Query")
    def watched(self) -> list[WatchedJob]:
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": self._scope.records + _WATCH}},
        }
        while True:
            page = self._client.query(**kwargs)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return [_watched(item) for item in items]
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    @needs("dynamodb:GetItem")
    def watched_job(self, job_name: str) -> list[WatchedJob]:
        """The one watched job of that name, as a list of zero or one."""
        item = self._client.get_item(TableName=self._table, Key=self._scope.key(_WATCH, job_name), ConsistentRead=True)
        return [_watched(item["Item"])] if "Item" in item else []

    @needs("dynamodb:UpdateItem")
    def record_log_activity(self, job_name: str, newest: datetime, last_line: str) -> bool:
        """Keep the newest log event of a watched job. False when the job is not watched or the
        event is not newer than the one recorded (deliveries may come late or twice)."""
        return self._update_watched(
            job_name,
            "SET last_log_ms = :ms, last_log_line = :line",
            "attribute_not_exists(last_log_ms) OR last_log_ms < :ms",
            {":ms": {"N": str(_ms(newest))}, ":line": {"S": last_line}},
        )

    @needs("dynamodb:UpdateItem")
    def record_log_lines(self, job_name: str, lines: LoggedLines, previous: datetime | None) -> bool:
        """Keep the newest log event and the rhythm (and progress) computed from it, if the newest line recorded is
        still `previous` (read just before): False when another delivery got there first, or the job is not
        watched."""
        values: dict[str, Any] = {
            ":ms": {"N": str(_ms(lines.newest))},
            ":line": {"S": lines.last_line},
            ":rhythm": {"S": _compact(lines.rhythm.to_json())},
        }
        expression = "SET last_log_ms = :ms, last_log_line = :line, rhythm = :rhythm"
        if lines.progress is not None:
            values[":progress"] = {"S": _compact(lines.progress.to_json())}
            expression += ", progress = :progress"
        if previous is None:
            condition = "attribute_not_exists(last_log_ms)"
        else:
            condition = "last_log_ms = :previous"
            values[":previous"] = {"N": str(_ms(previous))}
        return self._update_watched(job_name, expression, condition, values)

    @needs("dynamodb:UpdateItem")
    def mute(self, job_name: str, alarm_name: str, until: datetime) -> bool:
        """Remember a muted stall alarm, to be re-armed when its mute window ends (False: not watched)."""
        values = {":until": {"S": until.isoformat()}, ":alarm": {"S": alarm_name}}
        return self._update_watched(job_name, "SET muted_until = :until, muted_alarm = :alarm", "", values)

    @needs("dynamodb:UpdateItem")
    def defer(self, job_name: str, newest_line: datetime) -> bool:
        """The silence since `newest_line` waits for the fixed threshold (stalls.py); False: not watched."""
        return self._update_watched(job_name, "SET deferred_ms = :ms", "", {":ms": {"N": str(_ms(newest_line))}})

    @needs("dynamodb:UpdateItem")
    def unmute(self, job_name: str) -> bool:
        return self._update_watched(job_name, "REMOVE muted_until, muted_alarm", "")

    def _update_watched(
        self, job_name: str, expression: str, condition: str, values: dict[str, Any] | None = None
    ) -> bool:
        """One UpdateItem of a watched job's entry, only if the entry exists (and `condition` holds)."""
        request: dict[str, Any] = {
            "TableName": self._table,
            "Key": self._scope.key(_WATCH, job_name),
            "UpdateExpression": expression,
            "ConditionExpression": "attribute_exists(pk)" + (f" AND ({condition})" if condition else ""),
        }
        if values:
            request["ExpressionAttributeValues"] = values
        return conditional_update(self._client, **request)

    @needs("dynamodb:PutItem")
    def record_stall(self, job_name: str, evidence: dict[str, Any], now: datetime) -> None:
        self._client.put_item(
            TableName=self._table,
            Item={
                **self._scope.key(f"job#{job_name}", "stall"),
                "evidence": {"S": json.dumps(evidence, default=str)},
                "stopped_at": {"S": now.isoformat()},
                TTL_ATTRIBUTE: {"N": str(int((now + RETENTION).timestamp()))},
            },
        )

    @needs("dynamodb:GetItem")
    def stall_record(self, job_name: str) -> dict[str, Any] | None:
        item = self._client.get_item(
            TableName=self._table, Key=self._scope.key(f"job#{job_name}", "stall"), ConsistentRead=True
        ).get("Item")
        return None if item is None else json.loads(item["evidence"]["S"])


def _compact(data: dict[str, Any]) -> str:
    return json.dumps(data, separators=(",", ":"))


def _json(attribute: dict[str, Any] | None) -> object:
    """A stored JSON string, read; None when it is missing or does not read."""
    try:
        return json.loads(attribute["S"]) if attribute and "S" in attribute else None
    except (ValueError, RecursionError):
        return None


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _thresholds(attribute: dict[str, Any] | None) -> StallThresholds:
    """The stored thresholds; a field this version does not know (written by a newer one) is left out."""
    stored = json.loads(attribute["S"]) if attribute and "S" in attribute else {}
    known = {f.name for f in fields(StallThresholds)}
    return StallThresholds(**{k: v for k, v in stored.items() if k in known})


def _from_ms(attribute: dict[str, Any] | None) -> datetime | None:
    return datetime.fromtimestamp(int(attribute["N"]) / 1000, tz=UTC) if attribute and "N" in attribute else None


def _time_or_null(value: datetime | None) -> dict[str, Any]:
    return {"NULL": True} if value is None else {"S": value.isoformat()}


def _time(attribute: dict[str, Any] | None) -> datetime | None:
    return datetime.fromisoformat(attribute["S"]) if attribute and "S" in attribute else None


def _watched(item: dict[str, Any]) -> WatchedJob:
    return WatchedJob(
        job_name=item["sk"]["S"],
        instance_type=item.get("instance_type", {}).get("S", ""),
        host_count=int(item.get("host_count", {}).get("N", "1")),
        thresholds=_thresholds(item.get("thresholds")),
        training_since=_time(item.get("training_since")),
        last_log_time=_from_ms(item.get("last_log_ms")),
        last_log_line=item.get("last_log_line", {}).get("S", ""),
        stopping_since=_time(item.get("stopping_since")),
        rhythm=LogRhythm.from_json(_json(item.get("rhythm"))),
        muted_until=_time(item.get("muted_until")),
        muted_alarm=item.get("muted_alarm", {}).get("S", ""),
        deferred_line=_from_ms(item.get("deferred_ms")),
        checkpoint_uri=item.get("checkpoint_uri", {}).get("S", ""),
        progress=ProgressState.from_json(_json(item.get("progress"))),
        progress_settings=ProgressSettings.from_json(_json(item.get("progress_settings"))),
    )
