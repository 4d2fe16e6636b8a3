#!/usr/bin/env python3
"""The CDK app: settings from cdk.json context, the trainguard stack, cdk-nag. No AWS calls here.

`trainguard` (the Lambda package in lambdas/, whose GuardConfig the stack uses) is importable once
`make setup` has installed the project into .venv.
"""

from __future__ import annotations

from aws_cdk import App, DefaultStackSynthesizer, Validations
from cdk_nag import AwsSolutionsChecks

from infra.settings import CONTEXT_KEY, Settings
from infra.stack import TrainGuardStack

STACK_NAME = "TrainGuard"


def build_app(app: App | None = None) -> App:
    """The app with its stack and the AwsSolutions checks; synthesize it with `.synth()`."""
    app = app or App()
    settings = Settings.from_context(app.node.try_get_context(CONTEXT_KEY))
    # moto server cannot run the bootstrap-version rule (see docs/local-aws.md): local deploys only.
    synthesizer = None
    if settings.local_deploy:
        synthesizer = DefaultStackSynthesizer(generate_bootstrap_version_rule=False)
    TrainGuardStack(
        app,
        STACK_NAME,
        settings=settings,
        synthesizer=synthesizer,
        description="trainguard: relaunches transient SageMaker training failures, stops stalls, reports the rest",
    )
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app


if __name__ == "__main__":
    build_app().synth()
