"""The single-account stack's shape: its resources and its permissions, as data to compare between versions.

Issue 16 (the organization-wide hub) must leave a single-account deployment as it is: the same resources and the
same permissions. `tests/infra/single_account_shape.json` holds the shape of both synthesized stacks (the
configured one of app.py and the one with default settings) as they were before the hub was built;
`tests/infra/test_single_account_shape.py` compares. After a change that is meant to alter the single-account
stack, write the file again and review its diff: `python -m tests.infra.single_account_shape --write`.

A resource is its logical ID and type; the permissions are every IAM policy document, role trust, managed policy,
Lambda permission and resource policy in the template, whole. The functions' code and environment are not part of
the shape: they change with every release.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

SHAPE_FILE = Path(__file__).with_name("single_account_shape.json")
PERMISSION_PROPERTIES = {
    "AWS::IAM::Policy": ("PolicyDocument", "Roles"),
    "AWS::IAM::ManagedPolicy": ("PolicyDocument", "Roles"),
    "AWS::IAM::Role": ("AssumeRolePolicyDocument", "ManagedPolicyArns", "Policies", "PermissionsBoundary"),
    "AWS::Lambda::Permission": ("Action", "FunctionName", "Principal", "SourceArn", "SourceAccount"),
    "AWS::SNS::TopicPolicy": ("PolicyDocument", "Topics"),
    "AWS::SQS::QueuePolicy": ("PolicyDocument", "Queues"),
    "AWS::Events::EventBusPolicy": ("Statement", "EventBusName", "StatementId"),
    "AWS::S3::BucketPolicy": ("PolicyDocument", "Bucket"),
    "AWS::KMS::Key": ("KeyPolicy",),
    "AWS::Logs::ResourcePolicy": ("PolicyDocument",),
}


def shape(template: dict[str, Any]) -> dict[str, Any]:
    """The template's resources (logical ID: type) and permissions (logical ID: the properties that grant)."""
    resources = template["Resources"]
    permissions = {
        logical_id: {
            name: resource["Properties"][name]
            for name in PERMISSION_PROPERTIES[resource["Type"]]
            if name in resource.get("Properties", {})
        }
        for logical_id, resource in resources.items()
        if resource["Type"] in PERMISSION_PROPERTIES
    }
    return {
        "resources": {logical_id: resource["Type"] for logical_id, resource in sorted(resources.items())},
        "permissions": dict(sorted(permissions.items())),
    }


def synthesized_shapes() -> dict[str, Any]:
    """The shapes of the configured stack (app.py's, with tests/infra/template_queries.py's context) and of the
    stack with default settings, synthesized now."""
    from aws_cdk import App

    import app as cdk_app
    from infra.settings import Settings
    from infra.stack import TrainGuardStack
    from tests.infra.template_queries import CONFIGURED_CONTEXT, CONFIGURED_STACK, DEFAULTS_STACK

    with tempfile.TemporaryDirectory() as outdir:
        app = cdk_app.build_app(App(outdir=outdir, context={"trainguard": CONFIGURED_CONTEXT}))
        TrainGuardStack(app, DEFAULTS_STACK, settings=Settings())
        with contextlib.suppress(RuntimeError):  # a cdk-nag finding: the templates are written all the same
            app.synth()
        return {
            name: shape(json.loads((Path(outdir) / f"{name}.template.json").read_text()))
            for name in (CONFIGURED_STACK, DEFAULTS_STACK)
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.infra.single_account_shape", description=__doc__)
    parser.add_argument("--write", action="store_true", help=f"write the shapes to {SHAPE_FILE.name}")
    args = parser.parse_args(argv)
    text = json.dumps(synthesized_shapes(), indent=1, sort_keys=True) + "\n"
    if args.write:
        SHAPE_FILE.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
