"""Every AWS call an adapter makes is one its port method declares (trainguard.adapters.permissions.needs).

While the suite runs, each botocore call is matched to the outermost declaring method on the calling thread's
stack: the port method the workflow called, whose declaration the stack grants; or, for a call made inside a
method that takes a spoke role's credentials with the function's own role (permissions.needs_on_its_own_role),
that method's own. A call it does not declare is recorded, and the test that made it fails (tests/conftest.py).
Calls made outside any adapter method (a test's own setup, the stand-in's servers) are not checked.
"""

from __future__ import annotations

import sys
from typing import Any

from botocore.client import BaseClient

from trainguard.adapters.permissions import DECLARED_BY_CODE, OWN_ROLE_CODE

# IAM's service prefix where it is not botocore's service name, and the action that authorizes an operation
# of another name ("ListObjectsV2 ... you must have READ access to the bucket": s3:ListBucket).
IAM_PREFIX = {"service-quotas": "servicequotas"}
ACTION_OF_OPERATION = {"s3:ListObjectsV2": "s3:ListBucket"}
undeclared: list[str] = []


def action_of(client: BaseClient, operation: str) -> str:
    service = client.meta.service_model.service_name
    action = f"{IAM_PREFIX.get(service, service)}:{operation}"
    return ACTION_OF_OPERATION.get(action, action)


def _declaring_method() -> tuple[str, tuple[str, ...]] | None:
    frame, found = sys._getframe(2), None
    while frame is not None:
        if frame.f_code in OWN_ROLE_CODE:
            return frame.f_code.co_qualname, DECLARED_BY_CODE[frame.f_code]
        if frame.f_code in DECLARED_BY_CODE:
            found = (frame.f_code.co_qualname, DECLARED_BY_CODE[frame.f_code])
        frame = frame.f_back
    return found


_original = BaseClient._make_api_call


def _checked_call(self: BaseClient, operation_name: str, api_params: dict[str, Any]) -> Any:
    declaring = _declaring_method()
    if declaring is not None and action_of(self, operation_name) not in declaring[1]:
        undeclared.append(f"{declaring[0]} calls {action_of(self, operation_name)}, which it does not declare")
    return _original(self, operation_name, api_params)


def install() -> None:
    BaseClient._make_api_call = _checked_call  # type: ignore[method-assign]
