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
