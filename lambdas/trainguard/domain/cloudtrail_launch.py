"""Rebuild a CreateTrainingJob request from the `requestParameters` of its CloudTrail record.

A launch refused with ResourceLimitExceeded leaves no job to describe: the CloudTrail record of the
call is all that is left of it. Its `requestParameters` are the request in CloudTrail's spelling:
member names in camelCase (`trainingJobName`, `s3Uri`, `vpcConfig.securityGroupIds`), tags as
lowercase `key`/`value`, and fields the API does not accept (`disableEFA`, `trainingJobArn`,
`outputDataConfig.disableModelUpload`, ... see tests/fixtures/events/cloudtrail_record.*).

The rebuild has two steps. `_normalise` walks the record along the CreateTrainingJob input shape
(plain data from `adapters/service_model.py`) and renames each structure member to the shape's
name, matched without regard to case, so `s3Uri`, `kmsKeyId` and `volumeSizeInGB` find `S3Uri`,
`KmsKeyId` and `VolumeSizeInGB` and a member AWS adds tomorrow is found the same way. Map keys
(HyperParameters, Environment) are the user's and stay as given. Members the shape does not have
are dropped and recorded, in the record's spelling. Then request_builder's `project_onto_shape`
drops a nested structure that lacks a required member (recorded in the API's spelling,
"VpcConfig: missing Subnets"), exactly as for a relaunch from DescribeTrainingJob.

CloudTrail hides some request values behind a placeholder (HIDDEN_DUE_TO_SECURITY_REASONS), for a
single value or for a whole member. A placeholder is never the user's value: it is left out of the
request and its path is reported in `RebuiltLaunch.redacted`, so that the caller refuses the
relaunch (`refusal_reason`) instead of launching a job that differs from the one the user asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trainguard.domain.request_builder import RelaunchImpossible, Shape, project_onto_shape

# What CloudTrail writes in place of a value it will not record. The one placeholder seen in
# published records (SNS message, Lambda environment, Transfer hostKey, SSM command parameters).
CLOUDTRAIL_REDACTION_PLACEHOLDERS = frozenset({"HIDDEN_DUE_TO_SECURITY_REASONS"})


@dataclass(frozen=True)
class RebuiltLaunch:
    request: dict[str, Any]  # CreateTrainingJob parameters, in the API's spelling
    dropped: tuple[str, ...]  # what the API would not accept ("disableEFA", "VpcConfig: missing Subnets")
    redacted: tuple[str, ...]  # values CloudTrail hid ("hyperParameters.api_token"); not in `request`

    @property
    def refusal_reason(self) -> str | None:
        """Why this request must not be sent as the user's launch, or None when it may be."""
        if not self.redacted:
            return None
        return (
            f"CloudTrail hid {', '.join(self.redacted)} in the record of the launch, so the request "
            "cannot be rebuilt as the user sent it"
        )


def rebuild_create_request(request_parameters: Mapping[str, Any], input_shape: Shape) -> RebuiltLaunch:
    """The CreateTrainingJob request that `request_parameters` (a CloudTrail record's) describes.

    Raises `RelaunchImpossible` when a member the API requires is absent from the record."""
    walk = _Walk()
    normalised = walk.structure(request_parameters, input_shape, "")
    request, dropped_by_projection = project_onto_shape(normalised, input_shape)
    missing = [name for name in input_shape.get("required", ()) if name not in request]
    if missing:
        hidden = f" (CloudTrail hid {', '.join(walk.redacted)})" if walk.redacted else ""
        raise RelaunchImpossible(
            f"the CloudTrail record of the launch lacks {', '.join(missing)}, which CreateTrainingJob requires{hidden}"
        )
    return RebuiltLaunch(
        request=request,
        dropped=(*walk.dropped, *dropped_by_projection),
        redacted=tuple(walk.redacted),
    )


def is_redaction_placeholder(value: object) -> bool:
    return isinstance(value, str) and value.strip() in CLOUDTRAIL_REDACTION_PLACEHOLDERS


@dataclass
class _Walk:
    """One walk of a record along the shape, collecting what it leaves out and why."""

    dropped: list[str] = field(default_factory=list)
    redacted: list[str] = field(default_factory=list)

    def value(self, value: Any, shape: Shape, path: str) -> Any:
        """`value` with its structure members renamed to the shape's names; `_LEFT_OUT` when it
        cannot be sent (a placeholder, or not the kind of value the shape describes)."""
        if is_redaction_placeholder(value):
            self.redacted.append(path)
            return _LEFT_OUT
        kind = shape.get("type")
        if kind == "structure":
            return self.structure(value, shape, path) if self._is(value, Mapping, "an object", path) else _LEFT_OUT
        if kind == "list":
            if not self._is(value, list, "a list", path):
                return _LEFT_OUT
            items = (self.value(item, shape["member"], f"{path}[{i}]") for i, item in enumerate(value))
            return [item for item in items if item is not _LEFT_OUT]
        if kind == "map":
            if not self._is(value, Mapping, "an object", path):
                return _LEFT_OUT
            entries = ((key, self.value(item, shape["value"], f"{path}.{key}")) for key, item in value.items())
            return {key: item for key, item in entries if item is not _LEFT_OUT}
        return value  # a scalar, or a shape too deep to have been described ("opaque")

    def structure(self, value: Mapping[str, Any], shape: Shape, path: str) -> dict[str, Any]:
        members: Mapping[str, Shape] = shape.get("members", {})
        names_by_folded_case = {name.casefold(): name for name in members}
        result: dict[str, Any] = {}
        for key, item in value.items():
            member_path = f"{path}.{key}" if path else str(key)
            name = key if key in members else names_by_folded_case.get(str(key).casefold())
            if name is None:
                self.dropped.append(member_path)
                continue
            if item is None:
                continue
            if name in result:
                raise RelaunchImpossible(f"the CloudTrail record gives {member_path} twice, in different case")
            rebuilt = self.value(item, members[name], member_path)
            if rebuilt is not _LEFT_OUT:
                result[name] = rebuilt
        return result

    def _is(self, value: Any, kind: type, described_as: str, path: str) -> bool:
        if isinstance(value, kind):
            return True
        self.dropped.append(f"{path}: not {described_as}")
        return False


_LEFT_OUT: Any = object()
