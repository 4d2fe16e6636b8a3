"""DynamoDB: the quota requests trainguard follows and the launches waiting for them, in the ledger's table
(adapters/ledger.py holds its keys and its places).

IAM: each method's `needs`, granted on the ledger table.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import datetime
from typing import Any

from trainguard.adapters.ledger import OWN_RECORDS, RETENTION, TTL_ATTRIBUTE, LedgerScope
from trainguard.adapters.permissions import needs
from trainguard.domain.quotas import WaitingLaunch
from trainguard.workflows.ports import QuotaRequestState

_QUOTA_REQUESTS = "quota-requests"
_QUOTA_WAITS = "quota-waits"


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
