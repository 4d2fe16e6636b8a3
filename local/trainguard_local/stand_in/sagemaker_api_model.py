"""botocore's SageMaker service model, used the way the real service would use it.

The checks themselves are generic (``json_api.JsonApiModel``); this module names SageMaker's: its
validation errors are ``ValidationException``, and the training job name is the one pattern checked (the
model's patterns are written for Java; this one is plain enough for Python's `re`, and it is the one
users trip over).
"""

from __future__ import annotations

from trainguard_local.stand_in.json_api import ApiError, JsonApiModel

PATTERN_CHECKED_SHAPES = frozenset({"TrainingJobName"})
SAGEMAKER_API = JsonApiModel("sagemaker", pattern_checked_shapes=PATTERN_CHECKED_SHAPES)

# The plane raises this name; it is the generic error, so any JsonApiServer answers it the same way.
SageMakerApiError = ApiError
