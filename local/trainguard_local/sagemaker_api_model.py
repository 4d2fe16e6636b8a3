"""botocore's SageMaker service model, used the way the real service would use it.

The simulated control plane validates requests against the model that the production code's client
was generated from, so a request it accepts has the shape the real API expects. botocore checks types,
required members and unknown keys (``ParamValidator``); the real service also checks enums, maximum
lengths and name patterns, which botocore leaves to the server, so this module checks those here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC
from functools import lru_cache
from typing import Any

import botocore.session
from botocore.model import OperationModel, ServiceModel, Shape
from botocore.utils import parse_to_aware_datetime
from botocore.validate import ParamValidator

# Only these shapes get their regular expression checked. The model's patterns are written for Java;
# the job-name pattern is plain enough for Python's `re`, and it is the one users trip over.
PATTERN_CHECKED_SHAPES = frozenset({"TrainingJobName"})


class SageMakerApiError(Exception):
    """An error the service answers with: HTTP 400 and ``{"__type": code, "message": message}``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@lru_cache(maxsize=1)
def sagemaker_service_model() -> ServiceModel:
    return botocore.session.get_session().get_service_model("sagemaker")


def operation_model(operation: str) -> OperationModel | None:
    model = sagemaker_service_model()
    if operation not in model.operation_names:
        return None
    return model.operation_model(operation)


def output_member_names(operation: str) -> frozenset[str]:
    op = operation_model(operation)
    if op is None or op.output_shape is None:
        return frozenset()
    return frozenset(op.output_shape.members)


def validate_request(operation: str, params: dict[str, Any]) -> None:
    """Raise ``ValidationException`` when ``params`` do not fit the operation's input shape."""
    op = operation_model(operation)
    if op is None or op.input_shape is None:
        raise ValueError(f"{operation} is not a SageMaker operation with input")
    report = ParamValidator().validate(params, op.input_shape)
    if report.has_errors():
        raise SageMakerApiError("ValidationException", report.generate_report())
    violations = list(_constraint_violations(params, op.input_shape, path=""))
    if violations:
        count = len(violations)
        noun = "validation error" if count == 1 else "validation errors"
        # Wording as the service gives it, for example (aws/sagemaker-python-sdk#384):
        # "1 validation error detected: Value 'a_b' at 'trainingJobName' failed to satisfy constraint:
        # Member must satisfy regular expression pattern: ^[a-zA-Z0-9](-*[a-zA-Z0-9])*"
        raise SageMakerApiError("ValidationException", f"{count} {noun} detected: " + "; ".join(violations))


def decode_wire_timestamps(value: Any, shape: Shape | None) -> Any:
    """Turn the epoch numbers botocore sends for timestamp members into aware UTC datetimes."""
    if shape is None:
        return value
    if (
        shape.type_name == "timestamp"
        and isinstance(value, int | float | str)
        and not isinstance(value, bool)
    ):
        return parse_to_aware_datetime(value).astimezone(UTC)
    if shape.type_name == "structure" and isinstance(value, dict):
        members = shape.members  # type: ignore[attr-defined]
        return {key: decode_wire_timestamps(item, members.get(key)) for key, item in value.items()}
    if shape.type_name == "list" and isinstance(value, list):
        return [decode_wire_timestamps(item, shape.member) for item in value]  # type: ignore[attr-defined]
    if shape.type_name == "map" and isinstance(value, dict):
        return {key: decode_wire_timestamps(item, shape.value) for key, item in value.items()}  # type: ignore[attr-defined]
    return value


def _constraint_violations(value: Any, shape: Shape, path: str) -> Iterator[str]:
    if shape.type_name == "structure" and isinstance(value, dict):
        for name, member in shape.members.items():  # type: ignore[attr-defined]
            if name in value:
                yield from _constraint_violations(value[name], member, _member_path(path, name))
    elif shape.type_name == "list" and isinstance(value, list):
        yield from _length_violation(value, shape, path)
        for index, item in enumerate(value, start=1):
            # Element paths like 'tags.1.member.value' follow the service's messages as remembered,
            # not checked against a captured response.
            yield from _constraint_violations(item, shape.member, f"{path}.{index}.member")  # type: ignore[attr-defined]
    elif shape.type_name == "map" and isinstance(value, dict):
        for key, item in value.items():
            yield from _constraint_violations(item, shape.value, f"{path}.{key}")  # type: ignore[attr-defined]
    elif shape.type_name == "string" and isinstance(value, str):
        yield from _string_violations(value, shape, path)


def _string_violations(value: str, shape: Shape, path: str) -> Iterator[str]:
    prefix = f"Value '{value}' at '{path}' failed to satisfy constraint: Member must"
    if shape.enum and value not in shape.enum:
        # Wording from aws-samples/aws-sagemaker-heart-disease-prediction#1.
        yield f"{prefix} satisfy enum value set: [{', '.join(shape.enum)}]"
    yield from _length_violation(value, shape, path)
    pattern = shape.metadata.get("pattern")
    if shape.name in PATTERN_CHECKED_SHAPES and pattern and not re.fullmatch(pattern, value):
        yield f"{prefix} satisfy regular expression pattern: ^{pattern}"


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
