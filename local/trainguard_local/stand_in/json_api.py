"""An AWS JSON-protocol service as its botocore model describes it, used the way the service would use it.

A simulated control plane validates requests against the model that the production code's client was
generated from, so a request it accepts has the shape the real API expects. botocore checks types,
required members and unknown keys (``ParamValidator``) and minimums; the real service also checks
enums, maximums and patterns, which botocore leaves to the server, so ``JsonApiModel`` checks those.

One ``JsonApiModel`` per simulated service (``sagemaker_api_model.SAGEMAKER_API``,
``service_quotas_catalogue.SERVICE_QUOTAS_API``); ``json_api_server.JsonApiServer`` serves any plane with
a ``handle(operation, params)`` over HTTP.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

import botocore.session
from botocore.model import OperationModel, ServiceModel, Shape
from botocore.utils import parse_to_aware_datetime
from botocore.validate import ParamValidator

NUMERIC_TYPES = frozenset({"integer", "long", "float", "double"})


class ApiError(Exception):
    """An error the service answers with: HTTP 400 and ``{"__type": code, "message": message}``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class JsonApiModel:
    """botocore's model of one service, and the checks its server makes on a request."""

    def __init__(
        self,
        service_name: str,
        *,
        validation_error_code: str = "ValidationException",
        pattern_checked_shapes: frozenset[str] = frozenset(),
    ) -> None:
        self.service_name = service_name
        self.validation_error_code = validation_error_code
        # Only these shapes get their regular expression checked: the model's patterns are written for
        # Java, and only the plain ones are safe to hand to Python's `re`.
        self.pattern_checked_shapes = pattern_checked_shapes

    @cached_property
    def service_model(self) -> ServiceModel:
        return botocore.session.get_session().get_service_model(self.service_name)

    @property
    def target_prefix(self) -> str:
        return str(self.service_model.metadata["targetPrefix"])

    def operation_model(self, operation: str) -> OperationModel | None:
        if operation not in self.service_model.operation_names:
            return None
        return self.service_model.operation_model(operation)

    def output_member_names(self, operation: str) -> frozenset[str]:
        op = self.operation_model(operation)
        if op is None or op.output_shape is None:
            return frozenset()
        return frozenset(op.output_shape.members)

    def answer_of(self, server: object, operation: str, params: dict[str, Any]) -> Callable[[dict[str, Any]], Any]:
        """The method of `server` that answers `operation` once `params` are checked: `_` and the operation's name
        in snake case (`_create_training_job`). Only an operation of the service's model reaches one (a test pins
        which do). ``ApiError`` for an operation the server does not simulate (UnknownOperationException) and for a
        request that does not fit its input."""
        known = self.operation_model(operation) is not None
        answer = getattr(server, "_" + _snake_case(operation), None) if known else None
        if answer is None:
            service = self.service_model.metadata["serviceId"]
            kind = "is not simulated here" if known else f"is not a {service} operation"
            raise ApiError("UnknownOperationException", f"Operation {operation} {kind}.")
        self.validate_request(operation, params)
        return answer  # type: ignore[no-any-return]

    def validate_request(self, operation: str, params: dict[str, Any]) -> None:
        """Raise ``ApiError(validation_error_code)`` when ``params`` do not fit the operation's input."""
        op = self.operation_model(operation)
        if op is None or op.input_shape is None:
            raise ValueError(f"{operation} is not a {self.service_name} operation with input")
        report = ParamValidator().validate(params, op.input_shape)
        if report.has_errors():
            raise ApiError(self.validation_error_code, report.generate_report())
        violations = list(_constraint_violations(params, op.input_shape, "", self.pattern_checked_shapes))
        if violations:
            count = len(violations)
            noun = "validation error" if count == 1 else "validation errors"
            # Wording as AWS services give it, for example (aws/sagemaker-python-sdk#384):
            # "1 validation error detected: Value 'a_b' at 'trainingJobName' failed to satisfy constraint:
            # Member must satisfy regular expression pattern: ^[a-zA-Z0-9](-*[a-zA-Z0-9])*"
            raise ApiError(self.validation_error_code, f"{count} {noun} detected: " + "; ".join(violations))

    def decode_request(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        """The request as the plane sees it: timestamps sent as epoch numbers become aware datetimes."""
        op = self.operation_model(operation)
        return decode_wire_timestamps(params, op.input_shape if op else None)  # type: ignore[no-any-return]


def _snake_case(operation: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", operation).lower()


def decode_wire_timestamps(value: Any, shape: Shape | None) -> Any:
    """Turn the epoch numbers botocore sends for timestamp members into aware UTC datetimes."""
    if shape is None:
        return value
    if shape.type_name == "timestamp" and isinstance(value, int | float | str) and not isinstance(value, bool):
        return parse_to_aware_datetime(value).astimezone(UTC)
    if shape.type_name == "structure" and isinstance(value, dict):
        members = shape.members  # type: ignore[attr-defined]
        return {key: decode_wire_timestamps(item, members.get(key)) for key, item in value.items()}
    if shape.type_name == "list" and isinstance(value, list):
        return [decode_wire_timestamps(item, shape.member) for item in value]  # type: ignore[attr-defined]
    if shape.type_name == "map" and isinstance(value, dict):
        return {key: decode_wire_timestamps(item, shape.value) for key, item in value.items()}  # type: ignore[attr-defined]
    return value


def wire_json(payload: dict[str, Any]) -> bytes:
    """An answer's JSON body: datetimes as the epoch numbers botocore reads back."""
    return json.dumps(payload, default=_epoch_seconds).encode()


def _epoch_seconds(value: Any) -> float:
    if isinstance(value, datetime):
        return value.timestamp()
    raise TypeError(f"cannot encode {type(value).__name__} for the wire")


def page_of(
    items: list[Any], params: dict[str, Any], *, default_max_results: int, bad_token: ApiError
) -> tuple[list[Any], str | None]:
    """One page of ``items`` and the token of the next (the offset, opaque to callers), or None at the end."""
    token = params.get("NextToken", "0")
    if not token.isdigit():
        raise bad_token
    start = int(token)
    end = start + params.get("MaxResults", default_max_results)
    return items[start:end], (str(end) if end < len(items) else None)


def _constraint_violations(value: Any, shape: Shape, path: str, checked: frozenset[str]) -> Iterator[str]:
    if shape.type_name == "structure" and isinstance(value, dict):
        for name, member in shape.members.items():  # type: ignore[attr-defined]
            if name in value:
                yield from _constraint_violations(value[name], member, _member_path(path, name), checked)
    elif shape.type_name == "list" and isinstance(value, list):
        yield from _length_violation(value, shape, path)
        for index, item in enumerate(value, start=1):
            # Element paths like 'tags.1.member.value' follow the service's messages as remembered,
            # not checked against a captured response.
            yield from _constraint_violations(item, shape.member, f"{path}.{index}.member", checked)  # type: ignore[attr-defined]
    elif shape.type_name == "map" and isinstance(value, dict):
        for key, item in value.items():
            yield from _constraint_violations(item, shape.value, f"{path}.{key}", checked)  # type: ignore[attr-defined]
    elif shape.type_name == "string" and isinstance(value, str):
        yield from _string_violations(value, shape, path, checked)
    elif shape.type_name in NUMERIC_TYPES and isinstance(value, int | float) and not isinstance(value, bool):
        maximum = shape.metadata.get("max")
        if maximum is not None and value > maximum:
            # Wording from flanksource/config-db#35 and rebuy-de/aws-nuke#1074: "Value '100' at
            # 'maxResults' failed to satisfy constraint: Member must have value less than or equal to 50".
            yield (
                f"Value '{value}' at '{path}' failed to satisfy constraint: "
                f"Member must have value less than or equal to {maximum}"
            )


def _string_violations(value: str, shape: Shape, path: str, checked: frozenset[str]) -> Iterator[str]:
    prefix = f"Value '{value}' at '{path}' failed to satisfy constraint: Member must"
    if shape.enum and value not in shape.enum:
        # Wording from aws-samples/aws-sagemaker-heart-disease-prediction#1.
        yield f"{prefix} satisfy enum value set: [{', '.join(shape.enum)}]"
    yield from _length_violation(value, shape, path)
    pattern = shape.metadata.get("pattern")
    if shape.name in checked and pattern and not re.fullmatch(pattern, value):
        anchored = pattern if pattern.startswith("^") else f"^{pattern}"
        yield f"{prefix} satisfy regular expression pattern: {anchored}"


def _length_violation(value: str | list[Any], shape: Shape, path: str) -> Iterator[str]:
    maximum = shape.metadata.get("max")
    if maximum is not None and len(value) > maximum:
        # Wording from aws-samples/sagemaker-ml-workflow-with-apache-airflow#3.
        yield (
            f"Value '{value}' at '{path}' failed to satisfy constraint: "
            f"Member must have length less than or equal to {maximum}"
        )


def _member_path(parent: str, member: str) -> str:
    camel = member[:1].lower() + member[1:]
    return f"{parent}.{camel}" if parent else camel
