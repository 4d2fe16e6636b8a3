"""The Service Quotas adapter's cache of quota names, with botocore's Stubber.

A container lists the SageMaker quotas once (ListServiceQuotas) and keeps the list. The listing used to be
cached before it was read: a listing throttled beyond botocore's retries left an empty cache, and every later
quota wall in that container was answered "Service Quotas has no SageMaker quota named ...; nothing requested"
(found while building the chaos suite's faults, local/trainguard_local/chaos).
"""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from trainguard.adapters.service_quotas import ServiceQuotas

P4D = "ml.p4d.24xlarge for training job usage"
QUOTA = {
    "ServiceCode": "sagemaker",
    "ServiceName": "Amazon SageMaker",
    "QuotaCode": "L-1234ABCD",
    "QuotaName": P4D,
    "Value": 0.0,
}


def test_a_listing_that_failed_is_not_cached() -> None:
    client = boto3.client("service-quotas", region_name="us-east-1")
    quotas = ServiceQuotas(client)
    with Stubber(client) as stub:
        stub.add_client_error(
            "list_service_quotas",
            service_error_code="TooManyRequestsException",
            service_message="Rate exceeded",
            expected_params={"ServiceCode": "sagemaker"},
        )
        stub.add_response("list_service_quotas", {"Quotas": [QUOTA]}, {"ServiceCode": "sagemaker"})
        with pytest.raises(ClientError):
            quotas.find(P4D)  # the invocation fails; Lambda retries it in the same container
        found = quotas.find(P4D)
        assert found is not None and found.code == "L-1234ABCD"
        assert quotas.find(P4D) == found  # listed once, then cached
        stub.assert_no_pending_responses()
