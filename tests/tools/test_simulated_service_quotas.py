"""The simulated Service Quotas, reached the way production code reaches AWS: a boto3 service-quotas client."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.conftest import load_fixture
from tests.tools.simulated_services import START, error_of, post_raw
from trainguard.adapters.service_quotas import ServiceQuotas
from trainguard_local.simulation.clock import SimClock
from trainguard_local.stand_in.service_quotas import SimulatedServiceQuotas
from trainguard_local.stand_in.service_quotas_server import ENDPOINT_VARIABLE, ServiceQuotasServer

# A real HTTP server per test: about 1 s for the module with imports.
pytestmark = pytest.mark.slow

ACCOUNT = "123456789012"
P4D = "ml.p4d.24xlarge for training job usage"
G5 = "ml.g5.12xlarge for training job usage"


@pytest.fixture
def clock() -> SimClock:
    return SimClock(START)


@pytest.fixture
def plane(clock: SimClock) -> SimulatedServiceQuotas:
    return SimulatedServiceQuotas(clock=clock, outcomes={G5: ("DENIED", timedelta(hours=6))})


@pytest.fixture
def server(plane: SimulatedServiceQuotas) -> Iterator[ServiceQuotasServer]:
    with ServiceQuotasServer(plane) as running:
        yield running


@pytest.fixture
def quotas(server: ServiceQuotasServer, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A client built as production builds it: only the endpoint variable points it here."""
    monkeypatch.setenv(ENDPOINT_VARIABLE, server.endpoint_url)
    client = boto3.client("service-quotas", region_name="us-east-1")
    assert client.meta.endpoint_url == server.endpoint_url  # never AWS
    return client


def code_by_name(client: Any, name: str) -> str:
    """What production code must do: resolve the code from the name with ListServiceQuotas."""
    for page in client.get_paginator("list_service_quotas").paginate(ServiceCode="sagemaker"):
        for quota in page["Quotas"]:
            if quota["QuotaName"] == name:
                return str(quota["QuotaCode"])
    raise AssertionError(f"{name} not listed")


def request_increase(client: Any, code: str, desired: float, **extra: Any) -> dict[str, Any]:
    answer = client.request_service_quota_increase(
        ServiceCode="sagemaker", QuotaCode=code, DesiredValue=desired, **extra
    )
    return answer["RequestedQuota"]  # type: ignore[no-any-return]


def history_of(client: Any, code: str) -> list[dict[str, Any]]:
    answer = client.list_requested_service_quota_change_history_by_quota(ServiceCode="sagemaker", QuotaCode=code)
    return answer["RequestedQuotas"]  # type: ignore[no-any-return]


def test_quotas_are_listed_by_their_aws_names_with_the_documented_defaults(quotas: Any) -> None:
    listed = {q["QuotaName"]: q for p in quotas.get_paginator("list_service_quotas").paginate(
        ServiceCode="sagemaker") for q in p["Quotas"]}  # fmt: skip
    values = {name: quota["Value"] for name, quota in listed.items()}
    assert values[P4D] == 0.0 and values["ml.p5.48xlarge for spot training job usage"] == 0.0
    assert values["ml.trn1.32xlarge for training warm pool usage"] == 0.0
    assert values["ml.m5.large for training job usage"] == 2.0
    assert values["Number of instances across all training jobs"] == 4.0
    assert values["Maximum number of instances per training job"] == 20.0
    assert values["Longest run time for a training job"] == 432_000.0
    assert values["Number of instances across all processing jobs"] == 4.0
    assert "ml.m5.large for processing job usage" in values

    quota = listed[P4D]
    assert re.fullmatch(r"L-[0-9A-F]{8}", quota["QuotaCode"])
    assert quota == {
        "ServiceCode": "sagemaker",
        "ServiceName": "Amazon SageMaker",
        "QuotaArn": f"arn:aws:servicequotas:us-east-1:{ACCOUNT}:sagemaker/{quota['QuotaCode']}",
        "QuotaCode": quota["QuotaCode"],
        "QuotaName": P4D,
        "Value": 0.0,
        "Unit": "None",
        "Adjustable": True,
        "GlobalQuota": False,
        "QuotaAppliedAtLevel": "ACCOUNT",
    }
    assert quotas.get_service_quota(ServiceCode="sagemaker", QuotaCode=quota["QuotaCode"])["Quota"] == quota


def test_codes_are_stable_but_never_aws_real_ones(plane: SimulatedServiceQuotas) -> None:
    def codes(value: Any) -> Iterator[str]:
        if isinstance(value, dict):
            for key, item in value.items():
                yield from ([item] if key == "code" else codes(item))
        elif isinstance(value, list):
            for item in value:
                yield from codes(item)

    real_codes = set(codes(load_fixture("quotas.json")))
    assert len(real_codes) > 300
    ours = {plane.quota_code(q["QuotaName"]) for q in plane.handle(
        "ListServiceQuotas", {"ServiceCode": "sagemaker"})["Quotas"]}  # fmt: skip
    assert not ours & real_codes
    assert SimulatedServiceQuotas().quota_code(P4D) == plane.quota_code(P4D)


def test_list_pages_filters_by_code_and_rejects_a_bad_token(quotas: Any, plane: SimulatedServiceQuotas) -> None:
    first = quotas.list_service_quotas(ServiceCode="sagemaker", MaxResults=20)
    names = [q["QuotaName"] for q in first["Quotas"]]
    token = first["NextToken"]
    while token:
        page = quotas.list_service_quotas(ServiceCode="sagemaker", MaxResults=20, NextToken=token)
        names += [q["QuotaName"] for q in page["Quotas"]]
        token = page.get("NextToken")
    assert len(names) == len(set(names)) == 6 + 12 * 4  # account-wide + 4 usages per instance type

    only = quotas.list_service_quotas(ServiceCode="sagemaker", QuotaCode=plane.quota_code(P4D))["Quotas"]
    assert [q["QuotaName"] for q in only] == [P4D]
    with pytest.raises(quotas.exceptions.InvalidPaginationTokenException):
        quotas.list_service_quotas(ServiceCode="sagemaker", NextToken="abc")


def test_request_is_pending_and_a_second_one_is_refused_while_it_is_open(
    quotas: Any, plane: SimulatedServiceQuotas
) -> None:
    code = code_by_name(quotas, P4D)
    request = request_increase(quotas, code, 4)
    assert (request["Status"], request["QuotaName"], request["DesiredValue"]) == ("PENDING", P4D, 4.0)
    assert request["Created"] == START
    assert "CaseId" not in request and "LastUpdated" not in request and "RequestType" not in request
    assert re.fullmatch(r"[0-9a-f]{32}[A-Za-z0-9]{8}", request["Id"])
    assert json.loads(request["Requester"]) == {
        "accountId": ACCOUNT, "callerArn": f"arn:aws:iam::{ACCOUNT}:root",
    }  # fmt: skip

    with pytest.raises(quotas.exceptions.ResourceAlreadyExistsException) as excinfo:
        request_increase(quotas, code, 8)
    assert error_of(excinfo)[1] == "Only one open service quota increase request is allowed per quota."

    assert history_of(quotas, code) == [request]
    pending = quotas.list_requested_service_quota_change_history(ServiceCode="sagemaker", Status="PENDING")
    assert [r["Id"] for r in pending["RequestedQuotas"]] == [request["Id"]]
    assert quotas.list_requested_service_quota_change_history(Status="APPROVED")["RequestedQuotas"] == []
    assert [operation for operation, _ in plane.calls].count("RequestServiceQuotaIncrease") == 2


def test_a_request_opens_a_case_then_is_approved_and_the_quota_changes(quotas: Any, clock: SimClock) -> None:
    code = code_by_name(quotas, P4D)
    request_id = request_increase(quotas, code, 4)["Id"]

    clock.skip(timedelta(minutes=10))
    opened = quotas.get_requested_service_quota_change(RequestId=request_id)["RequestedQuota"]
    assert opened["Status"] == "CASE_OPENED"
    assert re.fullmatch(r"\d{10}", opened["CaseId"])
    assert opened["LastUpdated"] == START + timedelta(minutes=10)
    assert quotas.get_service_quota(ServiceCode="sagemaker", QuotaCode=code)["Quota"]["Value"] == 0.0

    clock.skip(timedelta(hours=5))  # decided at 4 h (the default); seen lazily, stamped with the decision time
    approved = quotas.get_requested_service_quota_change(RequestId=request_id)["RequestedQuota"]
    assert (approved["Status"], approved["CaseId"]) == ("APPROVED", opened["CaseId"])
    assert approved["LastUpdated"] == START + timedelta(hours=4)
    assert quotas.get_service_quota(ServiceCode="sagemaker", QuotaCode=code)["Quota"]["Value"] == 4.0


def test_a_scripted_denial_keeps_the_value_and_a_new_request_may_follow(
    quotas: Any, plane: SimulatedServiceQuotas, clock: SimClock
) -> None:
    code = code_by_name(quotas, G5)
    first_id = request_increase(quotas, code, 2)["Id"]
    clock.skip(timedelta(hours=6))
    assert plane.advance() == [(first_id, "CASE_OPENED"), (first_id, "DENIED")]
    assert plane.quota_value(G5) == 0.0

    plane.decide(G5, "APPROVED", after=timedelta(minutes=5))  # small enough for no Support case
    assert request_increase(quotas, code, 1)["Status"] == "PENDING"
    history = [(r["Status"], r["DesiredValue"]) for r in history_of(quotas, code)]
    assert history == [("PENDING", 1.0), ("DENIED", 2.0)]
    clock.skip(timedelta(minutes=5))
    assert [status for _, status in plane.advance()] == ["APPROVED"]
    assert plane.requests()[-1].get("CaseId") is None
    assert plane.quota_value(G5) == 1


def test_support_case_not_allowed_ends_not_approved_and_settle_all_decides_early(
    quotas: Any, plane: SimulatedServiceQuotas, clock: SimClock
) -> None:
    p4d, m5 = code_by_name(quotas, P4D), code_by_name(quotas, "ml.m5.large for training job usage")
    request_increase(quotas, p4d, 4, SupportCaseAllowed=False)
    request_increase(quotas, m5, 10)
    clock.skip(timedelta(minutes=10))
    refused = quotas.list_requested_service_quota_change_history(Status="NOT_APPROVED")["RequestedQuotas"]
    assert [r["QuotaName"] for r in refused] == [P4D]
    assert [status for _, status in plane.settle_all()] == ["APPROVED"]
    assert plane.requests()[-1]["LastUpdated"] == clock.now
    assert plane.quota_value("ml.m5.large for training job usage") == 10.0


def test_desired_value_must_be_above_the_current_value(quotas: Any) -> None:
    code = code_by_name(quotas, "Number of instances across all training jobs")
    for desired in (4, 3):
        with pytest.raises(quotas.exceptions.IllegalArgumentException) as excinfo:
            request_increase(quotas, code, desired)
        assert error_of(excinfo)[1] == "You must provide a quota value greater than the current quota value"


def test_unknown_codes_services_and_requests_are_no_such_resource(quotas: Any) -> None:
    missing = quotas.exceptions.NoSuchResourceException
    with pytest.raises(missing):
        quotas.get_service_quota(ServiceCode="sagemaker", QuotaCode="L-09B4A649")  # AWS's p4d code
    with pytest.raises(missing):
        request_increase(quotas, "L-00C91CB5", 8)  # AWS's code for the training instances across all jobs
    with pytest.raises(missing):
        quotas.get_requested_service_quota_change(RequestId="d187537d15254312a9609aa51bbf7624u7W49tPO")
    with pytest.raises(missing) as excinfo:
        quotas.list_service_quotas(ServiceCode="SageMaker")
    assert error_of(excinfo)[1] == "The request failed because the specified service does not exist."


def test_the_server_checks_what_botocore_leaves_to_it_and_names_unsimulated_operations(
    quotas: Any, server: ServiceQuotasServer
) -> None:
    with pytest.raises(ClientError) as excinfo:
        quotas.list_services()
    assert error_of(excinfo) == ("UnknownOperationException", "Operation ListServices is not simulated here.")
    with pytest.raises(ClientError) as excinfo:
        quotas.list_service_quotas(ServiceCode="sagemaker", MaxResults=500)
    assert error_of(excinfo) == (
        "ValidationException",
        "1 validation error detected: Value '500' at 'maxResults' failed to satisfy constraint: "
        "Member must have value less than or equal to 100",
    )
    status, body = post_raw(
        server,
        "ServiceQuotasV20190624.ListRequestedServiceQuotaChangeHistory",
        {"Status": "WAITING", "Bogus": 1},
    )
    assert (status, body["__type"]) == (400, "ValidationException")
    assert 'Unknown parameter in input: "Bogus"' in body["message"]
    status, body = post_raw(server, "ServiceQuotasV20190624.ListRequestedServiceQuotaChangeHistory", {"Status": "x"})
    assert "Member must satisfy enum value set: [PENDING, CASE_OPENED" in body["message"]
    status, body = post_raw(server, "SageMaker.ListTrainingJobs", {})
    assert (status, body["__type"]) == (400, "UnknownOperationException")


def test_constructor_rejects_unknown_quota_names_and_outcomes() -> None:
    with pytest.raises(ValueError, match="not in the catalogue"):
        SimulatedServiceQuotas(values={"ml.p4d.24xlarge for training jobs usage": 1})
    with pytest.raises(ValueError, match="not a final status"):
        SimulatedServiceQuotas(outcomes={P4D: ("PENDING", timedelta(hours=1))})
    overridden = SimulatedServiceQuotas(values={P4D: 2}, instance_types=["ml.p4d.24xlarge"])
    assert overridden.quota_value(P4D) == 2
    with pytest.raises(KeyError, match="no simulated quota named"):  # only the listed instance types
        overridden.quota_code(G5)


def test_the_production_adapter_resolves_files_and_follows_a_request(quotas: Any, clock: SimClock) -> None:
    adapter = ServiceQuotas(quotas)
    found = adapter.find("ML.P4D.24XLARGE  for training job usage")
    assert found is not None and (found.name, found.value) == (P4D, 0.0)

    filed = adapter.request_increase(found.code, 4, support_case_allowed=True)
    again = adapter.request_increase(found.code, 4, support_case_allowed=True)  # refused; the open one instead
    assert (filed.status, again.request_id) == ("PENDING", filed.request_id)

    clock.skip(timedelta(minutes=10))
    opened = adapter.request_state(filed.request_id)
    assert opened.status == "CASE_OPENED" and opened.case_id
    assert adapter.open_request(found.code) == opened
    clock.skip(timedelta(hours=4))
    assert adapter.request_state(filed.request_id).status == "APPROVED"
    assert adapter.open_request(found.code) is None
    assert adapter.current_value(found.code) == 4.0
