"""Names for relaunched jobs: unique, deterministic from the lineage and the attempt number.

SageMaker's TrainingJobName: 1-63 characters, pattern `[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}`
(botocore's service model, CreateTrainingJobRequest.TrainingJobName). A deterministic name
makes CreateTrainingJob itself idempotent: a second attempt to relaunch the same failure
asks for the same name, and SageMaker refuses a duplicate.
"""

from __future__ import annotations

import hashlib
import re

MAX_JOB_NAME_LENGTH = 63
JOB_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
_DIGEST_LENGTH = 6
_RELAUNCH_SUFFIX = re.compile(r"-retry\d+$")


def retry_job_name(root_job_name: str, attempt: int) -> str:
    """The name of the `attempt`-th relaunch (1, 2, ...) of the lineage that `root_job_name` started.

    Short roots read naturally: `llama-pretrain` -> `llama-pretrain-retry1`. A root too long to
    carry the suffix is cut, and a digest of the whole root keeps two long names that share a
    prefix apart: `<cut root>-<6 hex>-retry1`.
    """
    if attempt < 1:
        raise ValueError(f"attempt must be 1 or more, not {attempt}")
    suffix = f"-retry{attempt}"
    base = _clean(root_job_name)
    if base and len(base) + len(suffix) <= MAX_JOB_NAME_LENGTH and base == root_job_name:
        return base + suffix
    digest = hashlib.sha256(root_job_name.encode("utf-8")).hexdigest()[:_DIGEST_LENGTH]
    room = MAX_JOB_NAME_LENGTH - len(suffix) - len(digest) - 1
    cut = base[:room].rstrip("-")
    name = f"{cut}-{digest}{suffix}" if cut else f"tg-{digest}{suffix}"
    return name


def lineage_of(job_name: str) -> str:
    """The job a lineage started from, as far as the name alone tells: `llama-retry2` -> `llama`.
    (A root too long for the suffix was cut and given a digest; the `root-job` tag has it whole.)"""
    return _RELAUNCH_SUFFIX.sub("", job_name) or job_name


def looks_like_a_relaunch(job_name: str) -> bool:
    """Whether the name has a relaunch's `-retryN` ending (a name is fixed at launch; tags are not)."""
    return bool(_RELAUNCH_SUFFIX.search(job_name))


def is_valid_job_name(name: str) -> bool:
    return len(name) <= MAX_JOB_NAME_LENGTH and bool(JOB_NAME_PATTERN.match(name))


def _clean(name: str) -> str:
    """Keep what the pattern allows: letters, digits, inner hyphens."""
    kept = re.sub(r"[^a-zA-Z0-9-]", "-", name)
    return kept.strip("-")
