"""The infra tier synthesizes the app once per session (a synth costs seconds) and asserts on the result.

One `app.synth()` yields two templates: the stack as `app.py` builds it, with settings that fill every
list (emails, execution roles, checkpoint buckets) and ask for a local deploy, and the same stack
with default settings, where those lists are empty. cdk-nag runs over both, as in `cdk synth`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.infra.template_queries import CONFIGURED_CONTEXT, CONFIGURED_STACK, DEFAULTS_STACK


@dataclass(frozen=True)
class Synthesized:
    outdir: Path
    templates: dict[str, dict[str, Any]]
    validation_error: str | None

    @property
    def template(self) -> dict[str, Any]:
        return self.templates[CONFIGURED_STACK]

    @property
    def defaults_template(self) -> dict[str, Any]:
        return self.templates[DEFAULTS_STACK]

    def validation_report(self) -> dict[str, Any]:
        return json.loads((self.outdir / "validation-report.json").read_text())

    def construct_metadata(self, stack_name: str) -> dict[str, list[dict[str, Any]]]:
        """Per construct path, its metadata entries (acknowledgments are among them)."""
        return json.loads((self.outdir / f"{stack_name}.metadata.json").read_text())


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    from aws_cdk import App

    import app as cdk_app
    from infra.settings import Settings
    from infra.stack import TrainGuardStack

    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk_app.build_app(App(outdir=str(outdir), context={"trainguard": CONFIGURED_CONTEXT}))
    TrainGuardStack(app, DEFAULTS_STACK, settings=Settings())
    error: str | None = None
    try:
        app.synth()
    except RuntimeError as err:  # cdk-nag findings: ValidationFailed, templates and report are written
        error = str(err)
    templates = {
        name: json.loads((outdir / f"{name}.template.json").read_text()) for name in (CONFIGURED_STACK, DEFAULTS_STACK)
    }
    return Synthesized(outdir=outdir, templates=templates, validation_error=error)


@pytest.fixture(scope="session")
def template(synthesized: Synthesized) -> Any:
    """`aws_cdk.assertions.Template` of the configured stack."""
    from aws_cdk.assertions import Template

    return Template.from_json(synthesized.template)
