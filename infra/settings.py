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
from trainguard.domain.progress_settings import FIGURE_RANGES

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

# The integer settings and their ranges: (setting, lowest, highest).
_RANGES = (
    ("default_max_retries", 0, 20),
    ("retry_budget_per_hour", 1, 1000),
    ("organization_retry_budget_per_hour", 1, 10000),
    ("log_activity_concurrency", 0, MAX_RESERVED_CONCURRENCY),
    ("capacity_backoff_minutes", 1, 1440),
    ("default_quota_ceiling", 1, MAX_QUOTA_CEILING),
    ("quota_wait_hours", 1, 720),
    ("quota_check_minutes", 5, 1440),
    ("stall_minutes", 5, 1440),
    ("gpu_idle_minutes", 5, 1440),  # the idle-GPU alarm's one-minute periods: CloudWatch allows one day of them
    ("gpu_idle_percent", 0, 50),
    ("startup_grace_minutes", 0, 720),
    # The progress rules' defaults, in their tags' bounds (docs/progress.md).
    *((bounds.setting, bounds.low, bounds.high) for bounds in FIGURE_RANGES.values()),
)
# The list settings each of whose items has a shape: (setting, its pattern, what the items must be).
_PATTERNED_LISTS = (
    ("notification_emails", _EMAIL, "email addresses"),
    ("passable_role_arns", _ROLE_ARN, "IAM role ARNs"),
    ("launchable_instance_types", _INSTANCE_TYPE, "SageMaker instance types such as 'ml.p5.48xlarge'"),
    ("checkpoint_buckets", _BUCKET, "S3 bucket names"),
    ("enrolled_accounts", _ACCOUNT, "12-digit account IDs"),
    ("enrolled_regions", _REGION, "region names"),
)


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
        for name, lowest, highest in _RANGES:
            _check(lowest <= getattr(self, name) <= highest, name, f"an integer from {lowest} to {highest}")
        _check(
            self.capacity_backoff_minutes <= self.capacity_backoff_max_minutes <= 10080,
            "capacity_backoff_max_minutes",
            "at least capacity_backoff_minutes and at most 10080",
        )
        for name, pattern, items in _PATTERNED_LISTS:
            for item in getattr(self, name):
                _check(bool(pattern.match(item)), name, f"{items} ({item!r} is not one)")
        _check(
            len(self.launchable_instance_types) <= MAX_LAUNCHABLE_TYPES,
            "launchable_instance_types",
            f"at most {MAX_LAUNCHABLE_TYPES} instance types",
        )
        self._check_quota_ceilings()
        _check(
            bool(self.enrolled_accounts) == bool(self.enrolled_regions),
            "enrolled_regions",
            "given together with enrolled_accounts (the regions their spokes run in)",
        )
        _check_organization_id(self.organization_id)
        # Read-only, so the frozen object cannot change through the mapping it was given.
        object.__setattr__(self, "quota_ceilings", MappingProxyType(dict(self.quota_ceilings)))

    def _check_quota_ceilings(self) -> None:
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

    def silent_guard_warnings(self) -> dict[str, str]:
        """What `cdk synth` warns about (infra/stack.py puts each in the synth's output, `--strict` makes it an
        error), by warning id: settings that deploy a guard which tells no one, or can relaunch nothing."""
        warnings = {}
        if not self.notification_emails and not self.chat_notifications:
            warnings["trainguard:no-one-notified"] = (
                "trainguard will tell no one: notification_emails is empty and chat_notifications is off. Put an "
                "address in notification_emails (cdk.json, context trainguard), or subscribe an endpoint to the "
                "topic of the stack output NotificationTopicArn after the deploy; then run `trainguard "
                "test-notification`. `cdk synth --strict` or `cdk deploy --strict` refuses while this warning stands."
            )
        if not self.passable_role_arns:
            warnings["trainguard:no-role-passable"] = (
                "trainguard will relaunch nothing: passable_role_arns is empty, so no relaunch may pass its job's "
                "execution role (failures are still told and stalls stopped). List the execution roles of your "
                "training jobs in passable_role_arns (cdk.json, context trainguard). `cdk synth --strict` or `cdk "
                "deploy --strict` refuses while this warning stands."
            )
        return warnings

    @property
    def quota_ceilings_json(self) -> str:
        """The ceilings as the JSON object `GuardConfig.quota_ceilings_json` carries, keys sorted."""
        return json.dumps(dict(self.quota_ceilings), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_context(cls, raw: object) -> Settings:
        """Build from the `trainguard` context value: a mapping, or a JSON string of one (from `-c`)."""
        if raw is None:
            return cls()
        raw = _parsed(raw, CONTEXT_KEY)
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
        _check_organization_id(self.organization_id)

    @classmethod
    def from_context(cls, raw: object) -> SpokeAddress | None:
        """None when the context does not ask for a spoke; else the validated address."""
        if raw is None:
            return None
        raw = _parsed(raw, SPOKE_CONTEXT_KEY)
        if not isinstance(raw, Mapping) or not all(isinstance(v, str) for v in raw.values()):
            raise SettingsError(f"context '{SPOKE_CONTEXT_KEY}' must be an object of strings")
        known = {f.name for f in fields(cls)}
        if unknown := sorted(set(raw) - known):
            raise SettingsError(f"unknown spoke setting(s) {unknown}; known: {sorted(known)}")
        try:
            return cls(**raw)
        except TypeError as err:
            raise SettingsError(f"context '{SPOKE_CONTEXT_KEY}': {err}") from None


def _parsed(raw: object, key: str) -> object:
    """The context value of `key` as given, or parsed from the JSON string `-c` passes."""
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError as err:
        raise SettingsError(f"context '{key}' is not valid JSON: {err}") from None


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


def _check_organization_id(organization_id: str) -> None:
    _check(
        not organization_id or bool(_ORGANIZATION.match(organization_id)),
        "organization_id",
        "an organization ID: 'o-' and 10 to 32 lowercase letters or digits",
    )


def _check(ok: bool, name: str, expected: str) -> None:
    if not ok:
        raise SettingsError(f"setting {name} must be {expected}")
