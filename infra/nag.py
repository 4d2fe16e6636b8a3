"""cdk-nag v3 acknowledgements: one finding, on one construct, with its reason."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Aws, Validations
from constructs import IConstruct

# cdk-nag v3 findings are acknowledged as "<plugin>::<rule>[<finding>]", as synth prints them.
NAG_PLUGIN = "AwsSolutions"


def acknowledge_nag_finding(construct: IConstruct, finding: str, reason: str) -> None:
    """Acknowledge one cdk-nag finding on one construct (and its children), with the reason."""
    Validations.of(construct).acknowledge(Acknowledgment(id=f"{NAG_PLUGIN}::{finding}", reason=reason))


def nag_arn(arn: str) -> str:
    """An ARN as cdk-nag names it in a finding: pseudo parameters as <AWS::Region>."""
    return (
        arn.replace(Aws.PARTITION, "<AWS::Partition>")
        .replace(Aws.REGION, "<AWS::Region>")
        .replace(Aws.ACCOUNT_ID, "<AWS::AccountId>")
    )


class PendingAcknowledgments:
    """Reasons gathered per (construct, finding), then acknowledged once each with all of them.

    A role can need the same wildcard for different grants (Resource * for a Service Quotas read and
    for a CloudWatch call that supports no narrower scope): each grant adds its own reason, and the one
    acknowledgment of that finding on that role gives every reason.
    """

    def __init__(self) -> None:
        self._pending: dict[tuple[str, str], tuple[IConstruct, list[str]]] = {}

    def add(self, construct: IConstruct, finding: str, reason: str) -> None:
        _, reasons = self._pending.setdefault((construct.node.path, finding), (construct, []))
        if reason not in reasons:
            reasons.append(reason)

    def acknowledge_all(self) -> None:
        for (_, finding), (construct, reasons) in self._pending.items():
            acknowledge_nag_finding(construct, finding, " ".join(reasons))
        self._pending.clear()
