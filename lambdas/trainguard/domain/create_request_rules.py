"""What CreateTrainingJob refuses although DescribeTrainingJob returns it in the same shape.

The relaunch request is DescribeTrainingJob's response projected onto CreateTrainingJob's input shape
(request_builder.py). Two kinds of member survive that projection and still get the request refused:

* **read-only members**: they sit in a shape both operations share, but botocore's model documents
  them as returned by DescribeTrainingJob only. `READ_ONLY_MEMBERS` is the one list of them;
  tests/unit/test_create_request_rules.py reads every documentation string of the CreateTrainingJob
  input and fails when botocore documents one that this list lacks.
* **mutually exclusive members**: DescribeTrainingJob may fill both members of a pair the request must
  not carry together (for a job launched with `InstancePreferences`, the instance type SageMaker gave
  it). `EXCLUSIONS` says which member wins, from the model's documentation; the same test checks that
  every "mutually exclusive" sentence of the model is covered.

A job launched with InstancePreferences is therefore relaunched with its preferences, so SageMaker picks
again from the user's ordered list, never with the type it was given last time; its training plans
(`TrainingPlanArn`, or per-preference `TrainingPlanArns`) carry over as they were.

Quotes are from botocore 1.44.8, data/sagemaker/2017-07-24/service-2.json.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ReadOnlyMember:
    path: str  # dotted, from the request's top level; "[]" walks every item of a list
    documented: str  # the model's own words


READ_ONLY_MEMBERS: tuple[ReadOnlyMember, ...] = (
    ReadOnlyMember(
        "ResourceConfig.SelectedInstanceType",
        "The instance type that SageMaker selected for the job from the provided InstancePreferences. [...] "
        "This field is read-only and isn't accepted in CreateTrainingJob requests.",
    ),
    ReadOnlyMember(
        "ResourceConfig.SelectedInstanceCount",
        "The number of instances of SelectedInstanceType that the training job launched with. [...] "
        "This field is read-only and isn't accepted in CreateTrainingJob requests.",
    ),
)


@dataclass(frozen=True)
class Exclusion:
    """When `kept` is in the request, the members of `dropped` are left out of it."""

    kept: str
    dropped: tuple[str, ...]
    documented: str
    # Only when every item of the list at `kept` carries this member ("" : always).
    only_if_every_item_has: str = ""


EXCLUSIONS: tuple[Exclusion, ...] = (
    Exclusion(
        "ResourceConfig.InstancePreferences",
        (
            "ResourceConfig.InstanceType",
            "ResourceConfig.InstanceGroups",
            "ResourceConfig.InstancePlacementConfig",
            "EnableManagedSpotTraining",
        ),
        "InstancePreferences is mutually exclusive with InstanceType, InstanceGroups, InstancePlacementConfig, "
        "and EnableManagedSpotTraining, and supports only Flexible Training Plans (FTP) and On-Demand capacity.",
    ),
    Exclusion(
        "ResourceConfig.InstancePreferences",
        ("ResourceConfig.InstanceCount",),
        "Per preference - Set InstanceCount on every preference in the InstancePreferences list and don't set "
        "ResourceConfig$InstanceCount. [...] either all five specify InstanceCount or none of them do.",
        only_if_every_item_has="InstanceCount",
    ),
    Exclusion(
        "ResourceConfig.InstancePreferences[].TrainingPlanArns",
        ("ResourceConfig.TrainingPlanArn",),
        "Per-preference TrainingPlanArns is mutually exclusive with the job-level TrainingPlanArn in ResourceConfig.",
    ),
    Exclusion(
        "AlgorithmSpecification.AlgorithmName",
        ("AlgorithmSpecification.TrainingImage",),
        "Note that the AlgorithmName parameter is mutually exclusive with the TrainingImage parameter. If you "
        "specify a value for the AlgorithmName parameter, you can't specify a value for TrainingImage, and vice versa.",
    ),
    Exclusion(
        "ServerlessJobConfig",
        ("ResourceConfig.VolumeSizeInGB",),
        "SageMaker automatically selects the volume size for serverless training jobs. You cannot customize this "
        "setting.",
    ),
)


def strip_refused_members(request: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """`request` without its read-only members and without the losing side of each exclusion, and what was
    left out, each with why ("ResourceConfig.SelectedInstanceType: read-only")."""
    result = copy.deepcopy(dict(request))
    dropped: list[str] = []
    for member in READ_ONLY_MEMBERS:
        if _remove(result, member.path):
            dropped.append(f"{member.path}: read-only, returned by DescribeTrainingJob only")
    for rule in EXCLUSIONS:
        if not _present(result, rule.kept) or not _every_item_has(result, rule):
            continue
        for path in rule.dropped:
            if _remove(result, path):
                dropped.append(f"{path}: not sent with {rule.kept}")
    return result, tuple(dropped)


def _values_at(value: Any, parts: list[str]) -> list[Any]:
    """Every value found at the path `parts` below `value` ("[]" fans out over a list's items)."""
    if not parts:
        return [value]
    head, rest = parts[0], parts[1:]
    name, fans_out = (head[:-2], True) if head.endswith("[]") else (head, False)
    if not isinstance(value, Mapping) or value.get(name) is None:
        return []
    found = value[name]
    if not fans_out:
        return _values_at(found, rest)
    items = found if isinstance(found, list) else []
    return [v for item in items for v in _values_at(item, rest)]


def _present(request: Mapping[str, Any], path: str) -> bool:
    return any(v not in (None, [], {}, "") for v in _values_at(request, path.split(".")))


def _every_item_has(request: Mapping[str, Any], rule: Exclusion) -> bool:
    if not rule.only_if_every_item_has:
        return True
    items = _values_at(request, rule.kept.split("."))
    listed = items[0] if items and isinstance(items[0], list) else []
    return bool(listed) and all(isinstance(i, Mapping) and rule.only_if_every_item_has in i for i in listed)


def _remove(request: dict[str, Any], path: str) -> bool:
    *parents, leaf = path.split(".")
    removed = False
    for holder in _values_at(request, parents) if parents else [request]:
        if isinstance(holder, dict) and leaf in holder:
            del holder[leaf]
            removed = True
    return removed
