"""Build the CreateTrainingJob request of a relaunch from the failed job's DescribeTrainingJob response.

The fields kept are exactly those the CreateTrainingJob input accepts, taken from botocore's
service model (passed in as plain data, see `adapters/service_model.py`), not from a hand-kept
list: a field AWS adds to both shapes tomorrow carries over by itself. Nested structures are
projected the same way, so output-only members never reach the request, and a structure that
lacks a required member after projection (an empty `VpcConfig: {}`) is dropped, not sent broken.
`project_onto_shape` is that projection; `cloudtrail_launch.py` reuses it for CloudTrail records.
What the projection cannot see (members documented as read-only, mutually exclusive pairs that a
description fills both sides of) is left out by `create_request_rules.strip_refused_members`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trainguard.domain.create_request_rules import strip_refused_members

# A shape as plain data: {"type": "structure", "members": {...}, "required": [...]},
# {"type": "list", "member": {...}}, {"type": "map", "value": {...}}, or {"type": "string"} etc.
Shape = Mapping[str, Any]

MAX_TAGS_PER_REQUEST = 50  # CreateTrainingJob Tags: max 50 (botocore model, TagList)


class RelaunchImpossible(ValueError):
    """The failed job's description cannot become a valid CreateTrainingJob request."""


@dataclass(frozen=True)
class RelaunchRequest:
    request: dict[str, Any]
    dropped: tuple[str, ...]  # paths of fields left out, for the record ("VpcConfig: missing Subnets")


def build_relaunch_request(
    description: Mapping[str, Any],
    input_shape: Shape,
    *,
    new_job_name: str,
    tags: Mapping[str, str],
) -> RelaunchRequest:
    """The request that relaunches `description` as `new_job_name`, carrying `tags`."""
    projected, dropped_by_shape = project_onto_shape(description, input_shape)
    projected, dropped_by_rules = strip_refused_members(projected)
    dropped = dropped_by_shape + dropped_by_rules
    projected["TrainingJobName"] = new_job_name
    if len(tags) > MAX_TAGS_PER_REQUEST:
        raise RelaunchImpossible(
            f"the relaunch would carry {len(tags)} tags (the job's own plus trainguard's lineage tags); "
            f"SageMaker allows {MAX_TAGS_PER_REQUEST}"
        )
    projected["Tags"] = [{"Key": key, "Value": value} for key, value in tags.items()]
    missing = [name for name in input_shape.get("required", ()) if name not in projected]
    if missing:
        raise RelaunchImpossible(f"the job's description lacks {', '.join(missing)}, which a relaunch needs")
    return RelaunchRequest(request=projected, dropped=dropped)


def project_onto_shape(value: Mapping[str, Any], shape: Shape) -> tuple[dict[str, Any], tuple[str, ...]]:
    """`value` cut down to what the structure `shape` accepts, recursively, and the paths of the
    nested structures left out because a required member was missing. Members the shape does not
    have, and None values, are left out silently; map keys are kept as given. The top level's
    required members are not checked: each caller says in its own words what is missing."""
    dropped: list[str] = []
    projected = _project_structure(value, shape, "", dropped)
    return projected or {}, tuple(dropped)


def _project(value: Any, shape: Shape, path: str, dropped: list[str]) -> Any:
    kind = shape.get("type")
    if kind == "structure":
        return _project_structure(value, shape, path, dropped) if isinstance(value, Mapping) else None
    if kind == "list":
        if not isinstance(value, list):
            return None
        items = [_project(item, shape["member"], f"{path}[{i}]", dropped) for i, item in enumerate(value)]
        kept = [item for item in items if item is not None]
        if value and not kept:  # every item was dropped: an empty list would break the API's minimum
            dropped.append(f"{path}: every item dropped")
            return None
        if not kept and shape.get("min", 0) > 0:  # an empty list as given (a CloudTrail record's), below the minimum
            dropped.append(f"{path}: an empty list, below the API's minimum of {shape['min']}")
            return None
        return kept
    if kind == "map":
        if not isinstance(value, Mapping):
            return None
        return {
            key: projected
            for key, item in value.items()
            if (projected := _project(item, shape["value"], f"{path}.{key}", dropped)) is not None
        }
    if not _is_of_kind(value, str(kind)):
        dropped.append(f"{path}: not a {kind}")
        return None
    return value


_SCALAR_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "long": (int,),
    "boolean": (bool,),
    "double": (int, float),
    "float": (int, float),
}


def _is_of_kind(value: Any, kind: str) -> bool:
    """A scalar of the type the model asks for (booleans are not integers here); other kinds pass."""
    expected = _SCALAR_TYPES.get(kind)
    if expected is None:
        return True
    if isinstance(value, bool) and bool not in expected:
        return False
    return isinstance(value, expected)


def _project_structure(value: Mapping[str, Any], shape: Shape, path: str, dropped: list[str]) -> dict | None:
    members: Mapping[str, Shape] = shape.get("members", {})
    result: dict[str, Any] = {}
    for name, item in value.items():
        if item is None or name not in members:
            continue
        projected = _project(item, members[name], f"{path}.{name}".lstrip("."), dropped)
        if projected is not None:
            result[name] = projected
    if path:  # the top level is checked by the caller, with its own message
        missing = [name for name in shape.get("required", ()) if name not in result]
        if missing:
            dropped.append(f"{path}: missing {', '.join(missing)}")
            return None
    return result
