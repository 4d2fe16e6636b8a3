"""trainguard's tags and checkpoint settings for one launch, checked as the guard will read them.

Pure: no SageMaker SDK, no boto3. The values go through the guard's own tag readers
(`trainguard.domain.policy.read_job_policy`, `trainguard.domain.stalls.read_stall_thresholds`): a
value the guard would not read (it would fall back to its default and say so in a notification) is
refused here, at launch, with the accepted values.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from trainguard.domain.policy import PolicyDefaults, TagKeys, read_job_policy
from trainguard.domain.stalls import StallThresholds, read_stall_thresholds

CHECKPOINT_LOCAL_PATH = "/opt/ml/checkpoints"
# Limits of the CreateTrainingJob request: Tags (TagList) holds at most 50 tags; a TagKey is 1-128
# characters, a TagValue up to 256, both letters, digits, separators and `_.:/=+-@`; CheckpointConfig's
# S3Uri is at most 1024 characters and LocalPath at most 4096:
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_Tag.html
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CheckpointConfig.html
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateTrainingJob.html
MAX_TAGS = 50
MAX_TAG_KEY = 128
MAX_TAG_VALUE = 256
MAX_S3_URI = 1024
MAX_LOCAL_PATH = 4096
_TAG_PUNCTUATION = set("_.:/=+-@")
_TAG_PREFIX = re.compile(r"^[A-Za-z0-9_.:/=+@-]{1,100}$")

# The accepted values, for the error message only: the check itself is the guard's reader. A test
# holds these ranges to the readers, so the two cannot drift apart.
ACCEPTED_VALUES = {
    "max-retries": "a whole number from 0 to 20",
    "actions": "one or more of retry, notify, stop, quota, joined by + or spaces",
    "stall-minutes": "a whole number from 5 to 1440",
    "gpu-idle-minutes": "a whole number from 5 to 1440",
    "gpu-idle-percent": "a whole number from 0 to 50",
    "startup-grace-minutes": "a whole number from 0 to 720",
}
_NUMBERS = ("max_retries", "stall_minutes", "gpu_idle_minutes", "gpu_idle_percent", "startup_grace_minutes")
_FLAGS = ("dry_run", "restart_without_checkpoint", "continue_after_max_runtime")
# In the order of the tag reference of docs/tags.md.
_TAGGED = ("max_retries", "actions", *_FLAGS, *_NUMBERS[1:])


class GuardSettingsError(ValueError):
    """A setting trainguard would not read, or a tag or checkpoint location AWS would refuse."""


@dataclass(frozen=True)
class GuardSettings:
    """Opt a job in (`trainguard:enabled=true`), with its checkpoint location and its own limits.

    A setting left at None is not tagged: the job gets the deployed default. See the tag reference of docs/tags.md.
    """

    checkpoint_s3_uri: str
    checkpoint_local_path: str = CHECKPOINT_LOCAL_PATH
    max_retries: int | None = None
    actions: str | Iterable[str] | None = None
    dry_run: bool | None = None
    restart_without_checkpoint: bool | None = None
    continue_after_max_runtime: bool | None = None
    stall_minutes: int | None = None
    gpu_idle_minutes: int | None = None
    gpu_idle_percent: int | None = None
    startup_grace_minutes: int | None = None
    tag_prefix: str = "trainguard"

    def __post_init__(self) -> None:
        if not isinstance(self.actions, str | None):
            words = list(self.actions) if isinstance(self.actions, Iterable) else [self.actions]
            if not all(isinstance(word, str) for word in words):
                raise GuardSettingsError(f"actions must be words such as ['retry', 'notify'], not {self.actions!r}")
            object.__setattr__(self, "actions", "+".join(words))  # tag values cannot hold commas
        _check_checkpoint(self.checkpoint_s3_uri, self.checkpoint_local_path)
        _check_prefix(self.tag_prefix)
        _check_types(self)
        _check_with_the_guards_readers(self.tags(), TagKeys(self.tag_prefix))

    def tags(self) -> dict[str, str]:
        """The trainguard tags, {key: value}: the opt-in first, then each setting that is not None."""
        keys = TagKeys(self.tag_prefix)
        tags = {keys.enabled: "true"}
        for name in _TAGGED:
            value = getattr(self, name)
            if value is not None:
                tags[keys.key(name.replace("_", "-"))] = str(value).lower() if isinstance(value, bool) else str(value)
        return tags

    def tag_list(self, extra_tags: Mapping[str, str] | None = None) -> list[dict[str, str]]:
        """The trainguard tags and `extra_tags` (yours), as AWS takes them: [{"Key": ..., "Value": ...}]."""
        merged = self.tags()
        for key, value in (extra_tags or {}).items():
            _check_extra_tag(key, value, self.tag_prefix)
            merged[key] = value
        if len(merged) > MAX_TAGS:
            raise GuardSettingsError(f"{len(merged)} tags: a training job takes at most {MAX_TAGS}")
        return [{"Key": key, "Value": value} for key, value in merged.items()]


def _check_checkpoint(s3_uri: str, local_path: str) -> None:
    if not isinstance(s3_uri, str) or not isinstance(local_path, str):
        raise GuardSettingsError(f"checkpoint_s3_uri and checkpoint_local_path must be text, not {s3_uri!r}")
    bucket, _, _ = s3_uri.removeprefix("s3://").partition("/")
    if not s3_uri.startswith("s3://") or not bucket:
        raise GuardSettingsError(
            f"checkpoint_s3_uri {s3_uri!r} is not an s3://bucket/prefix URI: trainguard relaunches a job "
            "from the checkpoints SageMaker synced there"
        )
    if len(s3_uri) > MAX_S3_URI:
        raise GuardSettingsError(f"checkpoint_s3_uri is {len(s3_uri)} characters; CheckpointConfig takes {MAX_S3_URI}")
    if not local_path.startswith("/") or len(local_path) > MAX_LOCAL_PATH:
        raise GuardSettingsError(f"checkpoint_local_path {local_path!r} must be an absolute path in the container")


def _check_prefix(prefix: str) -> None:
    # The rule a deployment's own `tag_prefix` setting obeys (infra/settings.py), so any deployed prefix works here.
    if not _TAG_PREFIX.match(prefix) or prefix.lower().startswith("aws"):
        raise GuardSettingsError(
            f"tag_prefix {prefix!r}: a deployed tag_prefix is 1-100 of A-Z a-z 0-9 _.:/=+@-, not starting with aws"
        )


def _check_types(settings: GuardSettings) -> None:
    for name in _NUMBERS:
        value = getattr(settings, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise GuardSettingsError(f"{name} must be a whole number, not {value!r}")
    for name in _FLAGS:
        value = getattr(settings, name)
        if value is not None and not isinstance(value, bool):
            raise GuardSettingsError(f"{name} must be True or False, not {value!r}")


def _check_with_the_guards_readers(tags: dict[str, str], keys: TagKeys) -> None:
    problems = read_job_policy(tags, PolicyDefaults(), keys).problems
    problems += read_stall_thresholds(tags, StallThresholds(), keys).problems
    if problems:
        lines = []
        for problem in problems:
            name = problem.key.removeprefix(f"{keys.prefix}:")
            accepted = ACCEPTED_VALUES.get(name, "true or false")
            lines.append(f"{problem.key}={problem.value!r} is not a value trainguard reads (accepted: {accepted})")
        raise GuardSettingsError("; ".join(lines))


def _check_extra_tag(key: str, value: str, prefix: str) -> None:
    if key.startswith(f"{prefix}:"):
        raise GuardSettingsError(f"tag {key}: set trainguard's tags through GuardSettings, where they are checked")
    if key.lower().startswith("aws:"):
        raise GuardSettingsError(f"tag {key}: keys that start with aws: are reserved by AWS")
    key_ok = 0 < len(key) <= MAX_TAG_KEY and _is_tag_text(key)
    if not key_ok or not isinstance(value, str) or len(value) > MAX_TAG_VALUE or not _is_tag_text(value):
        raise GuardSettingsError(f"tag {key}={value!r} is not a valid AWS tag")


def _is_tag_text(text: str) -> bool:
    """AWS's tag pattern: letters (\\p{L}), separators (\\p{Z}), numbers (\\p{N}) and `_.:/=+-@`."""
    return all(unicodedata.category(ch)[0] in "LZN" or ch in _TAG_PUNCTUATION for ch in text)
