"""DynamoDB, read only: what the operator commands (`trainguard status`, `trainguard history`) show.

Queries on the known partitions (`stall-watch`, `quota-requests`, `quota-waits`, `lineage#<root>`,
`job#<name>`), and BatchGetItem for given steps of many jobs (the stall steps of the watched jobs). One
thing has no partition of its own: a relaunch that waits in EventBridge Scheduler is only the `end` step
of the job that failed (kind `relaunch-scheduled`), so `pending_relaunches` finds those with a Scan,
filtered and bounded to `scan_pages` pages of 1 MB, and says when it stopped before the table's end.

In an organization's hub, one place's records at a time (adapters/ledger.py, LedgerScope): the hub's own
account and region by default, or a spoke's.

IAM (for the person who runs the commands): dynamodb:Query, dynamodb:BatchGetItem, dynamodb:Scan on
the ledger table. Nothing here writes.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from trainguard.adapters.ledger import OWN_RECORDS, PARTITION_KEY, SORT_KEY, LedgerScope
from trainguard.adapters.quota_ledger import QuotaLedger
from trainguard.adapters.stall_ledger import StallLedger
from trainguard.domain.quotas import WaitingLaunch
from trainguard.domain.watched_job import WatchedJob
from trainguard.workflows.ports import QuotaRequestState

IAM_ACTIONS = ("dynamodb:Query", "dynamodb:BatchGetItem", "dynamodb:Scan")
STALL_RECORD = "stall"  # `job#<name>` / `stall`: the evidence of a stop (stall_ledger.py), not a step
_BATCH_KEYS = 100  # BatchGetItem's limit per call
_BATCH_ROUNDS = 8  # rounds of UnprocessedKeys before giving up (throttling)
# The relaunch schedule's RetryPolicy.MaximumEventAgeInSeconds (adapters/scheduler.py): past its time plus
# this, a schedule has fired or given up, and one that fired on a relaunch no longer wanted records nothing.
SCHEDULE_RETRY_WINDOW = timedelta(hours=1)
_VERDICTS = ("stall-stop", "stuck-stopping")


@dataclass(frozen=True)
class RecordedStep:
    """One `job#<name>` step item: what trainguard decided for that job at that step, and when."""

    job_name: str
    step: str  # end, relaunch, stall-stop, stuck-stopping, quota-launch, blocked-launch#<event id>
    status: str  # done, or in_progress while an invocation holds the lease
    outcome: dict[str, Any]  # the Outcome as recorded ({} while in progress)
    started_at: datetime | None
    finished_at: datetime | None

    @property
    def kind(self) -> str:
        return str(self.outcome.get("kind", ""))

    @property
    def time(self) -> datetime | None:
        return self.finished_at or self.started_at

    @property
    def done(self) -> bool:
        return self.status == "done"


@dataclass(frozen=True)
class JobRecord:
    """Everything the ledger holds under `job#<name>`."""

    job_name: str
    steps: list[RecordedStep] = field(default_factory=list)
    stall: dict[str, Any] | None = None  # the evidence of a stall stop
    stall_stopped_at: datetime | None = None

    def step(self, name: str) -> RecordedStep | None:
        return next((s for s in self.steps if s.step == name), None)


@dataclass(frozen=True)
class LineageAttempt:
    attempt: int
    job_name: str
    retry_of: str
    created_at: datetime | None


@dataclass(frozen=True)
class QuotaRequestRecord:
    request_id: str
    quota_code: str
    quota_name: str
    desired_value: float
    status: str
    case_id: str
    open: bool
    updated_at: datetime | None


@dataclass(frozen=True)
class OpenStall:
    """A stall verdict on a watched job that has not ended yet; once its end is recorded, it is history."""

    job_name: str
    kind: str  # stall-stopped, stall-found (a dry run: told, not stopped), stuck-stopping
    decision: str
    reason: str
    decided_at: datetime | None
    stopped_at: datetime | None  # when trainguard stopped it (None for a dry run)


@dataclass(frozen=True)
class PendingRelaunch:
    job_name: str  # the job that failed, or the user's launch that a quota refused
    new_job_name: str
    waits_for: str  # schedule (a capacity backoff in EventBridge Scheduler) or quota
    origin: str  # relaunch (trainguard's retry) or user-launch
    since: datetime | None
    launch_at: datetime | None  # schedule: when it fires
    give_up_at: datetime | None  # quota: when the wait expires
    quota_name: str | None
    reason: str


class LedgerReader:
    def __init__(self, client: Any, table_name: str, *, scan_pages: int = 20, scope: LedgerScope = OWN_RECORDS) -> None:
        self._client = client
        self._table = table_name
        self._scan_pages = scan_pages
        self._scope = scope
        self._jobs = scope.records + "job#"

    @property
    def table_name(self) -> str:
        return self._table

    def watched(self) -> list[WatchedJob]:
        return StallLedger(self._client, self._table, self._scope).watched()

    def waiting(self) -> list[WaitingLaunch]:
        return QuotaLedger(self._client, self._table, self._scope).waiting()

    def quota_requests(self) -> list[QuotaRequestRecord]:
        records = []
        for item in self._query("quota-requests"):
            state = QuotaRequestState(**json.loads(item["request"]["S"]))
            fields = (state.request_id, state.quota_code, state.quota_name, state.desired_value, state.status)
            records.append(QuotaRequestRecord(*fields, state.case_id, state.is_open, _time(item.get("updated_at"))))
        return sorted(records, key=lambda r: r.quota_name)

    def lineage(self, root_job: str) -> list[LineageAttempt]:
        """The relaunches of a lineage, by attempt (the root itself is not in it)."""
        attempts = [
            LineageAttempt(
                attempt=int(item.get("attempt", {}).get("N", "0")),
                job_name=item.get("job_name", {}).get("S", ""),
                retry_of=item.get("retry_of", {}).get("S", ""),
                created_at=_time(item.get("created_at")),
            )
            for item in self._query(f"lineage#{root_job}")
        ]
        return sorted(attempts, key=lambda a: (a.attempt, a.job_name))

    def job(self, job_name: str) -> JobRecord:
        return _job_record(job_name, self._query(f"job#{job_name}"))

    def jobs(self, job_names: list[str], steps: tuple[str, ...]) -> dict[str, JobRecord]:
        """The given steps (and `stall` records) of many jobs, by BatchGetItem: one Query per job avoided."""
        keys = [self._scope.key(f"job#{name}", step) for name in dict.fromkeys(job_names) for step in steps]
        found: dict[str, list[dict[str, Any]]] = {name: [] for name in job_names}
        for item in self._batch_get(keys):
            found.setdefault(item[PARTITION_KEY]["S"].removeprefix(self._jobs), []).append(item)
        return {name: _job_record(name, items) for name, items in found.items()}

    def recorded_root(self, job_name: str) -> str | None:
        """The lineage root of a job SageMaker no longer has: from its recorded outcomes (a relaunch's names
        its root), else `<root>` of a name `<root>-retry<n>` whose lineage lists the job."""
        for step in self.job(job_name).steps:
            root = (step.outcome.get("details") or {}).get("root_job")
            if root:
                return str(root)
        named = re.fullmatch(r"(.+)-retry[0-9]+", job_name)
        if named and any(a.job_name == job_name for a in self.lineage(named.group(1))):
            return named.group(1)
        return None

    def open_stalls(self, job_names: list[str]) -> list[OpenStall]:
        stalls = []
        for record in self.jobs(job_names, (*_VERDICTS, "end", STALL_RECORD)).values():
            end, verdicts = record.step("end"), [s for s in record.steps if s.step in _VERDICTS and s.done]
            if verdicts and not (end and end.done):
                newest = max(verdicts, key=lambda s: _sortable(s.time))
                decision, reason = str(newest.outcome.get("decision", "")), str(newest.outcome.get("reason", ""))
                stalls.append(
                    OpenStall(record.job_name, newest.kind, decision, reason, newest.time, record.stall_stopped_at)
                )
        return sorted(stalls, key=lambda s: s.job_name)

    def pending_relaunches(self, now: datetime) -> tuple[list[PendingRelaunch], bool]:
        """Relaunches that wait for their schedule (an `end` of kind relaunch-scheduled whose `relaunch` step
        is not done, within SCHEDULE_RETRY_WINDOW of its time) or for a quota (`quota-waits`); and whether the
        bounded Scan was cut short."""
        scheduled, truncated = self._scheduled_ends()
        fired = self.jobs([end.job_name for end in scheduled], ("relaunch",))
        pending = []
        for end in scheduled:
            relaunch, at = fired[end.job_name].step("relaunch"), _launch_at(end)
            if (relaunch and relaunch.done) or (at and at + SCHEDULE_RETRY_WINDOW < now):
                continue
            new, reason = str(end.outcome.get("new_job_name", "")), str(end.outcome.get("reason", ""))
            pending.append(PendingRelaunch(end.job_name, new, "schedule", "relaunch", end.time, at, None, None, reason))
        for wait in self.waiting():
            why = f"waits for the quota '{wait.quota_name}' to be raised"
            quota = (wait.since, None, wait.give_up_at, wait.quota_name, why)
            pending.append(PendingRelaunch(wait.blocked_job, wait.job_name, "quota", wait.origin, *quota))
        return sorted(pending, key=lambda p: (_sortable(p.since), p.job_name)), truncated

    def _scheduled_ends(self) -> tuple[list[RecordedStep], bool]:
        """The `end` steps of kind relaunch-scheduled (any age), and whether the bounded Scan was cut short."""
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            # This place's jobs only: in a hub, every place's records share the table.
            "FilterExpression": "#sk = :end AND #kind = :scheduled AND begins_with(#pk, :jobs)",
            "ExpressionAttributeNames": {"#sk": SORT_KEY, "#kind": "kind", "#pk": PARTITION_KEY},
            "ExpressionAttributeValues": {
                ":end": {"S": "end"},
                ":scheduled": {"S": "relaunch-scheduled"},
                ":jobs": {"S": self._jobs},
            },
        }
        items: list[dict[str, Any]] = []
        for _ in range(self._scan_pages):
            page = self._client.scan(**kwargs)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return [self._step(item) for item in items], False
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return [self._step(item) for item in items], True

    def _step(self, item: dict[str, Any]) -> RecordedStep:
        return _step(item, item[PARTITION_KEY]["S"].removeprefix(self._jobs))

    def _query(self, partition: str) -> list[dict[str, Any]]:
        pages = self._client.get_paginator("query").paginate(
            TableName=self._table,
            KeyConditionExpression="#pk = :pk",
            ExpressionAttributeNames={"#pk": PARTITION_KEY},
            ExpressionAttributeValues={":pk": {"S": self._scope.records + partition}},
        )
        return [item for page in pages for item in page.get("Items", [])]

    def _batch_get(self, keys: list[dict[str, Any]]) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for start in range(0, len(keys), _BATCH_KEYS):
            request: dict[str, Any] = {self._table: {"Keys": keys[start : start + _BATCH_KEYS]}}
            for round_ in range(_BATCH_ROUNDS):
                page = self._client.batch_get_item(RequestItems=request)
                items.extend(page.get("Responses", {}).get(self._table, []))
                request = page.get("UnprocessedKeys") or {}
                if not request:
                    break
                time.sleep(min(0.05 * 2**round_, 2.0))  # throttled: back off, then ask for the rest
            else:  # still throttled after the rounds: the AWS error it is, one line from the command
                error = {"Code": "ProvisionedThroughputExceededException", "Message": "keys left unprocessed"}
                raise ClientError({"Error": error}, "BatchGetItem")
        return items


def _job_record(job_name: str, items: list[dict[str, Any]]) -> JobRecord:
    stall = next((item for item in items if item[SORT_KEY]["S"] == STALL_RECORD), None)
    return JobRecord(
        job_name=job_name,
        steps=[_step(item, job_name) for item in items if item[SORT_KEY]["S"] != STALL_RECORD],
        stall=None if stall is None else json.loads(stall.get("evidence", {}).get("S", "{}")),
        stall_stopped_at=None if stall is None else _time(stall.get("stopped_at")),
    )


def _step(item: dict[str, Any], job_name: str) -> RecordedStep:
    return RecordedStep(
        job_name=job_name,
        step=item[SORT_KEY]["S"],
        status=item.get("status", {}).get("S", ""),
        outcome=json.loads(item.get("outcome", {}).get("S", "{}")),
        started_at=_time(item.get("started_at")),
        finished_at=_time(item.get("finished_at")),
    )


def _launch_at(end: RecordedStep) -> datetime | None:
    text = str((end.outcome.get("details") or {}).get("launch_at", ""))  # "%Y-%m-%d %H:%M UTC" (relaunch.py)
    try:
        return datetime.strptime(text, "%Y-%m-%d %H:%M UTC").replace(tzinfo=UTC)
    except ValueError:
        return None


def _sortable(at: datetime | None) -> datetime:
    return at or datetime.min.replace(tzinfo=UTC)


def _time(attribute: dict[str, Any] | None) -> datetime | None:
    if not attribute or "S" not in attribute:
        return None
    try:
        return datetime.fromisoformat(attribute["S"])
    except ValueError:
        return None
