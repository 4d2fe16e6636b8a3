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
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from trainguard.adapters.permissions import needs
from trainguard.domain.origin import Location
from trainguard.domain.outcome import Outcome
from trainguard.domain.quotas import WaitingLaunch
from trainguard.workflows.ports import QuotaRequestState, StepInProgress, StepStart, StepState

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
_QUOTA_REQUESTS = "quota-requests"
_QUOTA_WAITS = "quota-waits"
_ORGANIZATION_BUDGET_KEY = "organization#budget#retries"


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

    @needs("dynamodb:UpdateItem")
    def take_retry_budget(self, now: datetime, limit: int) -> bool:
        """Count one relaunch against this hour's budget of the job's account, and in a hub against the
        organization's too; False when either is spent (a count taken from the account's is then given back)."""
        hour = now.strftime("%Y-%m-%dT%H")
        if not self._take_budget(item_key(self._scope.budget + _BUDGET_KEY, hour), now, limit):
            return False
        organization = self._scope.organization_budget
        try:
            if not organization or self._take_budget(item_key(_ORGANIZATION_BUDGET_KEY, hour), now, organization):
                return True
        except Exception:  # not counted against the organization: not against the account either
            self._give_back(hour)
            raise
        self._give_back(hour)
        return False

    def _give_back(self, hour: str) -> None:
        """Not atomic with the take: a relaunch of the same account at this moment may be refused for it, which
        errs on the side of fewer relaunches."""
        self._client.update_item(
            TableName=self._table,
            Key=item_key(self._scope.budget + _BUDGET_KEY, hour),
            UpdateExpression="ADD used :minus_one",
            ExpressionAttributeValues={":minus_one": {"N": "-1"}},
        )

    def _take_budget(self, key: dict[str, dict[str, str]], now: datetime, limit: int) -> bool:
        if limit <= 0:  # the condition below lets the hour's first count through: a budget of none is none
            return False
        return conditional_update(
            self._client,
            TableName=self._table,
            Key=key,
            UpdateExpression="ADD used :one SET expires_at = :expires",
            ConditionExpression="attribute_not_exists(used) OR used < :limit",
            ExpressionAttributeValues={
                ":one": {"N": "1"},
                ":limit": {"N": str(limit)},
                ":expires": {"N": str(int((now + timedelta(days=2)).timestamp()))},
            },
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


class QuotaLedger:
    """The quota requests trainguard follows and the launches waiting for them.

    Two small partitions per place, each read with one Query by the periodic check: `quota-requests`
    (one item per quota name) and `quota-waits` (one item per waiting launch, by job name).
    """

    def __init__(self, client: Any, table_name: str, scope: LedgerScope = OWN_RECORDS) -> None:
        self._client = client
        self._table = table_name
        self._scope = scope

    @needs("dynamodb:PutItem")
    def save_request(self, state: QuotaRequestState, now: datetime) -> None:
        self._client.put_item(
            TableName=self._table,
            Item={
                **self._scope.key(_QUOTA_REQUESTS, state.quota_name),
                "request": {"S": json.dumps(asdict(state))},
                "status": {"S": state.status},
                "updated_at": {"S": now.isoformat()},
                TTL_ATTRIBUTE: {"N": str(int((now + RETENTION).timestamp()))},
            },
        )

    @needs("dynamodb:Query")
    def requests(self) -> list[QuotaRequestState]:
        return [QuotaRequestState(**json.loads(item["request"]["S"])) for item in self._query(_QUOTA_REQUESTS)]

    @needs("dynamodb:PutItem")
    def save_waiting(self, waiting: WaitingLaunch) -> None:
        data = asdict(waiting)
        data["since"], data["give_up_at"] = waiting.since.isoformat(), waiting.give_up_at.isoformat()
        self._client.put_item(
            TableName=self._table,
            Item={
                **self._scope.key(_QUOTA_WAITS, waiting.job_name),
                "waiting": {"S": json.dumps(data)},
                TTL_ATTRIBUTE: {"N": str(int((waiting.give_up_at + RETENTION).timestamp()))},
            },
        )

    @needs("dynamodb:Query")
    def waiting(self) -> list[WaitingLaunch]:
        found = []
        for item in self._query(_QUOTA_WAITS):
            data = json.loads(item["waiting"]["S"])
            data["since"] = datetime.fromisoformat(data["since"])
            data["give_up_at"] = datetime.fromisoformat(data["give_up_at"])
            found.append(WaitingLaunch(**data))
        return found

    @needs("dynamodb:DeleteItem")
    def remove_waiting(self, job_name: str) -> None:
        self._client.delete_item(TableName=self._table, Key=self._scope.key(_QUOTA_WAITS, job_name))

    def _query(self, partition: str) -> list[dict[str, Any]]:
        pages = self._client.get_paginator("query").paginate(
            TableName=self._table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": self._scope.records + partition}},
            ConsistentRead=True,
        )
        return [item for page in pages for item in page.get("Items", [])]
