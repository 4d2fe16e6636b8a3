"""QuotasPort: FakeQuotas and adapters/service_quotas.py's ServiceQuotas on the simulated Service Quotas
(local/trainguard_local) served on 127.0.0.1; moto has no Service Quotas for SageMaker."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from tests.contracts.conftest import IMPLEMENTATIONS, local_client
from tests.fakes import NOW, FakeQuotas
from trainguard.adapters.service_quotas import ServiceQuotas
from trainguard.workflows.ports import QuotasPort
from trainguard_local.simulation.clock import SimClock
from trainguard_local.stand_in.service_quotas import SimulatedServiceQuotas
from trainguard_local.stand_in.service_quotas_server import ServiceQuotasServer

P4D = "ml.p4d.24xlarge for training job usage"


@dataclass
class Subject:
    quotas: QuotasPort
    approve: Callable[[str], None]  # AWS approves the request of that id


@pytest.fixture
def clock() -> SimClock:
    return SimClock(NOW)  # the simulated Service Quotas' time: it moves only when a test moves it


@pytest.fixture
def simulated_quotas(clock: SimClock) -> Iterator[ServiceQuotasServer]:
    with ServiceQuotasServer(SimulatedServiceQuotas(clock=clock)) as server:
        yield server


@pytest.fixture(params=IMPLEMENTATIONS)
def subject(request: pytest.FixtureRequest) -> Subject:
    if request.param == "fake":
        fake = FakeQuotas({P4D: 0, "ml.g5.12xlarge for training job usage": 2})
        return Subject(fake, lambda request_id: fake.decide(request_id, "APPROVED"))
    server, clock = request.getfixturevalue("simulated_quotas"), request.getfixturevalue("clock")
    return Subject(ServiceQuotas(local_client("service-quotas", server.endpoint_url)), lambda _: clock.set_hours(5))


@pytest.fixture
def quotas(subject: Subject) -> QuotasPort:
    return subject.quotas


def test_a_quota_is_found_by_its_name_in_any_case_and_spacing(quotas: QuotasPort) -> None:
    found = quotas.find(P4D)
    assert found is not None and (found.name, found.value) == (P4D, 0.0)
    assert quotas.find("ML.P4D.24XLARGE  for training\njob usage") == found  # texts arrive line-wrapped
    assert quotas.find("ml.p4d.24xlarge for training jobs usage") is None
    assert quotas.current_value(found.code) == 0.0


def test_an_increase_is_requested_once_while_it_is_open(quotas: QuotasPort) -> None:
    code = quotas.find(P4D).code  # type: ignore[union-attr]
    assert quotas.open_request(code) is None
    filed = quotas.request_increase(code, 4, support_case_allowed=True)
    assert (filed.quota_code, filed.quota_name, filed.desired_value, filed.status) == (code, P4D, 4.0, "PENDING")
    assert filed.is_open and quotas.open_request(code) == filed == quotas.request_state(filed.request_id)
    again = quotas.request_increase(code, 8, support_case_allowed=True)  # refused by AWS: the open one instead
    assert again.request_id == filed.request_id


def test_an_approved_request_is_closed_and_raises_the_quota(subject: Subject) -> None:
    code = subject.quotas.find(P4D).code  # type: ignore[union-attr]
    filed = subject.quotas.request_increase(code, 4, support_case_allowed=True)
    subject.approve(filed.request_id)
    approved = subject.quotas.request_state(filed.request_id)
    assert (approved.request_id, approved.status, approved.is_open) == (filed.request_id, "APPROVED", False)
    assert approved.case_id  # approved through a Support case
    assert subject.quotas.open_request(code) is None and subject.quotas.current_value(code) == 4.0
    # Not part of the contract: what find() says of the value afterwards (the adapter keeps the listing it read).
