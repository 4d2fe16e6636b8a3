"""Whether PyTorch's NCCL watchdog will turn a stuck collective into a failure before trainguard's stall limit,
read from a planned job's environment and hyperparameters (`trainguard preflight`). A warning, never a block.

The sources:
- TORCH_NCCL_ASYNC_ERROR_HANDLING: "If set to 0, no handling of asynchronous NCCL errors ... By default, it is set
  to 3" (PyTorch, ProcessGroupNCCL Environment Variables,
  https://pytorch.org/docs/stable/torch_nccl_environment_variables.html); NCCL_ASYNC_ERROR_HANDLING is its older,
  deprecated name, still read.
- The timeout is `init_process_group(timeout=...)`, which is code, not environment: 10 minutes by default for
  NCCL since pytorch/pytorch PR #110947 (torch/distributed/constants.py, default_pg_nccl_timeout). This module
  cannot see it, except through Hugging Face Trainer's `ddp_timeout` hyperparameter: "Overrides the default
  timeout for distributed training (value should be given in seconds)", default 1800
  (transformers, src/transformers/training_args.py, TrainingArguments.ddp_timeout).
"""

from __future__ import annotations

_ASYNC_ERROR_HANDLING = ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING")
HF_DDP_TIMEOUT = "ddp_timeout"


def check_collective_watchdog(
    environment: dict[str, str], hyperparameters: dict[str, str], stall_minutes: int
) -> list[str]:
    """Why the watchdog may not fail a stuck collective before the stall limit (`stall_minutes`); empty when
    nothing says so. A warning only: the stall rule still stops the hang, later and without a relaunchable error."""
    warnings = []
    for name in _ASYNC_ERROR_HANDLING:
        if environment.get(name, "").strip() == "0":
            warnings.append(
                f"{name}=0 switches off PyTorch's NCCL watchdog handling: a stuck collective hangs until "
                f"trainguard's stall limit ({stall_minutes} min) instead of failing after its timeout (default 10 min)"
            )
    raw = hyperparameters.get(HF_DDP_TIMEOUT)
    if raw is not None:
        seconds = _seconds(raw)
        if seconds is None:
            warnings.append(f"{HF_DDP_TIMEOUT}={raw!r} is not a number of seconds")
        elif seconds >= stall_minutes * 60:
            warnings.append(
                f"{HF_DDP_TIMEOUT}={seconds:g} s ({seconds / 60:g} min) is not shorter than trainguard's stall limit "
                f"({stall_minutes} min): a stuck collective is stopped as a stall, not failed by the watchdog and "
                f"relaunched; set it below {stall_minutes * 60} s, above your slowest checkpoint write"
            )
    return warnings


def _seconds(raw: str) -> float | None:
    """A hyperparameter's value as seconds; SageMaker's framework estimators send values JSON-encoded ("1800" or
    "\\"1800\\""), so surrounding quotes are removed."""
    text = raw.strip().strip('"')
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value >= 0 and value == value else None
