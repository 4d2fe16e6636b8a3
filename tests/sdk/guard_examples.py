"""Settings shared by the SDK helper's tests."""

from __future__ import annotations

from typing import Any

CHECKPOINTS = "s3://ml-bucket/checkpoints/llama-pretrain-0001/"
# One value for each setting, each inside the guard's range.
EVERY_SETTING: dict[str, Any] = dict(
    max_retries=2,
    actions=["retry", "notify", "stop"],
    dry_run=False,
    restart_without_checkpoint=False,
    continue_after_max_runtime=True,
    stall_minutes=45,
    gpu_idle_minutes=15,
    gpu_idle_percent=10,
    startup_grace_minutes=30,
)
