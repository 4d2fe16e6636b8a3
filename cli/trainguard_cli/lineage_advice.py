"""`trainguard history`'s checkpoint advice: the interval that minimises a lineage's lost work plus its
checkpoint overhead (Young/Daly, domain/checkpoint_advice.py), from the lineage's observed failures, its
checkpoint interval and the time a write takes as S3 shows them (domain/checkpoint_health.py).

It lists the job's checkpoint prefix once (ListObjectsV2 pages: the operator's s3:ListBucket on the bucket).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from trainguard.domain.checkpoint_health import advise_lineage
from trainguard.domain.checkpoints import CheckpointState
from trainguard.domain.model import TrainingJob

IAM_ACTIONS = ("s3:ListBucket",)


def lineage_advice(
    job: TrainingJob, launches: Sequence[datetime | None], checkpoints: CheckpointState, now: datetime
) -> dict[str, Any]:
    """The advice for the lineage whose attempts were launched at `launches` (each relaunch after a failure
    or a stall), or why there is none."""
    launched = [moment for moment in launches if moment is not None]
    if not launched:
        return {"advice": None, "why": "no launch time known"}
    hours = (now - min(launched)).total_seconds() / 3600
    found = advise_lineage(job, len(launches) - 1, hours, checkpoints)
    if found.advice is None:
        return {"advice": None, "why": found.why, **found.figures}
    return {
        "advice": found.sentence(),
        "best_interval_minutes": round(found.advice.best.total_seconds() / 60, 1),
        "gpu_hours_saved_per_week": round(found.advice.gpu_hours_saved_per_week, 1),
        **found.figures,
    }
