"""The Lambda functions' environment: one frozen object, one source for the variable names.

The CDK construct builds a `GuardConfig` and passes `to_env()` to the function; the handler
reads it back with `from_env()`. Names are never typed twice.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields

from trainguard.domain.policy import PolicyDefaults
from trainguard.domain.progress_settings import FIGURE_RANGES, ProgressSettings
from trainguard.domain.stalls import StallThresholds

_PREFIX = "TRAINGUARD_"


class ConfigError(RuntimeError):
    """The function's environment is missing or has a value that cannot be read."""


@dataclass(frozen=True, kw_only=True)
class FunctionSettings:
    """The settings the functions read, with their defaults: the one place they are written. The deploy's
    Settings (infra/settings.py) adds those only the stack reads, GuardConfig the deployed resources' names;
    cdk.json states them all (tested). The stall thresholds and the policy's defaults are the domain's own."""

    tag_prefix: str = "trainguard"
    default_max_retries: int = PolicyDefaults.max_retries
    retry_budget_per_hour: int = 20
    dry_run: bool = PolicyDefaults.dry_run
    capacity_backoff_minutes: int = 10
    capacity_backoff_max_minutes: int = 120
    # Relaunches after a hardware fault or a collective timeout ask SageMaker for its infrastructure health
    # check (CreateTrainingJob InfraCheckConfig.EnableInfraCheck) before training starts (docs/deploying.md).
    infra_check_after_host_faults: bool = False
    # The only execution roles a relaunch may pass to SageMaker (in the environment: space-separated).
    passable_role_arns: tuple[str, ...] = ()
    # The deployer's bound on what trainguard launches for anyone (SECURITY.md, "What trainguard may launch").
    # Empty: only the shape the owner launched (same types, counts, spot or not); no fallback, no on-demand move.
    # Set: every launch only on these types (the CreateTrainingJob grants carry them as sagemaker:InstanceTypes),
    # and the fallbacks and on-demand moves the owner's tags allow only among them.
    launchable_instance_types: tuple[str, ...] = ()
    # Quota walls: RequestServiceQuotaIncrease's SupportCaseAllowed, the most trainguard asks for by default,
    # and how long a blocked launch waits for its quota before it is given up.
    quota_support_case_allowed: bool = True
    default_quota_ceiling: int = 64
    quota_wait_hours: int = 72
    # Stall detection: the defaults a job's own tags can override (trainguard.domain.stalls).
    stall_minutes: int = StallThresholds.stall_minutes
    gpu_idle_minutes: int = StallThresholds.gpu_idle_minutes
    gpu_idle_percent: int = StallThresholds.gpu_idle_percent
    startup_grace_minutes: int = StallThresholds.startup_grace_minutes
    # The progress rules' figures (docs/progress.md): the defaults a job's own tags can override
    # (trainguard.domain.progress_limits, FIGURE_RANGES: each setting is its tag's name with underscores).
    progress_interval_factor: int = ProgressSettings.interval_factor
    progress_phase_margin_percent: int = ProgressSettings.phase_margin_percent
    progress_phase_minutes: int = ProgressSettings.phase_minutes
    progress_start_minutes: int = ProgressSettings.start_minutes
    # The pace and loss rules' figures (docs/pace.md), the same way.
    slowdown_percent: int = ProgressSettings.slowdown_percent
    slowdown_minutes: int = ProgressSettings.slowdown_minutes
    divergence_reports: int = ProgressSettings.divergence_reports
    divergence_jump: int = ProgressSettings.divergence_jump
    # A verified hang of a job a parent owns (a pipeline, an AWS Batch queue, a tuning job: domain/ownership.py) is
    # stopped, never relaunched; off: it is told, never stopped (docs/decisions.md, "Hangs of jobs a parent owns").
    stop_stalled_parent_jobs: bool = True
    # The organization-wide hub (docs/organization.md): the other accounts and the regions whose spokes send
    # their events to this stack's hub bus, and where it acts through their roles. None: a single-account stack.
    enrolled_accounts: tuple[str, ...] = ()
    enrolled_regions: tuple[str, ...] = ()
    # A hub's relaunches in one hour across the organization; each account also has retry_budget_per_hour.
    organization_retry_budget_per_hour: int = 100

    @property
    def is_hub(self) -> bool:
        """Whether this is an organization's hub: other accounts are enrolled."""
        return bool(self.enrolled_accounts)


@dataclass(frozen=True, kw_only=True)
class GuardConfig(FunctionSettings):
    ledger_table_name: str
    topic_arn: str
    # A second topic for Amazon Q Developer in chat applications (Slack, Teams); empty: none.
    chat_topic_arn: str = ""
    # EventBridge Scheduler: where delayed retries go, and the role it uses to invoke.
    retry_launcher_arn: str = ""
    scheduler_role_arn: str = ""
    schedule_group_name: str = "trainguard"
    # The quota ceilings as a JSON object {quota name: ceiling}; other quotas get the default ceiling.
    quota_ceilings_json: str = "{}"
    # The stack's own account: an event about a job elsewhere is acted on only in an enrolled spoke
    # (domain/origin.py). Empty outside a deployed stack (the tests, the local stand-in), where every event is its own.
    account_id: str = ""

    def __post_init__(self) -> None:
        """A progress default out of its tag's bounds fails the function at its cold start, loudly: the stack never
        writes one (infra/settings.py refuses it at synth), so one here was set by hand on the function."""
        for bounds in FIGURE_RANGES.values():
            value = getattr(self, bounds.setting)
            if not bounds.low <= value <= bounds.high:
                variable = _PREFIX + bounds.setting.upper()
                raise ConfigError(f"{variable} must be an integer from {bounds.low} to {bounds.high}, not {value!r}")

    @property
    def progress_defaults(self) -> ProgressSettings:
        """The progress rules' figures for a job with no progress tags: the deployer's."""
        return ProgressSettings(**{name: getattr(self, bounds.setting) for name, bounds in FIGURE_RANGES.items()})

    @property
    def stall_defaults(self) -> StallThresholds:
        return StallThresholds(
            stall_minutes=self.stall_minutes,
            gpu_idle_minutes=self.gpu_idle_minutes,
            gpu_idle_percent=self.gpu_idle_percent,
            startup_grace_minutes=self.startup_grace_minutes,
        )

    @property
    def quota_ceilings(self) -> dict[str, float]:
        try:
            raw = json.loads(self.quota_ceilings_json)
        except json.JSONDecodeError:
            raise ConfigError("TRAINGUARD_QUOTA_CEILINGS_JSON is not a JSON object") from None
        if not isinstance(raw, dict) or not all(isinstance(v, int | float) for v in raw.values()):
            raise ConfigError("TRAINGUARD_QUOTA_CEILINGS_JSON must map quota names to numbers")
        return {str(k): float(v) for k, v in raw.items()}

    @property
    def policy_defaults(self) -> PolicyDefaults:
        return PolicyDefaults(max_retries=self.default_max_retries, dry_run=self.dry_run)

    def to_env(self) -> dict[str, str]:
        env: dict[str, str] = {}
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, tuple):
                text = " ".join(value)
            else:
                text = str(value)
            env[_PREFIX + field.name.upper()] = text
        return env

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> GuardConfig:
        """The function's configuration, from every variable `to_env()` writes. A missing variable fails loudly:
        a function deployed without one must not run on defaults it was never given."""
        environ = os.environ if environ is None else environ
        names = {field.name: _PREFIX + field.name.upper() for field in fields(cls)}
        missing = sorted(name for name in names.values() if name not in environ)
        if missing:
            raise ConfigError(f"environment variable(s) {', '.join(missing)} not set (the stack sets every one)")
        values = {
            field.name: _parse(names[field.name], environ[names[field.name]], field.type) for field in fields(cls)
        }
        return cls(**values)  # type: ignore[arg-type]


def _parse(name: str, text: str, type_name: object) -> object:
    kind = str(type_name)
    if kind == "bool":
        if text not in ("true", "false"):
            raise ConfigError(f"{name} must be 'true' or 'false', not {text!r}")
        return text == "true"
    if kind == "int":
        try:
            return int(text)
        except ValueError:
            raise ConfigError(f"{name} must be an integer, not {text!r}") from None
    if kind.startswith("tuple"):
        return tuple(text.split())
    return text
