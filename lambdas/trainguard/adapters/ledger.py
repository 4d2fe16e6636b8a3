"""DynamoDB: the ledger of everything trainguard decided and did.

Every side effect is guarded by a conditional write keyed on what makes it unique: the job
whose end is handled (`job#<name>` / `end`), the failed job whose delayed relaunch fires
(`job#<name>` / `relaunch`). The first delivery takes a short lease and acts; duplicates see
`done` and stop, or see a live lease and raise `StepInProgress` so Lambda delivers them again
later. A lease that outlives its holder (a crash) can be taken over; the deterministic job
name then keeps CreateTrainingJob from running twice.

In an organization's hub (docs/organization.md) one ledger holds the records of every enrolled account and
region: each adapter is made for one place (`LedgerScope`), whose records' partition keys start with
"<account>#<region>#", so that two accounts' jobs of the same name never share a record. At home (the hub's own
account and region, and every single-account stack) the prefix is empty: the keys are those it always had.

IAM: each method's `needs`, granted on the ledger table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from botocore.exceptions import ClientError

from trainguard.adapters.permissions import needs
from trainguard.domain.origin import Location
from trainguard.domain.outcome import Outcome
from trainguard.workflows.ports import StepInProgress, StepStart, StepState

# The table's keys: the CDK construct (infra/ledger.py) and the local stand-in build it from these.
PARTITION_KEY = "pk"
SORT_KEY = "sk"
TTL_ATTRIBUTE = "expires_at"
# Longer than the functions' 60 s timeout (a live holder keeps its lease), and shorter than the 3 minutes
# after which Lambda makes its last attempt at a failed asynchronous invocation (retries 1 min, then 2 min
# later: https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html). With 5 minutes, a
# process killed after its side effect, or a lease write whose answer timed out, kept both retries out and
# sent the event to the dead-letter queue (found by the chaos suite).
LEASE = timedelta(seconds=90)
RETENTION = timedelta(days=400)
_BUDGET_KEY = "budget#retries"
_ORGANIZATION_BUDGET_KEY = "organization#budget#retries"


class _Unit(Enum):
    TAKEN = "taken"  # counted now
    HELD = "held"  # this launch holds a unit already
    SPENT = "spent"


def budget_hours(now: datetime) -> tuple[str, str]:
    """The budget's buckets: this clock hour's and the previous one's."""
    return now.strftime("%Y-%m-%dT%H"), (now - timedelta(hours=1)).strftime("%Y-%m-%dT%H")


@dataclass(frozen=True)
class LedgerScope:
    """The place whose records an adapter reads and writes: the prefix of their partition keys, the prefix of
    the retry budget's (one budget per account), and the hub's organization-wide budget of relaunches an hour
    (0: none, a single-account stack)."""

    records: str = ""
    budget: str = ""
    organization_budget: int = 0

    def key(self, pk: str, sk: str) -> dict[str, dict[str, str]]:
        return item_key(self.records + pk, sk)


OWN_RECORDS = LedgerScope()  # a single-account stack's, and a hub's for its own account and region


def ledger_scope(spoke: Location | None, hub_account: str = "", organization_budget: int = 0) -> LedgerScope:
    """The records of one place: a spoke's under its account and region; None is the function's own. In a hub
    (`hub_account` set) every account's budget is under its account, its own as well, so that an account with
    jobs in the hub's region and in another counts both against one budget; and every relaunch counts against
    the organization's budget too."""
    if spoke is None:
        return LedgerScope("", f"{hub_account}#" if hub_account else "", organization_budget)
    return LedgerScope(f"{spoke.account}#{spoke.region}#", f"{spoke.account}#", organization_budget)


class Ledger:
    def __init__(self, client: Any, table_name: str, scope: LedgerScope = OWN_RECORDS) -> None:
        self._client = client
        self._table = table_name
        self._scope = scope

    @needs("dynamodb:PutItem", "dynamodb:GetItem")
    def begin_step(self, job_name: str, step: str, now: datetime) -> StepStart:
        key = self._scope.key(f"job#{job_name}", step)
        try:
            self._client.put_item(
                TableName=self._table,
                Item={
                    **key,
                    "status": {"S": "in_progress"},
                    "lease_until": {"N": str(int((now + LEASE).timestamp()))},
                    "started_at": {"S": now.isoformat()},
                    "expires_at": {"N": str(int((now + RETENTION).timestamp()))},
                },
                ConditionExpression="attribute_not_exists(pk) OR (#s = :busy AND lease_until < :now)",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={
                    ":busy": {"S": "in_progress"},
                    ":now": {"N": str(int(now.timestamp()))},
                },
            )
            return StepStart(StepState.FIRST, {})
        except ClientError as err:
            if err.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
        item = self._client.get_item(TableName=self._table, Key=key, ConsistentRead=True).get("Item", {})
        if item.get("status", {}).get("S") == "done":
            return StepStart(StepState.DONE, json.loads(item.get("outcome", {}).get("S", "{}")))
        raise StepInProgress(f"{job_name}/{step} is being handled by another invocation")

    @needs("dynamodb:GetItem")
    def step_record(self, job_name: str, step: str) -> dict[str, Any] | None:
        """What a finished step recorded (None while it is in progress, or never begun): read, never leased."""
        key = self._scope.key(f"job#{job_name}", step)
        item = self._client.get_item(TableName=self._table, Key=key, ConsistentRead=True).get("Item", {})
        if item.get("status", {}).get("S") != "done":
            return None
        return dict(json.loads(item.get("outcome", {}).get("S", "{}")))

    @needs("dynamodb:UpdateItem")
    def finish_step(self, job_name: str, step: str, outcome: Outcome, now: datetime) -> None:
        self._client.update_item(
            TableName=self._table,
            Key=self._scope.key(f"job#{job_name}", step),
            UpdateExpression=(
                "SET #s = :done, outcome = :outcome, kind = :kind, finished_at = :now, "
                "expires_at = if_not_exists(expires_at, :expires)"
            ),
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={
                ":done": {"S": "done"},
                ":outcome": {"S": json.dumps(outcome.as_dict(), default=str)},
                ":kind": {"S": outcome.kind.value},
                ":now": {"S": now.isoformat()},
                ":expires": {"N": str(int((now + RETENTION).timestamp()))},
            },
        )

    @needs("dynamodb:DeleteItem")
    def abandon_step(self, job_name: str, step: str) -> None:
        """Give the lease back after a failure, so a redelivery does not wait for it to expire."""
        self._client.delete_item(
            TableName=self._table,
            Key=self._scope.key(f"job#{job_name}", step),
            ConditionExpression="#s = :busy",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":busy": {"S": "in_progress"}},
        )

    @needs("dynamodb:GetItem", "dynamodb:UpdateItem")
    def take_launch_budget(self, launch: str, now: datetime, limit: int) -> bool:
        """Count the launch `launch` (the name of the job it creates) against its account's budget of `limit` an
        hour, and in a hub against the organization's too; False when either is spent (a unit taken from the
        account's is then given back). True without a second unit when this launch already holds one (a
        redelivery, or a retry of the same launch after a refusal).

        The hour slides: a unit is taken in the current clock hour only while the current and the previous hour's
        counts together stay below the limit (the previous one read with a consistent read, then a conditional
        ADD on the current one). Any 60 minutes span at most two clock hours, so no 60 minutes hold more than
        `limit` units, where a count per clock hour allowed 2 x `limit` around the turn of an hour. It is
        stricter than a true sliding window just after a busy hour: units taken at 10:05 still count at 11:55.
        Two invocations whose clocks straddle the turn of the hour by milliseconds may each miss the other's
        unit; a launch follows its unit within the same invocation, seconds later."""
        hour, previous = budget_hours(now)
        account = self._scope.budget + _BUDGET_KEY
        taken = self._take_unit(account, self._scope.records + launch, hour, previous, now, limit)
        if taken is not _Unit.TAKEN:
            return taken is _Unit.HELD
        organization = self._scope.organization_budget
        try:
            if not organization or self._take_count(_ORGANIZATION_BUDGET_KEY, hour, previous, now, organization):
                return True
        except Exception:  # not counted against the organization: not against the account either
            self._release_unit(launch, now)
            raise
        self._release_unit(launch, now)
        return False

    @needs("dynamodb:UpdateItem")
    def give_back_launch_budget(self, launch: str, now: datetime) -> None:
        """The launch did not happen: its unit (taken this hour or the previous one) is given back, with the
        organization's; nothing when it holds none (a second give-back, or a unit never taken). Not atomic with
        the take: a launch of the same account at this moment may be refused for it, which errs on the side of
        fewer launches."""
        hour = self._release_unit(launch, now)
        if hour and self._scope.organization_budget:
            self._client.update_item(
                TableName=self._table,
                Key=item_key(_ORGANIZATION_BUDGET_KEY, hour),
                UpdateExpression="ADD used :minus_one",
                ExpressionAttributeValues={":minus_one": {"N": "-1"}},
            )

    def _release_unit(self, launch: str, now: datetime) -> str:
        """The account's unit of the launch given back: the hour it was in ("" when it held none)."""
        name = self._scope.records + launch
        for hour in budget_hours(now):
            if conditional_update(
                self._client,
                TableName=self._table,
                Key=item_key(self._scope.budget + _BUDGET_KEY, hour),
                UpdateExpression="ADD used :minus_one DELETE launches :launches",
                ConditionExpression="contains(launches, :launch)",
                ExpressionAttributeValues={
                    ":minus_one": {"N": "-1"},
                    ":launches": {"SS": [name]},
                    ":launch": {"S": name},
                },
            ):
                return hour
        return ""

    def _take_unit(self, pk: str, launch: str, hour: str, previous: str, now: datetime, limit: int) -> _Unit:
        """One unit of the account's budget, named for the launch that holds it (a string set per hour: at most
        1,000 names of at most 63 characters and a place prefix, well under DynamoDB's 400 KB an item)."""
        before = self._bucket(pk, previous)
        if launch in before.get("launches", {}).get("SS", []):
            return _Unit.HELD
        if self._count_one(pk, hour, limit - int(before.get("used", {}).get("N", "0")), now, launch):
            return _Unit.TAKEN
        held = launch in self._bucket(pk, hour).get("launches", {}).get("SS", [])
        return _Unit.HELD if held else _Unit.SPENT

    def _take_count(self, pk: str, hour: str, previous: str, now: datetime, limit: int) -> bool:
        """One unit of the organization's budget, counted only (its launches are named in their accounts')."""
        room = limit - int(self._bucket(pk, previous).get("used", {}).get("N", "0"))
        return self._count_one(pk, hour, room, now)

    def _count_one(self, pk: str, hour: str, room: int, now: datetime, launch: str = "") -> bool:
        """Add one to the hour's count while it stays under `room`; with `launch`, name the launch in the hour's
        set too, unless it is named there already. False when there is no room (or the launch is named)."""
        update, condition = "ADD used :one SET expires_at = :expires", "attribute_not_exists(used) OR used < :room"
        values: dict[str, Any] = {":one": {"N": "1"}, ":room": {"N": str(room)}}
        values[":expires"] = {"N": str(int((now + timedelta(days=2)).timestamp()))}
        if launch:
            update = "ADD used :one, launches :launches SET expires_at = :expires"
            condition = f"({condition}) AND NOT contains(launches, :launch)"
            values |= {":launches": {"SS": [launch]}, ":launch": {"S": launch}}
        return room > 0 and conditional_update(
            self._client,
            TableName=self._table,
            Key=item_key(pk, hour),
            UpdateExpression=update,
            ConditionExpression=condition,
            ExpressionAttributeValues=values,
        )

    def _bucket(self, pk: str, hour: str) -> dict[str, Any]:
        return dict(
            self._client.get_item(TableName=self._table, Key=item_key(pk, hour), ConsistentRead=True).get("Item", {})
        )

    @needs("dynamodb:PutItem")
    def record_lineage(self, root_job: str, attempt: int, job_name: str, retry_of: str, now: datetime) -> None:
        """Idempotent: a redelivery that finds the relaunch already created writes it again, and the first
        record (its `created_at`) stays."""
        try:
            self._client.put_item(
                TableName=self._table,
                Item={
                    **self._scope.key(f"lineage#{root_job}", f"attempt#{attempt:03d}#{job_name}"),
                    "job_name": {"S": job_name},
                    "retry_of": {"S": retry_of},
                    "attempt": {"N": str(attempt)},
                    "created_at": {"S": now.isoformat()},
                    "expires_at": {"N": str(int((now + RETENTION).timestamp()))},
                },
                ConditionExpression="attribute_not_exists(pk)",
            )
        except ClientError as err:
            if err.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise


def create_table_request(table_name: str) -> dict[str, Any]:
    """CreateTable parameters for a ledger like the stack's (for local stand-ins and tests)."""
    return {
        "TableName": table_name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [
            {"AttributeName": PARTITION_KEY, "AttributeType": "S"},
            {"AttributeName": SORT_KEY, "AttributeType": "S"},
        ],
        "KeySchema": [
            {"AttributeName": PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": SORT_KEY, "KeyType": "RANGE"},
        ],
    }


def conditional_update(client: Any, **request: Any) -> bool:
    """One UpdateItem under its ConditionExpression; False when the condition does not hold."""
    try:
        client.update_item(**request)
    except ClientError as err:
        if err.response["Error"]["Code"] == "ConditionalCheckFailedException":
            return False
        raise
    return True


def item_key(pk: str, sk: str) -> dict[str, dict[str, str]]:
    return {PARTITION_KEY: {"S": pk}, SORT_KEY: {"S": sk}}
