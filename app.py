#!/usr/bin/env python3
"""The CDK app: settings from cdk.json context, the trainguard stack, cdk-nag. No AWS calls here."""

from __future__ import annotations

import sys
from pathlib import Path

# The Lambda package lives in lambdas/ (one asset); the stack imports its GuardConfig.
# After `pip install -e .` (make setup) this is already importable; the path keeps a bare checkout working.
sys.path.insert(1, str(Path(__file__).resolve().parent / "lambdas"))

from aws_cdk import App, DefaultStackSynthesizer, Validations  # noqa: E402
from cdk_nag import AwsSolutionsChecks  # noqa: E402

from infra.settings import CONTEXT_KEY, Settings  # noqa: E402
from infra.stack import TrainGuardStack  # noqa: E402

STACK_NAME = "TrainGuard"


def build_app(app: App | None = None) -> App:
    """The app with its stack and the AwsSolutions checks; synthesize it with `.synth()`."""
    app = app or App()
    settings = Settings.from_context(app.node.try_get_context(CONTEXT_KEY))
    # moto server cannot run the bootstrap-version rule (see ../shared/LOCAL_AWS.md): local deploys only.
    synthesizer = DefaultStackSynthesizer(generate_bootstrap_version_rule=False) if settings.local_deploy else None
    TrainGuardStack(
        app,
        STACK_NAME,
        settings=settings,
        synthesizer=synthesizer,
        description="trainguard: relaunches transient SageMaker training failures and reports the rest",
    )
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app


if __name__ == "__main__":
    build_app().synth()
