"""A simulated Service Quotas for SageMaker, for what moto lacks (it has no Service Quotas for "sagemaker").

``SimulatedServiceQuotas`` keeps the quotas (service_quotas_catalogue.py) and the increase requests
(service_quota_requests.py) in memory. Time comes from the injected ``clock``: no threads, no sleeps. The
requests move on lazily: every API call first applies what is due at ``clock()``; ``advance()`` and
``settle_all()`` do it from a test. How AWS answers a quota's requests is scripted with ``outcomes=`` or
``decide()``; by default it approves after ``default_outcome``'s delay, through a Support case.
``ServiceQuotasServer`` serves it to a boto3 ``service-quotas`` client.

Real error texts, with their sources (the others are marked "guessed"):
  - NoSuchResourceException "The request failed because the specified service does not exist."
    (aws/aws-cli#4569); with an empty message for an unknown quota code (aws/aws-cli#6629);
  - ResourceAlreadyExistsException "Only one open service quota increase request is allowed per quota."
    (hashicorp/terraform-provider-aws#19657);
  - IllegalArgumentException "You must provide a quota value greater than the current quota value"
    (cloud-custodian/cloud-custodian#8939).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from trainguard_local.stand_in.json_api import ApiError, page_of
from trainguard_local.stand_in.service_quota_requests import (
    QuotaIncreaseRequest,
    ScriptedOutcome,
    new_request_id,
    requester_json,
)
from trainguard_local.stand_in.service_quotas_catalogue import (
    DEFAULT_INSTANCE_TYPES,
    SERVICE_CODE,
    SERVICE_QUOTAS_API,
    Quota,
    build_catalogue,
    quota_arn,
)

Clock = Callable[[], datetime]

# "defaults to a value appropriate to the operation" (the API reference): 100, the model's maximum, guessed.
LIST_DEFAULT_MAX_RESULTS = 100

NO_SUCH_SERVICE = "The request failed because the specified service does not exist."  # aws/aws-cli#4569
NO_SUCH_QUOTA = ""  # aws/aws-cli#6629: GetServiceQuota on an unknown code answered with no message
NO_CONTEXT_VALUE = (  # aws/aws-cli#8584 (GetServiceQuota with a ContextId)
    "The request failed because applied value for the specified context Id do not exist."
)
ONE_OPEN_REQUEST = "Only one open service quota increase request is allowed per quota."
NOT_AN_INCREASE = "You must provide a quota value greater than the current quota value"
BAD_PAGINATION_TOKEN = "Invalid pagination token"  # guessed
NO_SUCH_REQUEST = ""  # guessed, as for an unknown quota code


def _utc_now() -> datetime:
    return datetime.now(UTC)


class SimulatedServiceQuotas:
    def __init__(
        self,
        *,
        clock: Clock = _utc_now,
        instance_types: Iterable[str] = DEFAULT_INSTANCE_TYPES,
        values: Mapping[str, float] | None = None,
        outcomes: Mapping[str, tuple[str, timedelta]] | None = None,
        default_outcome: tuple[str, timedelta] = ("APPROVED", timedelta(hours=4)),
        case_opens_after: timedelta = timedelta(minutes=10),
        account_id: str = "123456789012",
        region: str = "us-east-1",
        caller_arn: str | None = None,
    ) -> None:
        self._clock = clock
        self._quotas = build_catalogue(instance_types, values or {})
        self._codes_by_name = {quota.name: code for code, quota in self._quotas.items()}
        self._default_outcome = ScriptedOutcome(*default_outcome)
        self._outcomes: dict[str, ScriptedOutcome] = {}
        self._case_opens_after = case_opens_after
        self.account_id = account_id
        self.region = region
        self._requester = requester_json(account_id, caller_arn or f"arn:aws:iam::{account_id}:root")
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._requests: list[QuotaIncreaseRequest] = []
        self._lock = threading.Lock()
        for name, (status, after) in (outcomes or {}).items():
            self.decide(name, status, after=after)

    # ---- the API, as the HTTP server calls it -------------------------------------------------

    def handle(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        """Answer one API call, or raise ``ApiError``. Every call is logged first, valid or not."""
        with self._lock:
            self.calls.append((operation, copy.deepcopy(params)))
        answer = SERVICE_QUOTAS_API.answer_of(self, operation, params)
        with self._lock:
            self._apply_due(settle=False)
            return answer(params)

    def _list_service_quotas(self, params: dict[str, Any]) -> dict[str, Any]:
        self._check_service(params["ServiceCode"])
        # Only account-level quotas here. With QuotaCode, the list holds that quota or nothing (guessed).
        listed = [] if params.get("QuotaAppliedAtLevel") == "RESOURCE" else self._sorted_quotas()
        if "QuotaCode" in params:
            listed = [quota for quota in listed if quota.code == params["QuotaCode"]]
        page, next_token = self._page([self._describe(quota) for quota in listed], params)
        return {"Quotas": page, **({"NextToken": next_token} if next_token else {})}

    def _get_service_quota(self, params: dict[str, Any]) -> dict[str, Any]:
        quota = self._quota(params["ServiceCode"], params["QuotaCode"])
        if "ContextId" in params:
            raise ApiError("NoSuchResourceException", NO_CONTEXT_VALUE)
        return {"Quota": self._describe(quota)}

    def _request_service_quota_increase(self, params: dict[str, Any]) -> dict[str, Any]:
        quota = self._quota(params["ServiceCode"], params["QuotaCode"])
        if "ContextId" in params:
            # SageMaker's quotas are account-level; what AWS answers to a ContextId for one is guessed.
            raise ApiError("IllegalArgumentException", f"Quota {quota.code} is not a resource-level quota.")
        if any(request.is_open for request in self._requests_for(quota)):
            raise ApiError("ResourceAlreadyExistsException", ONE_OPEN_REQUEST)
        desired = float(params["DesiredValue"])
        if desired <= quota.value:
            raise ApiError("IllegalArgumentException", NOT_AN_INCREASE)
        request = QuotaIncreaseRequest(
            id=new_request_id(),
            quota=quota,
            desired_value=desired,
            created=self._clock(),
            requester=self._requester,
            quota_arn=quota_arn(quota.code, region=self.region, account_id=self.account_id),
            support_case_allowed=params.get("SupportCaseAllowed", True),
        )
        request.schedule(self._outcome_for(quota.name), case_opens_after=self._case_opens_after)
        self._requests.append(request)
        self._apply_due(settle=False)  # an outcome due at once (after=0) shows in this answer
        return {"RequestedQuota": request.describe()}

    def _list_requested_service_quota_change_history_by_quota(self, params: dict[str, Any]) -> dict[str, Any]:
        quota = self._quota(params["ServiceCode"], params["QuotaCode"])
        return self._history(self._requests_for(quota), params)

    def _list_requested_service_quota_change_history(self, params: dict[str, Any]) -> dict[str, Any]:
        if "ServiceCode" in params:
            self._check_service(params["ServiceCode"])
        return self._history(self._requests, params)

    def _get_requested_service_quota_change(self, params: dict[str, Any]) -> dict[str, Any]:
        for request in self._requests:
            if request.id == params["RequestId"]:
                return {"RequestedQuota": request.describe()}
        raise ApiError("NoSuchResourceException", NO_SUCH_REQUEST)

    # ---- drivers: what AWS decides, and when (Python only, not over HTTP) -------------------------

    def decide(self, quota_name: str, outcome: str, *, after: timedelta) -> None:
        """From now on, answer ``quota_name``'s requests with ``outcome`` ``after`` their creation.

        A request already open for the quota is planned again from its creation time.
        """
        scripted = ScriptedOutcome(outcome, after)
        with self._lock:
            quota = self._quotas[self.quota_code(quota_name)]
            self._outcomes[quota_name] = scripted
            for request in self._requests_for(quota):
                if request.is_open:
                    request.schedule(scripted, case_opens_after=self._case_opens_after)

    def advance(self) -> list[tuple[str, str]]:
        """Apply what is due at ``clock()``; the (request id, status) changes made, in order."""
        with self._lock:
            return self._apply_due(settle=False)

    def settle_all(self) -> list[tuple[str, str]]:
        """Decide every open request now, as scripted; the (request id, status) changes made."""
        with self._lock:
            return self._apply_due(settle=True)

    def quota_code(self, quota_name: str) -> str:
        if quota_name not in self._codes_by_name:
            raise KeyError(f"no simulated quota named {quota_name!r}")
        return self._codes_by_name[quota_name]

    def set_value(self, quota_name: str, value: float) -> None:
        """Set a quota's applied value, as an account's quota can change under its jobs (the sandbox's
        ``quota`` fault lowers one to what is in use)."""
        with self._lock:
            self._quotas[self.quota_code(quota_name)].value = value

    def quota_value(self, quota_name: str) -> float:
        """The applied value, without the call log and without moving time on."""
        with self._lock:
            return self._quotas[self.quota_code(quota_name)].value

    def requests(self) -> list[dict[str, Any]]:
        """Every request, oldest first, as GetRequestedServiceQuotaChange would give it (no call log)."""
        with self._lock:
            return [request.describe() for request in self._requests]

    # ---- internals (called with the lock held) ------------------------------------------------

    def _apply_due(self, *, settle: bool) -> list[tuple[str, str]]:
        now = self._clock()
        changes: list[tuple[str, str]] = []
        for request in self._requests:
            for status in request.apply_due(now, settle=settle):
                changes.append((request.id, status))
                if status == "APPROVED":
                    request.quota.value = request.desired_value
        return changes

    def _history(self, requests: Iterable[QuotaIncreaseRequest], params: dict[str, Any]) -> dict[str, Any]:
        if params.get("QuotaRequestedAtLevel") == "RESOURCE":
            requests = []
        wanted = params.get("Status")
        # Newest first, as the console's request history shows them (the API's order is guessed).
        matching = [r.describe() for r in reversed(list(requests)) if wanted in (None, r.status)]
        page, next_token = self._page(matching, params)
        return {"RequestedQuotas": page, **({"NextToken": next_token} if next_token else {})}

    def _outcome_for(self, quota_name: str) -> ScriptedOutcome:
        return self._outcomes.get(quota_name, self._default_outcome)

    def _requests_for(self, quota: Quota) -> list[QuotaIncreaseRequest]:
        return [request for request in self._requests if request.quota is quota]

    def _sorted_quotas(self) -> list[Quota]:
        # By code, which scatters the names: a caller must look a quota up by name (order guessed).
        return [self._quotas[code] for code in sorted(self._quotas)]

    def _describe(self, quota: Quota) -> dict[str, Any]:
        return quota.describe(region=self.region, account_id=self.account_id)

    def _check_service(self, service_code: str) -> None:
        if service_code != SERVICE_CODE:
            raise ApiError("NoSuchResourceException", NO_SUCH_SERVICE)

    def _quota(self, service_code: str, quota_code: str) -> Quota:
        self._check_service(service_code)
        if quota_code not in self._quotas:
            raise ApiError("NoSuchResourceException", NO_SUCH_QUOTA)
        return self._quotas[quota_code]

    def _page(self, items: list[Any], params: dict[str, Any]) -> tuple[list[Any], str | None]:
        bad_token = ApiError("InvalidPaginationTokenException", BAD_PAGINATION_TOKEN)
        return page_of(items, params, default_max_results=LIST_DEFAULT_MAX_RESULTS, bad_token=bad_token)
