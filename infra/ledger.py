"""Ledger: the DynamoDB table where trainguard records each decision and retry.

Items are keyed `pk`/`sk` (strings) so one table holds several record kinds; `expires_at`
(epoch seconds) lets DynamoDB delete old records. The table is retained when the stack is
deleted: it is the audit trail of what trainguard did to whose jobs.
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct

from trainguard.adapters.ledger import PARTITION_KEY, SORT_KEY, TTL_ATTRIBUTE

# The keys are the ledger adapters' (trainguard.adapters.ledger, stall_ledger): one table for leases, steps,
# counters, lineage, quota waits and the stall watch list. A function gets the item actions its ports
# declare, on this table; no Scan, no batch, no index.
TABLE_SERVICE = "dynamodb:"


class Ledger(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.table = dynamodb.Table(
            self,
            "Table",
            partition_key=dynamodb.Attribute(name=PARTITION_KEY, type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=SORT_KEY, type=dynamodb.AttributeType.STRING),
            time_to_live_attribute=TTL_ATTRIBUTE,
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            removal_policy=RemovalPolicy.RETAIN,
        )

    def grant_items(self, grantee: iam.IGrantable, needed: frozenset[str]) -> set[str]:
        """The DynamoDB actions of `needed`, on this table only; the actions it placed."""
        actions = sorted(action for action in needed if action.startswith(TABLE_SERVICE))
        if actions:
            self.table.grant(grantee, *actions)
        return set(actions)
