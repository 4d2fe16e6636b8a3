#!/usr/bin/env python3
"""The CDK app: settings from cdk.json context, the trainguard stack, cdk-nag. No AWS calls here.

`trainguard` (the Lambda package in lambdas/, whose GuardConfig the stack uses) is importable once
`make setup` has installed the project into .venv.
"""

from __future__ import annotations

from aws_cdk import App, DefaultStackSynthesizer, LegacyStackSynthesizer, Validations
from cdk_nag import AwsSolutionsChecks

from infra.settings import CONTEXT_KEY, SPOKE_CONTEXT_KEY, Settings, SpokeAddress
from infra.spoke_stack import TrainGuardSpokeStack
from infra.stack import TrainGuardStack

STACK_NAME = "TrainGuard"
SPOKE_STACK_NAME = "TrainGuardSpoke"


def build_app(app: App | None = None) -> App:
    """The app with its stack (and a spoke stack, when the context `trainguard_spoke` names a hub) and the
    AwsSolutions checks; synthesize it with `.synth()`."""
    app = app or App()
    settings = Settings.from_context(app.node.try_get_context(CONTEXT_KEY))
    spoke = SpokeAddress.from_context(app.node.try_get_context(SPOKE_CONTEXT_KEY))
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
    if spoke is not None:
        # The legacy synthesizer: no bootstrap roles, no bootstrap-version rule, and a template small enough to go to
        # CloudFormation inline, so `cdk deploy` (the CLI's own credentials) or StackSets put the spoke, which has no
        # asset, into accounts where nothing is bootstrapped (make deploy-local-org does, into moto server).
        TrainGuardSpokeStack(
            app,
            SPOKE_STACK_NAME,
            settings=settings,
            hub_account=spoke.hub_account,
            hub_region=spoke.hub_region,
            organization_id=spoke.organization_id,
            synthesizer=LegacyStackSynthesizer(),
            description="trainguard spoke: forwards training-job events to the hub and lets its functions act here",
        )
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app


if __name__ == "__main__":
    build_app().synth()
