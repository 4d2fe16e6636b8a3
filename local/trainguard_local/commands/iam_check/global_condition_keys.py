"""AWS's global condition context keys, with each key's data type, as the IAM User Guide lists them.

Source: IAM User Guide, "AWS global condition context keys",
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-keys.html (the page's table of
keys by property, each key's "Data type" and "Value type", and its "Sensitive condition keys"), read on
2026-12-04. Keys with a variable part are written as the authorization data writes them (`${TagKey}`).
The cross-service keys the page lists with the role-session properties (ec2:, glue:, codebuild:, lambda:,
ssm:, identitystore:) are here too: any action takes them.

Types use the authorization data's words (String, ARN, Bool, Numeric, Date, IPAddress), "ArrayOf" for a
multivalued key; aws:EpochTime is both Date and Numeric, aws:FederatedProvider a String or an ARN.
"""

from __future__ import annotations

GLOBAL_CONDITION_KEYS: dict[str, str] = {
    # Properties of the principal
    "aws:PrincipalArn": "ARN",
    "aws:PrincipalAccount": "String",
    "aws:PrincipalOrgPaths": "ArrayOfString",
    "aws:PrincipalOrgID": "String",
    "aws:PrincipalTag/${TagKey}": "String",
    "aws:PrincipalIsAWSService": "Bool",
    "aws:PrincipalServiceName": "String",
    "aws:PrincipalServiceNamesList": "ArrayOfString",
    "aws:PrincipalType": "String",
    "aws:userid": "String",
    "aws:username": "String",
    # Properties of a role session
    "aws:AssumedRoot": "Bool",
    "aws:FederatedProvider": "String|ARN",
    "aws:TokenIssueTime": "Date",
    "aws:SignInSessionArn": "ARN",
    "aws:MultiFactorAuthAge": "Numeric",
    "aws:MultiFactorAuthPresent": "Bool",
    "aws:ChatbotSourceArn": "ARN",
    "aws:Ec2InstanceSourceVpc": "String",
    "aws:Ec2InstanceSourcePrivateIPv4": "IPAddress",
    "aws:SourceIdentity": "String",
    "ec2:RoleDelivery": "Numeric",
    "ec2:SourceInstanceArn": "ARN",
    "glue:RoleAssumedBy": "String",
    "glue:CredentialIssuingService": "String",
    "codebuild:BuildArn": "ARN",
    "codebuild:ProjectArn": "ARN",
    "lambda:SourceFunctionArn": "ARN",
    "ssm:SourceInstanceArn": "ARN",
    "identitystore:UserId": "String",
    # Properties of the network
    "aws:SourceIp": "IPAddress",
    "aws:SourceVpc": "String",
    "aws:SourceVpcArn": "ARN",
    "aws:SourceVpce": "String",
    "aws:VpceAccount": "String",
    "aws:VpceOrgID": "String",
    "aws:VpceOrgPaths": "ArrayOfString",
    "aws:VpcSourceIp": "IPAddress",
    # Properties of the resource
    "aws:ResourceAccount": "String",
    "aws:ResourceOrgID": "String",
    "aws:ResourceOrgPaths": "ArrayOfString",
    "aws:ResourceTag/${TagKey}": "String",
    # Properties of the request
    "aws:CalledVia": "ArrayOfString",
    "aws:CalledViaFirst": "String",
    "aws:CalledViaLast": "String",
    "aws:CalledViaAWSMCP": "String",
    "aws:ViaAWSService": "Bool",
    "aws:ViaAWSMCPService": "Bool",
    "aws:CurrentTime": "Date",
    "aws:EpochTime": "Date|Numeric",
    "aws:referer": "String",
    "aws:RequestedRegion": "String",
    "aws:RequestTag/${TagKey}": "String",
    "aws:TagKeys": "ArrayOfString",
    "aws:SecureTransport": "Bool",
    "aws:SourceAccount": "String",
    "aws:SourceArn": "ARN",
    "aws:SourceOrgID": "String",
    "aws:SourceOrgPaths": "ArrayOfString",
    "aws:UserAgent": "String",
    "aws:IsMcpServiceAction": "Bool",
}

# "Sensitive condition keys": a wildcard in their values has no valid use.
SENSITIVE_KEYS = frozenset(
    {
        "aws:PrincipalAccount",
        "aws:PrincipalOrgID",
        "aws:ResourceAccount",
        "aws:ResourceOrgID",
        "aws:SourceAccount",
        "aws:SourceOrgID",
        "aws:SourceVpc",
        "aws:SourceVpce",
        "aws:VpceAccount",
        "aws:VpceOrgID",
    }
)
# The keys whose value is an account ID (12 digits) or an organization ID (o-, then 10 to 32 characters):
# the patterns of AccountId and OrganizationId in botocore's organizations service model.
ACCOUNT_KEYS = frozenset({"aws:PrincipalAccount", "aws:ResourceAccount", "aws:SourceAccount", "aws:VpceAccount"})
ORGANIZATION_KEYS = frozenset({"aws:PrincipalOrgID", "aws:ResourceOrgID", "aws:SourceOrgID", "aws:VpceOrgID"})
ACCOUNT_ID = r"\d{12}"
ORGANIZATION_ID = r"o-[a-z0-9]{10,32}"
