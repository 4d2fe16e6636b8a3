"""The guard's settings in the form each SageMaker Python SDK launcher takes.

The SDK is imported inside the functions, never at module import: `trainguard_sdk` imports without
the SDK installed (it is the optional extra `sdk`, about 1 GB, and never part of the Lambda asset).

- SDK v3 (`sagemaker>=3`, the `sdk` extra pins 3.27.0): `sagemaker.train.ModelTrainer` takes
  `tags: list[Tag]` and `checkpoint_config: CheckpointConfig(s3_uri, local_path)`, both from
  `sagemaker.core.training.configs` (`sagemaker.train.configs` re-exports them with a
  DeprecationWarning). ModelTrainer sends them as CreateTrainingJob's Tags and CheckpointConfig.
- SDK v2 (`sagemaker<3`): `sagemaker.estimator.Estimator` and its framework subclasses take
  `tags=[{"Key": ..., "Value": ...}]`, `checkpoint_s3_uri` and `checkpoint_local_path`. SDK v3 has no
  Estimator: "In V3, the unified ModelTrainer class replaces all framework-specific estimator classes"
  (https://docs.aws.amazon.com/sagemaker/latest/dg/model-checkpoints-enable.html).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from collections.abc import Mapping
from typing import Any

from trainguard_sdk.guard_settings import GuardSettings


class LauncherNotInstalled(RuntimeError):
    """The installed SageMaker Python SDK has no such launcher."""


def model_trainer_arguments(guard: GuardSettings, extra_tags: Mapping[str, str] | None = None) -> dict[str, Any]:
    """`tags` and `checkpoint_config` for `ModelTrainer(..., **model_trainer_arguments(guard))` (SDK v3)."""
    if not has_model_trainer():
        raise LauncherNotInstalled(f"{_installed_sdk()} has no sagemaker.train.ModelTrainer (SDK v3): {_INSTALL}")
    from sagemaker.core.training.configs import CheckpointConfig, Tag

    return {
        "tags": [Tag(key=tag["Key"], value=tag["Value"]) for tag in guard.tag_list(extra_tags)],
        "checkpoint_config": CheckpointConfig(s3_uri=guard.checkpoint_s3_uri, local_path=guard.checkpoint_local_path),
    }


def estimator_arguments(guard: GuardSettings, extra_tags: Mapping[str, str] | None = None) -> dict[str, Any]:
    """`tags`, `checkpoint_s3_uri` and `checkpoint_local_path` for `Estimator(..., **estimator_arguments(guard))`
    (SDK v2). Raises LauncherNotInstalled under SDK v3, which has no Estimator."""
    if not has_estimator():
        raise LauncherNotInstalled(
            f"{_installed_sdk()} has no sagemaker.estimator.Estimator: SDK v3 replaced it with "
            "sagemaker.train.ModelTrainer; use model_trainer_arguments()"
        )
    return {
        "tags": guard.tag_list(extra_tags),
        "checkpoint_s3_uri": guard.checkpoint_s3_uri,
        "checkpoint_local_path": guard.checkpoint_local_path,
    }


def has_model_trainer() -> bool:
    return _module_exists("sagemaker.train.model_trainer")


def has_estimator() -> bool:
    return _module_exists("sagemaker.estimator")


_INSTALL = "pip install 'trainguard[sdk]' (sagemaker==3.27.0)"


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a parent package is missing: no SDK at all
        return False


def _installed_sdk() -> str:
    try:
        return f"the installed SageMaker Python SDK (sagemaker {importlib.metadata.version('sagemaker')})"
    except importlib.metadata.PackageNotFoundError:
        return "this environment (no SageMaker Python SDK installed)"
