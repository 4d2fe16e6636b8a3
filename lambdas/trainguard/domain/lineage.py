"""Where a lineage started: the launch its owner made, which bounds what every relaunch of it may grow to
(domain/fallback_options.within_bounds). A relaunch's name is trainguard's and fixed at launch; its lineage tags
are not, so the tags are believed only where they agree with the name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainguard.domain.job_end import read_lineage
from trainguard.domain.model import TrainingJob
from trainguard.domain.naming import looks_like_a_relaunch, retry_job_name
from trainguard.domain.policy import TagKeys


def lineage_root_to_describe(job: TrainingJob, keys: TagKeys) -> str:
    """The job whose launch bounds this one's fallbacks: '' when this job starts its lineage (its name is not a
    relaunch's), else the root its tags name (`lineage_start` checks them against the name)."""
    return read_lineage(job, keys).root_job if looks_like_a_relaunch(job.name) else ""


def lineage_start(job: TrainingJob, keys: TagKeys, root: TrainingJob | None) -> Mapping[str, Any] | None:
    """The ResourceConfig the lineage's first job was launched with, which a fallback's growth is measured against:
    this job's own when it starts its lineage; else the root's (`root`, described), when the tags agree with the
    name trainguard gave this job (a name is fixed at launch, tags are not); None when they do not, or the root is
    gone: then no fallback at all."""
    own = job.description.get("ResourceConfig")
    if not looks_like_a_relaunch(job.name):
        return own if isinstance(own, dict) else {}
    lineage = read_lineage(job, keys)
    if lineage.attempt < 1 or retry_job_name(lineage.root_job, lineage.attempt) != job.name:
        return None
    if root is None or root.name != lineage.root_job:
        return None
    start = root.description.get("ResourceConfig")
    return start if isinstance(start, dict) else None
