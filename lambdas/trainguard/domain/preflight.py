"""Preflight: would a planned launch fit the account's SageMaker quotas? (`trainguard preflight`)

The four quotas a training launch meets (names as Service Quotas gives them, docs/aws-facts.md):
`<type> for training job usage` (or `for spot training job usage`), `Number of instances across
all training jobs`, `Maximum number of instances per training job`, `Longest run time for a
training job`. Usage is the instances of the jobs InProgress now.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

from trainguard.domain.wording import format_value

ACROSS_ALL_JOBS = "Number of instances across all training jobs"
PER_JOB = "Maximum number of instances per training job"
LONGEST_RUN = "Longest run time for a training job"


@dataclass(frozen=True)
class PlannedLaunch:
    instance_type: str
    instance_count: int
    max_runtime_seconds: int | None = None
    spot: bool = False

    @property
    def type_quota_name(self) -> str:
        kind = "spot training job usage" if self.spot else "training job usage"
        return f"{self.instance_type} for {kind}"


@dataclass(frozen=True)
class QuotaCheck:
    quota_name: str
    value: float | None  # None: no such quota in this account and region
    in_use: float
    needed: float  # the value the quota must have for the launch to fit
    blocks: bool
    explanation: str

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def check_launch(
    launch: PlannedLaunch, quota_values: Mapping[str, float | None], usage_by_type: Mapping[str, int]
) -> list[QuotaCheck]:
    """One check per quota the launch meets; `quota_values` maps quota names to their values."""
    in_use_type = usage_by_type.get(launch.instance_type, 0)
    in_use_all = sum(usage_by_type.values())
    checks = [
        _check(
            launch.type_quota_name,
            quota_values,
            in_use_type,
            in_use_type + launch.instance_count,
            f"{in_use_type} {launch.instance_type} in use + {launch.instance_count} planned",
        ),
        _check(
            ACROSS_ALL_JOBS,
            quota_values,
            in_use_all,
            in_use_all + launch.instance_count,
            f"{in_use_all} instances in use + {launch.instance_count} planned",
        ),
        _check(PER_JOB, quota_values, 0, launch.instance_count, f"{launch.instance_count} in this job"),
    ]
    if launch.max_runtime_seconds is not None:
        checks.append(
            _check(
                LONGEST_RUN,
                quota_values,
                0,
                launch.max_runtime_seconds,
                f"MaxRuntimeInSeconds {format_value(launch.max_runtime_seconds)}",
            )
        )
    return checks


def _check(name: str, values: Mapping[str, float | None], in_use: float, needed: float, what: str) -> QuotaCheck:
    value = values.get(name)
    if value is None:
        return QuotaCheck(name, None, in_use, needed, True, f"no quota named '{name}' here: {what}")
    blocks = needed > value
    verdict = "blocks the launch" if blocks else "fits"
    return QuotaCheck(
        name, value, in_use, needed, blocks, f"{what} = {format_value(needed)} against {format_value(value)}: {verdict}"
    )
