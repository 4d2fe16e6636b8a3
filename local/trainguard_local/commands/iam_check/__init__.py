"""The synthesized IAM policies against AWS's own texts, offline (`make lint`)."""

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
