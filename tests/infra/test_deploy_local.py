"""The local-only switch that `make deploy-local` sets: app.py picks the synthesizer without the
bootstrap-version rule only when `local_deploy` is on, and that is the template's only difference.

The deploy itself (the real CDK CLI against moto server, about 40 s) runs in `.ci/run` as `make deploy-local`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from infra.settings import CONTEXT_KEY
from trainguard_local.deploy_local.deploy import STACK_NAME, local_context, project_context

pytestmark = pytest.mark.slow

# What DefaultStackSynthesizer's generate_bootstrap_version_rule adds to a template (aws-cdk-lib's
# DefaultStackSynthesizer: the SSM parameter of the bootstrap version and the rule that checks it).
BOOTSTRAP_RULE = "CheckBootstrapVersion"
BOOTSTRAP_PARAMETER = "BootstrapVersion"


def synthesize(outdir: Path, context: dict[str, Any]) -> dict[str, Any]:
    from aws_cdk import App

    import app as cdk_app

    cdk_app.build_app(App(outdir=str(outdir), context={CONTEXT_KEY: context})).synth()
    return dict(json.loads((outdir / f"{STACK_NAME}.template.json").read_text()))


@pytest.fixture(scope="module")
def production_and_local(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    """The template `cdk deploy` makes from cdk.json, and the one `make deploy-local` makes."""
    production = synthesize(tmp_path_factory.mktemp("production"), project_context())
    local = synthesize(tmp_path_factory.mktemp("local"), local_context(project_context()))
    return production, local


def test_deploy_local_deploys_the_stack_app_py_builds() -> None:
    import app as cdk_app

    assert STACK_NAME == cdk_app.STACK_NAME


def test_the_production_template_keeps_the_bootstrap_version_rule(production_and_local: Any) -> None:
    production, _ = production_and_local
    assert BOOTSTRAP_RULE in production["Rules"]
    assert production["Parameters"][BOOTSTRAP_PARAMETER]["Type"] == "AWS::SSM::Parameter::Value<String>"


def test_the_local_template_drops_the_rule_and_nothing_else(production_and_local: Any) -> None:
    production, local = production_and_local
    assert BOOTSTRAP_RULE not in local.get("Rules", {})
    assert BOOTSTRAP_PARAMETER not in local.get("Parameters", {})
    without_rule = json.loads(json.dumps(production))
    del without_rule["Rules"][BOOTSTRAP_RULE]
    del without_rule["Parameters"][BOOTSTRAP_PARAMETER]
    for section in ("Rules", "Parameters"):
        if not without_rule[section]:
            del without_rule[section]
    assert local == without_rule


def test_the_organization_deploy_names_the_apps_stacks_and_enrolls_its_spokes() -> None:
    import app as cdk_app
    from infra.settings import Settings
    from trainguard_local.deploy_local import deploy_org

    assert (deploy_org.HUB_STACK_NAME, deploy_org.SPOKE_STACK_NAME) == (
        cdk_app.STACK_NAME,
        cdk_app.SPOKE_STACK_NAME,
    )
    settings = Settings.from_context(deploy_org.hub_context())
    assert settings.local_deploy and set(settings.enrolled_accounts) == {s.account for s in deploy_org.SPOKES}
    assert set(settings.enrolled_regions) == {s.region for s in deploy_org.SPOKES}
    assert deploy_org.HUB_ACCOUNT not in settings.enrolled_accounts  # the hub's own jobs use its default bus
