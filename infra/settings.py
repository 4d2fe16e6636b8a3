"""The only reader of cdk.json context: one frozen, validated settings object.

All of trainguard's settings live under the context key `trainguard`:

    "context": {"trainguard": {"tag_prefix": "trainguard", "dry_run": true, ...}}

Override one at deploy time with `cdk deploy -c trainguard='{"dry_run": false, ...}'`
(a JSON object that replaces cdk.json's: a setting it leaves out takes its default here).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

from trainguard.config import FunctionSettings

CONTEXT_KEY = "trainguard"
_EMAIL = re.compile(r"^[^@\s,]+@[^@\s,]+\.[^@\s,]+$")
_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}$")
# A SageMaker instance type: botocore's TrainingInstanceType values (ml.<family>.<size>, families such as p6-b200).
_INSTANCE_TYPE = re.compile(r"^ml\.[a-z0-9]+(-[a-z0-9]+)?\.[a-z0-9]+$")
MAX_LAUNCHABLE_TYPES = 60  # the functions' environment variables share Lambda's 4 KB
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_TAG_PREFIX = re.compile(r"^[A-Za-z0-9_.:/=+@-]{1,100}$")
_ACCOUNT = re.compile(r"^\d{12}$")
_REGION = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d$")
# Organizations: "o-" and 10 to 32 lowercase letters or digits (the Organization data type, botocore's model).
_ORGANIZATION = re.compile(r"^o-[a-z0-9]{10,32}$")
MAX_QUOTA_CEILING = 10000
# A function may reserve up to the account's concurrency less 100, which stays unreserved ("Configuring reserved
# concurrency for a function", Lambda Developer Guide): 900 of the default 1,000.
MAX_RESERVED_CONCURRENCY = 900
MAX_QUOTA_NAME_LENGTH = 200
# The functions' environment variables share Lambda's 4 KB; the ceilings go there as JSON text.
MAX_QUOTA_CEILINGS_JSON = 2048


def _no_ceilings() -> Mapping[str, int]:
    return MappingProxyType({})


class SettingsError(ValueError):
    """cdk.json context holds a value trainguard cannot use; the message says which and why."""


@dataclass(frozen=True, kw_only=True)
class Settings(FunctionSettings):
    """The functions' settings (trainguard.config.FunctionSettings, where their defaults are) and those only the
    stack reads."""

    notification_emails: tuple[str, ...] = ()
    # A second topic that carries each notification in Amazon Q Developer's (AWS Chatbot's)
    # custom-notification format, for a Slack or Teams channel configuration to subscribe to.
    chat_notifications: bool = False
    checkpoint_buckets: tuple[str, ...] = ()
    # Quota walls: the most trainguard asks for per quota name (else the default ceiling), and how often
    # the quotas are checked.
    quota_ceilings: Mapping[str, int] = field(default_factory=_no_ceilings)
    quota_check_minutes: int = 15
    # The rule on CreateTrainingJob calls refused for a quota; it needs a CloudTrail trail (docs/deploying.md).
    watch_failed_launches: bool = False
    # Whether the stack subscribes to SageMaker's training log group (it must exist before the deploy, and
    # takes one of the group's two subscription-filter slots).
    subscribe_to_training_logs: bool = True
    # Local deploys into moto server cannot use the bootstrap-version rule (docs/local-aws.md).
    local_deploy: bool = False
    # When set, the hub's bus also requires the sender to be in this organization.
    organization_id: str = ""
    # The log-activity function's reserved concurrency, its ceiling (infra/stall_detection.py); 0: none, for an
    # account whose Lambda concurrency quota is below what reserving needs.
    log_activity_concurrency: int = 50

    def __post_init__(self) -> None:
        _check(
            bool(_TAG_PREFIX.match(self.tag_prefix)) and not self.tag_prefix.lower().startswith("aws"),
            "tag_prefix",
            "1-100 tag-key characters, not starting with 'aws'",
        )
        _check(0 <= self.default_max_retries <= 20, "default_max_retries", "an integer from 0 to 20")
        _check(1 <= self.retry_budget_per_hour <= 1000, "retry_budget_per_hour", "an integer from 1 to 1000")
        _check(
            1 <= self.organization_retry_budget_per_hour <= 10000,
            "organization_retry_budget_per_hour",
            "an integer from 1 to 10000",
        )
        _check(
            0 <= self.log_activity_concurrency <= MAX_RESERVED_CONCURRENCY,
            "log_activity_concurrency",
            f"an integer from 0 to {MAX_RESERVED_CONCURRENCY}",
        )
        _check(1 <= self.capacity_backoff_minutes <= 1440, "capacity_backoff_minutes", "1 to 1440")
        _check(
            self.capacity_backoff_minutes <= self.capacity_backoff_max_minutes <= 10080,
            "capacity_backoff_max_minutes",
            "at least capacity_backoff_minutes and at most 10080",
        )
        for email in self.notification_emails:
            _check(bool(_EMAIL.match(email)), "notification_emails", f"email addresses ({email!r} is not one)")
        for arn in self.passable_role_arns:
            _check(bool(_ROLE_ARN.match(arn)), "passable_role_arns", f"IAM role ARNs ({arn!r} is not one)")
        for instance_type in self.launchable_instance_types:
            _check(
                bool(_INSTANCE_TYPE.match(instance_type)),
                "launchable_instance_types",
                f"SageMaker instance types such as 'ml.p5.48xlarge' ({instance_type!r} is not one)",
            )
        _check(
            len(self.launchable_instance_types) <= MAX_LAUNCHABLE_TYPES,
            "launchable_instance_types",
            f"at most {MAX_LAUNCHABLE_TYPES} instance types",
        )
        for bucket in self.checkpoint_buckets:
            _check(bool(_BUCKET.match(bucket)), "checkpoint_buckets", f"S3 bucket names ({bucket!r} is not one)")
        _check(
            1 <= self.default_quota_ceiling <= MAX_QUOTA_CEILING,
            "default_quota_ceiling",
            f"an integer from 1 to {MAX_QUOTA_CEILING}",
        )
        for name, ceiling in self.quota_ceilings.items():
            _check(
                bool(name.strip()) and len(name) <= MAX_QUOTA_NAME_LENGTH,
                "quota_ceilings",
                f"keyed by quota names of 1 to {MAX_QUOTA_NAME_LENGTH} characters ({name!r} is not one)",
            )
            _check(
                1 <= ceiling <= MAX_QUOTA_CEILING,
                "quota_ceilings",
                f"integers from 1 to {MAX_QUOTA_CEILING} ({name!r}: {ceiling!r} is not one)",
            )
        _check(
            len(self.quota_ceilings_json) <= MAX_QUOTA_CEILINGS_JSON,
            "quota_ceilings",
            f"at most {MAX_QUOTA_CEILINGS_JSON} characters as JSON (Lambda environment variables share 4 KB)",
        )
        for account in self.enrolled_accounts:
            _check(bool(_ACCOUNT.match(account)), "enrolled_accounts", f"12-digit account IDs ({account!r} is not one)")
        for region in self.enrolled_regions:
            _check(bool(_REGION.match(region)), "enrolled_regions", f"region names ({region!r} is not one)")
        _check(
            bool(self.enrolled_accounts) == bool(self.enrolled_regions),
            "enrolled_regions",
            "given together with enrolled_accounts (the regions their spokes run in)",
        )
        _check(
            not self.organization_id or bool(_ORGANIZATION.match(self.organization_id)),
            "organization_id",
            "an organization ID: 'o-' and 10 to 32 lowercase letters or digits",
        )
        _check(1 <= self.quota_wait_hours <= 720, "quota_wait_hours", "an integer from 1 to 720")
        _check(5 <= self.quota_check_minutes <= 1440, "quota_check_minutes", "an integer from 5 to 1440")
        _check(5 <= self.stall_minutes <= 1440, "stall_minutes", "an integer from 5 to 1440")
        # The idle-GPU alarm evaluates one-minute periods; CloudWatch allows at most one day of them.
        _check(5 <= self.gpu_idle_minutes <= 1440, "gpu_idle_minutes", "an integer from 5 to 1440")
        _check(0 <= self.gpu_idle_percent <= 50, "gpu_idle_percent", "an integer from 0 to 50")
        _check(0 <= self.startup_grace_minutes <= 720, "startup_grace_minutes", "an integer from 0 to 720")
        # Read-only, so the frozen object cannot change through the mapping it was given.
        object.__setattr__(self, "quota_ceilings", MappingProxyType(dict(self.quota_ceilings)))

    @property
    def quota_ceilings_json(self) -> str:
        """The ceilings as the JSON object `GuardConfig.quota_ceilings_json` carries, keys sorted."""
        return json.dumps(dict(self.quota_ceilings), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_context(cls, raw: object) -> Settings:
        """Build from the `trainguard` context value: a mapping, or a JSON string of one (from `-c`)."""
        if raw is None:
            return cls()
        if isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except json.JSONDecodeError as err:
                raise SettingsError(f"context '{CONTEXT_KEY}' is not valid JSON: {err}") from None
        if not isinstance(raw, Mapping):
            raise SettingsError(f"context '{CONTEXT_KEY}' must be an object, not {type(raw).__name__}")
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(raw) - set(known))
        if unknown:
            raise SettingsError(f"unknown setting(s) {unknown}; known: {sorted(known)}")
        values: dict[str, Any] = {}
        for name, value in raw.items():
            values[name] = _coerce(name, value, str(known[name].type))
        return cls(**values)


SPOKE_CONTEXT_KEY = "trainguard_spoke"


@dataclass(frozen=True)
class SpokeAddress:
    """Where a spoke stack sends its events and whose functions it trusts (context `trainguard_spoke`):
    `{"hub_account": "111122223333", "hub_region": "us-east-1", "organization_id": "o-..."}`."""

    hub_account: str
    hub_region: str
    organization_id: str = ""

    def __post_init__(self) -> None:
        _check(bool(_ACCOUNT.match(self.hub_account)), "hub_account", "the hub's 12-digit account ID")
        _check(bool(_REGION.match(self.hub_region)), "hub_region", "the hub's region name")
        _check(
            not self.organization_id or bool(_ORGANIZATION.match(self.organization_id)),
            "organization_id",
            "an organization ID: 'o-' and 10 to 32 lowercase letters or digits",
        )

    @classmethod
    def from_context(cls, raw: object) -> SpokeAddress | None:
        """None when the context does not ask for a spoke; else the validated address."""
        if raw is None:
            return None
        if isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except json.JSONDecodeError as err:
                raise SettingsError(f"context '{SPOKE_CONTEXT_KEY}' is not valid JSON: {err}") from None
        if not isinstance(raw, Mapping) or not all(isinstance(v, str) for v in raw.values()):
            raise SettingsError(f"context '{SPOKE_CONTEXT_KEY}' must be an object of strings")
        known = {f.name for f in fields(cls)}
        if unknown := sorted(set(raw) - known):
            raise SettingsError(f"unknown spoke setting(s) {unknown}; known: {sorted(known)}")
        try:
            return cls(**raw)
        except TypeError as err:
            raise SettingsError(f"context '{SPOKE_CONTEXT_KEY}': {err}") from None


def _coerce(name: str, value: object, kind: str) -> object:
    if kind == "bool":
        if isinstance(value, bool):
            return value
        raise SettingsError(f"setting {name} must be true or false, not {value!r}")
    if kind == "int":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise SettingsError(f"setting {name} must be an integer, not {value!r}")
    if kind == "str":
        if isinstance(value, str):
            return value
        raise SettingsError(f"setting {name} must be a string, not {value!r}")
    if kind.startswith("Mapping[str, int]"):
        if isinstance(value, Mapping) and all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in value.items()
        ):
            return MappingProxyType(dict(value))
        raise SettingsError(f"setting {name} must be an object of names to integers, not {value!r}")
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise SettingsError(f"setting {name} must be a list of strings, not {value!r}")


def _check(ok: bool, name: str, expected: str) -> None:
    if not ok:
        raise SettingsError(f"setting {name} must be {expected}")
