"""A single-account deployment keeps its resources and permissions (issue 16): the synthesized stacks' shape
(tests/infra/single_account_shape.py) against the one recorded before the organization-wide hub was built."""

from __future__ import annotations

import json

import pytest

from tests.infra.conftest import Synthesized
from tests.infra.single_account_shape import SHAPE_FILE, shape
from tests.infra.template_queries import CONFIGURED_STACK, DEFAULTS_STACK

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("stack", [CONFIGURED_STACK, DEFAULTS_STACK])
def test_the_single_account_stack_has_the_recorded_resources_and_permissions(
    synthesized: Synthesized, stack: str
) -> None:
    recorded = json.loads(SHAPE_FILE.read_text())[stack]
    now = shape(synthesized.templates[stack])

    assert now["resources"] == recorded["resources"]
    for logical_id, granted in recorded["permissions"].items():
        assert now["permissions"][logical_id] == granted, logical_id
    assert now["permissions"].keys() == recorded["permissions"].keys()
