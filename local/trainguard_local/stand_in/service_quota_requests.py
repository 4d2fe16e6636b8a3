"""One quota increase request of the simulated Service Quotas: its schedule of status changes and its answer.

A request is decided by a script: a final status and how long after its creation it comes. AWS approves
small increases at once and sends larger ones to Support, where they take hours or days
(https://docs.aws.amazon.com/servicequotas/latest/userguide/request-quota-increase.html). So a decision
that comes later than ``case_opens_after`` goes through a Support case: PENDING -> CASE_OPENED (with a
CaseId) at ``case_opens_after`` -> the final status at ``after``; an earlier one goes straight from
PENDING to the final status. CASE_CLOSED always has a case first.

SupportCaseAllowed=false: "If you set the flag to False, Amazon Web Services does not open a support case
and updates the request status to Not approved" (the parameter's documentation in botocore's model). A
request that would have needed a case becomes NOT_APPROVED at the time the case would have opened; one
decided before then is unaffected.
"""

from __future__ import annotations

import json
import secrets
import string
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from trainguard_local.stand_in.service_quotas_catalogue import SERVICE_CODE, SERVICE_NAME, UNIT, Quota

OPEN_STATUSES = frozenset({"PENDING", "CASE_OPENED"})
FINAL_STATUSES = frozenset({"APPROVED", "DENIED", "NOT_APPROVED", "CASE_CLOSED", "INVALID_REQUEST"})


@dataclass(frozen=True)
class ScriptedOutcome:
    """How AWS will answer the requests for one quota: ``status`` at ``after`` past each request's creation."""

    status: str
    after: timedelta

    def __post_init__(self) -> None:
        if self.status not in FINAL_STATUSES:
            raise ValueError(f"{self.status!r} is not a final status; expected one of {sorted(FINAL_STATUSES)}")
        if self.after < timedelta(0):
            raise ValueError("an outcome cannot come before the request")


@dataclass(frozen=True)
class StatusChange:
    at: datetime
    status: str


@dataclass
class QuotaIncreaseRequest:
    id: str
    quota: Quota
    desired_value: float
    created: datetime
    requester: str
    quota_arn: str
    support_case_allowed: bool
    status: str = "PENDING"
    case_id: str | None = None
    last_updated: datetime | None = None  # AWS's PENDING answers have Created only (aws-cli examples)
    scheduled: list[StatusChange] = field(default_factory=list)

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_STATUSES

    def schedule(self, outcome: ScriptedOutcome, *, case_opens_after: timedelta) -> None:
        """Plan the changes still to come, from the creation time (again, when the script changes)."""
        needs_case = outcome.after > case_opens_after or outcome.status == "CASE_CLOSED"
        decided_at = self.created + outcome.after
        if not needs_case:
            self.scheduled = [StatusChange(decided_at, outcome.status)]
            return
        case_at = self.created + min(case_opens_after, outcome.after)
        if not self.support_case_allowed:
            self.scheduled = [StatusChange(case_at, "NOT_APPROVED")]
        elif self.status == "CASE_OPENED":
            self.scheduled = [StatusChange(decided_at, outcome.status)]
        else:
            self.scheduled = [StatusChange(case_at, "CASE_OPENED"), StatusChange(decided_at, outcome.status)]

    def apply_due(self, now: datetime, *, settle: bool = False) -> list[str]:
        """Apply the changes due at ``now``, stamped with their scheduled time; with ``settle``, also the
        later ones, stamped ``now`` (as if AWS had decided early).

        Returns the statuses entered, in order. The caller applies an APPROVED to the quota.
        """
        entered: list[str] = []
        while self.scheduled and (settle or self.scheduled[0].at <= now):
            change = self.scheduled.pop(0)
            self.status, self.last_updated = change.status, min(change.at, now)
            if change.status == "CASE_OPENED":
                self.case_id = _new_case_id()
            entered.append(change.status)
        return entered

    def describe(self) -> dict[str, Any]:
        """The RequestedServiceQuotaChange structure, with the members AWS's examples show."""
        answer: dict[str, Any] = {
            "Id": self.id,
            "ServiceCode": SERVICE_CODE,
            "ServiceName": SERVICE_NAME,
            "QuotaCode": self.quota.code,
            "QuotaName": self.quota.name,
            "DesiredValue": self.desired_value,
            "Status": self.status,
            "Created": self.created,
            "Requester": self.requester,
            "QuotaArn": self.quota_arn,
            "GlobalQuota": False,
            "Unit": UNIT,
            "QuotaRequestedAtLevel": "ACCOUNT",
        }
        # No RequestType: "If this field is not present, the request was manually created by a user"
        # (botocore's model); its one value, AutomaticManagement, is for requests AWS makes itself.
        if self.case_id is not None:
            answer["CaseId"] = self.case_id
        if self.last_updated is not None:
            answer["LastUpdated"] = self.last_updated
        return answer


def new_request_id() -> str:
    """Shaped like AWS's: 32 hex digits and 8 letters or digits ("d187537d15254312a9609aa51bbf7624u7W49tPO")."""
    tail = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(8))
    return uuid.uuid4().hex + tail


def requester_json(account_id: str, caller_arn: str) -> str:
    # A JSON text, as in AWS's examples: {"accountId":"123456789012","callerArn":"arn:aws:iam::...:root"}
    return json.dumps({"accountId": account_id, "callerArn": caller_arn}, separators=(",", ":"))


def _new_case_id() -> str:
    # Support case numbers in AWS's examples have 10 digits ("6780195351"); newer ones seen have 15.
    return str(secrets.randbelow(9 * 10**9) + 10**9)
