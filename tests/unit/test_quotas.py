"""Reading quota walls and sizing the increase (domain/quotas.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import load_fixture
from trainguard.domain.quotas import (
    NoQuotaRequest,
    QuotaDemand,
    QuotaRequestPlan,
    launch_demand,
    plan_quota_request,
    read_quota_error,
)

QUOTA_TEXTS = [e for e in load_fixture("failure_reasons.json") if e["category"] == "quota"]
CURRENT = (
    "The account-level service limit 'ml.p4d.24xlarge for training job usage' is 0 Instances, with current "
    "utilization of 0 Instances and a request delta of 4 Instances. Please use AWS Service Quotas to request "
    "an increase for this quota."
)


@pytest.mark.parametrize("entry", QUOTA_TEXTS, ids=[e["text"][100:160] for e in QUOTA_TEXTS])
def test_every_shared_quota_text_is_read(entry: dict[str, str]) -> None:
    demand = read_quota_error(entry["text"])
    assert demand is not None
    assert demand.quota_name.endswith(("job usage", "processing jobs", "training jobs"))
    assert "\n" not in demand.quota_name and "  " not in demand.quota_name
    assert demand.usage is not None and demand.delta is not None


def test_the_fields_of_the_current_wording() -> None:
    demand = read_quota_error(CURRENT)
    assert demand is not None
    assert (demand.quota_name, demand.limit, demand.usage, demand.delta, demand.unit) == (
        "ml.p4d.24xlarge for training job usage",
        0,
        0,
        4,
        "Instances",
    )
    assert demand.needed == 4


def test_a_line_wrapped_quota_name_is_joined() -> None:
    wrapped = read_quota_error(
        "The account-level service limit 'ml.p2.xlarge\nfor training job usage' is 0 Instances, with current\n"
        "   utilization of 0 Instances and a request delta of 1 Instances."
    )
    assert wrapped is not None and wrapped.quota_name == "ml.p2.xlarge for training job usage"


def test_the_older_wording_names_the_quota_as_today() -> None:
    demand = read_quota_error("The account-level service limit for training-job/ml.p2.xlarge is 0 Instances")
    assert demand is not None
    assert demand.quota_name == "ml.p2.xlarge for training job usage" and demand.limit == 0
    assert demand.needed is None


@pytest.mark.parametrize(
    "text",
    [
        "An error occurred (ResourceLimitExceeded) when calling the CreateTrainingJob operation: The requested "
        "resource training-job/ml.p2.xlarge is not available in this region",
        "InternalServerError: We encountered an internal error. Please try again.",
        "",
        "The account-level service limit 'x' is many Instances",
    ],
)
def test_texts_that_name_no_quota(text: str) -> None:
    assert read_quota_error(text) is None


def plan(text: str = CURRENT, **kwargs: object) -> QuotaRequestPlan | NoQuotaRequest:
    demand = read_quota_error(text)
    assert demand is not None
    options: dict = {"current_value": None, "launch_instance_count": None, "ceilings": {}, "default_ceiling": 64}
    options.update(kwargs)
    return plan_quota_request(demand, **options)


def test_the_request_is_usage_plus_delta_not_a_multiple_of_the_limit() -> None:
    result = plan()
    assert isinstance(result, QuotaRequestPlan)
    assert result.desired_value == 4 and not result.ceiling_applied
    over = plan(
        CURRENT.replace(
            "is 0 Instances, with current utilization of 0", "is 2 Instances, with current utilization of 3"
        )
    )
    assert isinstance(over, QuotaRequestPlan) and over.desired_value == 7


def test_a_ceiling_caps_the_request_and_says_so() -> None:
    result = plan(ceilings={"ml.p4d.24xlarge for training job usage": 2})
    assert isinstance(result, QuotaRequestPlan)
    assert result.desired_value == 2 and result.ceiling_applied
    assert "ceiling for this quota is 2 instances, so it asks for that much only" in result.reason


def test_no_request_when_the_ceiling_is_already_reached() -> None:
    result = plan(current_value=2, ceilings={"ml.p4d.24xlarge for training job usage": 2})
    assert isinstance(result, NoQuotaRequest) and "ceiling" in result.reason


def test_no_request_when_the_quota_is_already_enough() -> None:
    result = plan(current_value=8)
    assert isinstance(result, NoQuotaRequest) and "already 8" in result.reason


def test_the_older_wording_is_sized_from_the_launch() -> None:
    older = "The account-level service limit for training-job/ml.p2.xlarge is 0 Instances"
    assert isinstance(plan(older), NoQuotaRequest)
    sized = plan(older, launch_instance_count=2)
    assert isinstance(sized, QuotaRequestPlan) and sized.desired_value == 2


def _wall(quota_name: str, delta: int = 64) -> str:
    return (
        f"The account-level service limit '{quota_name}' is 0 Instances, with current utilization of 0 Instances "
        f"and a request delta of {delta} Instances."
    )


P4D_X4 = {"ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 4}}


@pytest.mark.parametrize(
    ("quota_name", "launch", "needed"),
    [
        ("ml.p4d.24xlarge for training job usage", P4D_X4, 4),  # the launch's 4, not the text's 64
        ("ML.P4D.24XLARGE  for training job usage", P4D_X4, 4),
        ("Number of instances across all training jobs", P4D_X4, 4),
        ("Maximum number of instances per training job", P4D_X4, 4),
        ("ml.p4d.24xlarge for spot training job usage", {**P4D_X4, "EnableManagedSpotTraining": True}, 4),
        (
            "ml.g5.48xlarge for training job usage",
            {
                "ResourceConfig": {
                    "InstanceGroups": [
                        {"InstanceType": "ml.g5.48xlarge", "InstanceCount": 2},
                        {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 1},
                    ]
                }
            },
            2,
        ),
    ],
)
def test_a_quota_of_the_launch_is_sized_from_its_own_request(
    quota_name: str, launch: dict[str, Any], needed: int
) -> None:
    demand = read_quota_error(_wall(quota_name))
    assert demand is not None
    sized = launch_demand(demand, launch)
    assert isinstance(sized, QuotaDemand) and sized.needed == needed


@pytest.mark.parametrize(
    ("quota_name", "launch"),
    [
        ("ml.p5.48xlarge for training job usage", P4D_X4),  # another type's quota
        ("Number of instances across all processing jobs", P4D_X4),
        ("ml.p4d.24xlarge for training job usage", {}),  # no request to size it from
    ],
)
def test_a_quota_that_is_not_the_launchs_is_never_requested(quota_name: str, launch: dict[str, Any]) -> None:
    """Issue 24: a crafted text filed an increase for any SageMaker quota, sized by numbers in the text."""
    demand = read_quota_error(_wall(quota_name))
    assert demand is not None
    assert isinstance(launch_demand(demand, launch), NoQuotaRequest)


def test_the_ceiling_is_found_by_the_quotas_normalised_name_or_its_code() -> None:
    """Issue 24: the ceiling was looked up by exact text while the quota was matched loosely: 'ML.P5.48XLARGE ...'
    escaped a ceiling of 2 and got 64."""
    ceilings = {"ml.p5.48xlarge for training job usage": 2.0, "L-ABCD1234": 3.0}
    for name, code, ceiling in (
        ("ML.P5.48XLARGE  for training job usage", "L-OTHER", 2),
        ("ml.p4d.24xlarge for training job usage", "L-ABCD1234", 3),
        ("ml.p4d.24xlarge for training job usage", "L-OTHER", 64),
    ):
        demand = read_quota_error(_wall(name))
        assert demand is not None
        plan = plan_quota_request(
            demand,
            current_value=0,
            launch_instance_count=None,
            ceilings=ceilings,
            default_ceiling=64,
            quota_code=code,
        )
        assert isinstance(plan, QuotaRequestPlan) and plan.desired_value == ceiling, name
