"""trainguard for launches with the SageMaker Python SDK (`pip install '.[sdk]'`).

    guard = GuardSettings(checkpoint_s3_uri="s3://my-bucket/checkpoints/llama-pretrain/", max_retries=2)
    ModelTrainer(..., **model_trainer_arguments(guard))

Importing this package does not import the SDK; the functions that need it import it when called.
`trainguard_sdk.progress` prints trainguard's progress contract from inside a training loop, with the standard
library only (docs/progress.md).
"""

from trainguard_sdk.guard_settings import CHECKPOINT_LOCAL_PATH, GuardSettings, GuardSettingsError
from trainguard_sdk.launchers import (
    LauncherNotInstalled,
    estimator_arguments,
    has_estimator,
    has_model_trainer,
    model_trainer_arguments,
)

__all__ = [
    "CHECKPOINT_LOCAL_PATH",
    "GuardSettings",
    "GuardSettingsError",
    "LauncherNotInstalled",
    "estimator_arguments",
    "has_estimator",
    "has_model_trainer",
    "model_trainer_arguments",
]
