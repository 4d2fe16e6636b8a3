"""`trainguard preflight`'s NCCL watchdog check (domain/collective_watchdog.py): a warning when the watchdog is off
or Hugging Face's ddp_timeout is not shorter than the stall limit; nothing otherwise."""

from __future__ import annotations

import pytest

from trainguard.domain.collective_watchdog import check_collective_watchdog


@pytest.mark.parametrize(
    ("environment", "hyperparameters", "warned"),
    [
        ({}, {}, []),
        ({"TORCH_NCCL_ASYNC_ERROR_HANDLING": "3"}, {}, []),  # PyTorch's default: tear down
        ({"TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}, {}, []),
        ({"TORCH_NCCL_ASYNC_ERROR_HANDLING": "0"}, {}, ["TORCH_NCCL_ASYNC_ERROR_HANDLING=0"]),
        ({"NCCL_ASYNC_ERROR_HANDLING": "0"}, {}, ["NCCL_ASYNC_ERROR_HANDLING=0"]),  # the older name
        ({}, {"ddp_timeout": "600"}, []),
        ({}, {"ddp_timeout": "1799"}, []),
        ({}, {"ddp_timeout": "1800"}, ["ddp_timeout=1800 s"]),  # Hugging Face's default: as long as the limit
        ({}, {"ddp_timeout": '"7200"'}, ["ddp_timeout=7200 s"]),  # JSON-encoded, as the framework estimators send
        ({}, {"ddp_timeout": "soon"}, ["ddp_timeout='soon' is not a number"]),
    ],
)
def test_the_watchdog_is_warned_about_only_when_it_cannot_fire_before_the_stall_limit(
    environment: dict[str, str], hyperparameters: dict[str, str], warned: list[str]
) -> None:
    warnings = check_collective_watchdog(environment, hyperparameters, stall_minutes=30)
    assert len(warnings) == len(warned), warnings
    for warning, start in zip(warnings, warned, strict=True):
        assert warning.startswith(start), warning


def test_the_limit_is_the_jobs_own_stall_minutes() -> None:
    assert check_collective_watchdog({}, {"ddp_timeout": "1800"}, stall_minutes=60) == []
    assert "(20 min)" in check_collective_watchdog({}, {"ddp_timeout": "1800"}, stall_minutes=20)[0]
