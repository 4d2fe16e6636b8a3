"""The simulated SageMaker's List operations (sagemaker_control_plane.py): ListTrainingJobs' filters, sort and
summaries, and ListTags' pages, as botocore's service model describes them."""

from __future__ import annotations

from typing import Any

from trainguard_local.stand_in.json_api import page_of
from trainguard_local.stand_in.sagemaker_api_model import SAGEMAKER_API, SageMakerApiError

LIST_DEFAULT_MAX_RESULTS = 10  # AWS's documented default for List* operations of SageMaker
SUMMARY_MEMBERS = frozenset(SAGEMAKER_API.service_model.shape_for("TrainingJobSummary").members)
SORT_KEYS = {"CreationTime": "CreationTime", "Name": "TrainingJobName", "Status": "TrainingJobStatus"}


def list_training_jobs(described: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
    matching = [d for d in described if _listed(d, params)]
    # sort() is stable: jobs created at the same instant keep the order they came in.
    sort_key = SORT_KEYS[params.get("SortBy", "CreationTime")]
    matching.sort(key=lambda d: d[sort_key], reverse=params.get("SortOrder", "Descending") == "Descending")
    page, next_token = _page(matching, params)
    summaries = [{k: v for k, v in d.items() if k in SUMMARY_MEMBERS} for d in page]
    return {"TrainingJobSummaries": summaries, **({"NextToken": next_token} if next_token else {})}


def list_tags(tags: list[dict[str, str]], params: dict[str, Any]) -> dict[str, Any]:
    page, next_token = _page(tags, params)
    return {"Tags": page, **({"NextToken": next_token} if next_token else {})}


def _listed(described: dict[str, Any], params: dict[str, Any]) -> bool:
    """Whether a job passes ListTrainingJobs' filters (times are exclusive bounds)."""
    created, modified = described["CreationTime"], described["LastModifiedTime"]
    # NameContains is matched without regard to case; unconfirmed on AWS.
    return (
        params.get("NameContains", "").lower() in described["TrainingJobName"].lower()
        and params.get("StatusEquals", described["TrainingJobStatus"]) == described["TrainingJobStatus"]
        and ("CreationTimeAfter" not in params or created > params["CreationTimeAfter"])
        and ("CreationTimeBefore" not in params or created < params["CreationTimeBefore"])
        and ("LastModifiedTimeAfter" not in params or modified > params["LastModifiedTimeAfter"])
        and ("LastModifiedTimeBefore" not in params or modified < params["LastModifiedTimeBefore"])
    )


def _page(items: list[Any], params: dict[str, Any]) -> tuple[list[Any], str | None]:
    """One page of ``items``; the token is the offset of the next page (opaque to callers)."""
    bad_token = SageMakerApiError("ValidationException", f"Invalid pagination token: {params.get('NextToken')}")
    return page_of(items, params, default_max_results=LIST_DEFAULT_MAX_RESULTS, bad_token=bad_token)
