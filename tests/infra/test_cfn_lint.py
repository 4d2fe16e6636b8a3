"""cfn-lint on the synthesized templates: no errors, no warnings.

Only W3005 is ignored: CDK itself adds a DependsOn on the function's role that a GetAtt already
implies (see docs/local-aws.md).
"""

from __future__ import annotations

from typing import Any

import pytest
from cfnlint.api import lint_file
from cfnlint.config import ManualArgs

from tests.infra.template_queries import CONFIGURED_STACK, DEFAULTS_STACK

pytestmark = pytest.mark.slow

IGNORED_RULES = ["W3005"]


@pytest.mark.parametrize("stack", [CONFIGURED_STACK, DEFAULTS_STACK])
def test_template_passes_cfn_lint(synthesized: Any, stack: str) -> None:
    config = ManualArgs(ignore_checks=IGNORED_RULES, regions=["us-east-1", "eu-west-1"])
    matches = lint_file(synthesized.outdir / f"{stack}.template.json", config=config)
    assert [f"{m.rule.id} {m.message} ({m.path})" for m in matches] == []
