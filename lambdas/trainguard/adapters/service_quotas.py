"""Service Quotas for SageMaker: find a quota by name, read it, follow and file increase requests.

API: https://docs.aws.amazon.com/servicequotas/2019-06-24/apireference/ (botocore model
`service-quotas`). Quota codes differ between sources, so they are resolved by name with
ListServiceQuotas, never hard-coded (docs/aws-facts.md); the list is cached for the container's life.

IAM: each method's `needs`. The first increase request of an account creates Service Quotas'
service-linked role with the caller's iam:CreateServiceLinkedRole, so `request_increase` needs it too.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from trainguard.adapters.permissions import declared_actions, needs
from trainguard.domain.quotas import normalize_quota_name
from trainguard.workflows.ports import QuotaInfo, QuotaRequestState

SERVICE_CODE = "sagemaker"
OPEN_STATUSES = ("PENDING", "CASE_OPENED")


class ServiceQuotas:
    def __init__(self, client: Any) -> None:
        self._client = client
        self._by_name: dict[str, QuotaInfo] | None = None

    @needs("servicequotas:ListServiceQuotas")
    def find(self, quota_name: str) -> QuotaInfo | None:
        if self._by_name is None:
            # Cached only once the whole list is read: a listing that failed half-way (throttled beyond the
            # retries) must not leave an empty cache that answers "no such quota" for the container's life.
            by_name = {}
            for page in self._client.get_paginator("list_service_quotas").paginate(ServiceCode=SERVICE_CODE):
                for quota in page.get("Quotas", []):
                    info = QuotaInfo(quota["QuotaCode"], quota["QuotaName"], float(quota.get("Value", 0)))
                    by_name[normalize_quota_name(info.name)] = info
            self._by_name = by_name
        return self._by_name.get(normalize_quota_name(quota_name))

    @needs("servicequotas:GetServiceQuota")
    def current_value(self, quota_code: str) -> float:
        quota = self._client.get_service_quota(ServiceCode=SERVICE_CODE, QuotaCode=quota_code)["Quota"]
        return float(quota["Value"])

    @needs("servicequotas:ListRequestedServiceQuotaChangeHistoryByQuota")
    def open_request(self, quota_code: str) -> QuotaRequestState | None:
        for status in OPEN_STATUSES:
            pages = self._client.get_paginator("list_requested_service_quota_change_history_by_quota").paginate(
                ServiceCode=SERVICE_CODE, QuotaCode=quota_code, Status=status
            )
            for page in pages:
                for request in page.get("RequestedQuotas", []):
                    return _state(request)
        return None

    @needs(
        "servicequotas:RequestServiceQuotaIncrease",
        "iam:CreateServiceLinkedRole",
        "servicequotas:ListRequestedServiceQuotaChangeHistoryByQuota",
    )
    def request_increase(self, quota_code: str, desired_value: float, support_case_allowed: bool) -> QuotaRequestState:
        """File the request; if one is already open for this quota, return that one instead."""
        try:
            response = self._client.request_service_quota_increase(
                ServiceCode=SERVICE_CODE,
                QuotaCode=quota_code,
                DesiredValue=desired_value,
                SupportCaseAllowed=support_case_allowed,
            )
        except ClientError as err:
            if err.response.get("Error", {}).get("Code") != "ResourceAlreadyExistsException":
                raise
            existing = self.open_request(quota_code)
            if existing is None:
                raise
            return existing
        return _state(response["RequestedQuota"])

    @needs("servicequotas:GetRequestedServiceQuotaChange")
    def request_state(self, request_id: str) -> QuotaRequestState:
        return _state(self._client.get_requested_service_quota_change(RequestId=request_id)["RequestedQuota"])


def _state(request: dict[str, Any]) -> QuotaRequestState:
    return QuotaRequestState(
        request_id=str(request["Id"]),
        quota_code=str(request.get("QuotaCode", "")),
        quota_name=str(request.get("QuotaName", "")),
        desired_value=float(request.get("DesiredValue", 0)),
        status=str(request.get("Status", "")),
        case_id=str(request.get("CaseId") or ""),
    )


# Interim, until the stack derives each function's grants from its ports: the actions the stack groups.
IAM_ACTIONS = tuple(a for a in declared_actions(ServiceQuotas) if a != "iam:CreateServiceLinkedRole")
