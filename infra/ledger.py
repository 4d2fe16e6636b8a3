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

from trainguard.adapters.ledger import IAM_ACTIONS as LEDGER_ACTIONS
from trainguard.adapters.ledger import PARTITION_KEY, SORT_KEY, TTL_ATTRIBUTE

# The keys and the actions are the ledger adapter's: conditional writes, leases it takes and
# releases, counters, a job's records. No Scan, no batch. The stall ledger
# (trainguard.adapters.stall_ledger) keeps its records in the same table with the same actions.
LEDGER_UPDATE = "dynamodb:UpdateItem"
if LEDGER_UPDATE not in LEDGER_ACTIONS:
    raise ValueError(f"the ledger adapter no longer declares {LEDGER_UPDATE}; see grant_ledger_updates")


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

    def grant_ledger_access(self, grantee: iam.IGrantable) -> None:
        """Exactly LEDGER_ACTIONS on this table (no index ARNs: the table has none)."""
        self.table.grant(grantee, *LEDGER_ACTIONS)

    def grant_ledger_updates(self, grantee: iam.IGrantable) -> None:
        """UpdateItem alone, for a writer that only updates items in place with a condition (the
        log-activity function: a watched job's newest log line, `StallLedger.record_log_activity`)."""
        self.table.grant(grantee, LEDGER_UPDATE)
