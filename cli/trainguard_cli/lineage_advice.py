"""`trainguard history`'s checkpoint advice: the interval that minimises a lineage's lost work plus its
checkpoint overhead (Young/Daly, domain/checkpoint_advice.py), from the lineage's observed failures, its
checkpoint interval and the time a write takes as S3 shows them (domain/checkpoint_health.py).

It lists the job's checkpoint prefix once (ListObjectsV2 pages: the operator's s3:ListBucket on the bucket).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from trainguard.domain.checkpoint_advice import advise, describe_advice
from trainguard.domain.checkpoint_health import checkpoint_interval, checkpoint_write_time
from trainguard.domain.checkpoints import CheckpointState
from trainguard.domain.instance_types import gpus_per_host
from trainguard.domain.model import TrainingJob, instances_of

IAM_ACTIONS = ("s3:ListBucket",)


def lineage_advice(
    job: TrainingJob, launches: Sequence[datetime | None], checkpoints: CheckpointState, now: datetime
) -> dict[str, Any]:
    """The advice for the lineage whose attempts were launched at `launches` (each relaunch after a failure
    or a stall), or why there is none."""
    interval = checkpoint_interval(checkpoints)
    launched = [moment for moment in launches if moment is not None]
    if not checkpoints.configured or interval is None or not launched:
        why = "the job has no CheckpointConfig" if not checkpoints.configured else "fewer than 3 checkpoint writes seen"
        return {"advice": None, "why": why if launched else "no launch time known"}
    failures = len(launches) - 1
    hours = max((now - min(launched)).total_seconds() / 3600, 0.0)
    kind, count = instances_of(job.description.get("ResourceConfig"))
    cost = checkpoint_write_time(checkpoints)
    figures = {
        "failures": failures,
        "hours_observed": round(hours, 2),
        "current_interval_minutes": round(interval.total_seconds() / 60, 1),
        "checkpoint_write_minutes": round(cost.total_seconds() / 60, 1),
    }
    advice = advise(
        failures=failures,
        hours_observed=hours,
        current_interval=interval,
        checkpoint_cost=cost,
        gpus=max(count, 1) * (gpus_per_host(kind) or 1),
    )
    if advice is None:
        why = "no failure yet" if not failures else "the current interval is close to the best one"
        return {"advice": None, "why": why, **figures}
    return {
        "advice": describe_advice(advice),
        "best_interval_minutes": round(advice.best.total_seconds() / 60, 1),
        "gpu_hours_saved_per_week": round(advice.gpu_hours_saved_per_week, 1),
        **figures,
    }
