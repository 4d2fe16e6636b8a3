"""botocore's SageMaker service model, used the way the real service would use it.

The checks themselves are generic (``json_api.JsonApiModel``); this module names SageMaker's: its
validation errors are ``ValidationException``, and the training job name is the one pattern checked (the
model's patterns are written for Java; this one is plain enough for Python's `re`, and it is the one
users trip over).
"""

from __future__ import annotations

from typing import Any

from botocore.model import OperationModel, ServiceModel

from trainguard_local.stand_in.json_api import ApiError, JsonApiModel, decode_wire_timestamps

PATTERN_CHECKED_SHAPES = frozenset({"TrainingJobName"})
SAGEMAKER_API = JsonApiModel("sagemaker", pattern_checked_shapes=PATTERN_CHECKED_SHAPES)

# The plane raises this name; it is the generic error, so any JsonApiServer answers it the same way.
SageMakerApiError = ApiError

__all__ = [
    "SAGEMAKER_API",
    "SageMakerApiError",
    "decode_wire_timestamps",
    "operation_model",
    "output_member_names",
    "sagemaker_service_model",
    "validate_request",
]


def sagemaker_service_model() -> ServiceModel:
    return SAGEMAKER_API.service_model


def operation_model(operation: str) -> OperationModel | None:
    return SAGEMAKER_API.operation_model(operation)


def output_member_names(operation: str) -> frozenset[str]:
    return SAGEMAKER_API.output_member_names(operation)


def validate_request(operation: str, params: dict[str, Any]) -> None:
    """Raise ``ValidationException`` when ``params`` do not fit the operation's input shape."""
    SAGEMAKER_API.validate_request(operation, params)
