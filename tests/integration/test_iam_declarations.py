"""The check that keeps each adapter method's IAM declaration true to its calls (tests/iam_calls.py) sees a lie."""

from __future__ import annotations

import boto3
from moto import mock_aws

from tests import iam_calls
from trainguard.adapters.permissions import needs


class _Adapter:
    def __init__(self, client: object) -> None:
        self._client = client

    @needs("sns:Publish")
    def lists_topics_but_declares_publish(self) -> None:
        self._client.list_topics()  # type: ignore[attr-defined]

    @needs("sns:ListTopics")
    def outer(self) -> None:
        self.lists_topics_but_declares_publish()  # the outermost declaring method is the one granted


@mock_aws
def test_an_undeclared_call_is_caught_and_the_outermost_declaration_rules() -> None:
    adapter = _Adapter(boto3.client("sns", region_name="us-east-1"))
    adapter.lists_topics_but_declares_publish()
    assert iam_calls.undeclared == [
        "_Adapter.lists_topics_but_declares_publish calls sns:ListTopics, which it does not declare"
    ]
    iam_calls.undeclared.clear()
    adapter.outer()
    assert iam_calls.undeclared == []


def test_the_iam_name_of_an_operation() -> None:
    assert iam_calls.action_of(boto3.client("service-quotas", region_name="us-east-1"), "GetServiceQuota") == (
        "servicequotas:GetServiceQuota"
    )
    assert iam_calls.action_of(boto3.client("s3", region_name="us-east-1"), "ListObjectsV2") == "s3:ListBucket"
    assert iam_calls.action_of(boto3.client("cloudwatch", region_name="us-east-1"), "PutMetricData") == (
        "cloudwatch:PutMetricData"
    )
