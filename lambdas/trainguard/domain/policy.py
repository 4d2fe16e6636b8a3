"""Opt-in and per-job policy, read from a training job's tags.

AWS tag values cannot contain commas, so list values use spaces or '+'
(`trainguard:actions=retry+notify`). A value that cannot be read falls back to the
default and is reported as a `TagProblem`, so the notification can say so.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from trainguard.domain.wording import format_value

# Actions a tag may allow. `notify` is always done; a job whose actions are only
# `notify` runs in dry-run: trainguard says what it would do and does nothing.
KNOWN_ACTIONS = frozenset({"notify", "retry", "stop", "quota"})
DEFAULT_ACTIONS = frozenset({"notify", "retry", "stop", "quota"})
MAX_RETRIES_CEILING = 20
_TRUE = "true"
_FALSE = "false"


@dataclass(frozen=True)
class PolicyDefaults:
    max_retries: int = 3
    dry_run: bool = False
    restart_without_checkpoint: bool = False
    continue_after_max_runtime: bool = False


@dataclass(frozen=True)
class TagKeys:
    """The tag keys trainguard reads and writes, under one prefix (default `trainguard`)."""

    prefix: str = "trainguard"

    def key(self, name: str) -> str:
        return f"{self.prefix}:{name}"

    @property
    def enabled(self) -> str:
        return self.key("enabled")

    @property
    def max_retries(self) -> str:
        return self.key("max-retries")

    @property
    def actions(self) -> str:
        return self.key("actions")

    @property
    def dry_run(self) -> str:
        return self.key("dry-run")

    @property
    def restart_without_checkpoint(self) -> str:
        return self.key("restart-without-checkpoint")

    @property
    def continue_after_max_runtime(self) -> str:
        return self.key("continue-after-max-runtime")

    # Fallbacks the owner allows (domain/fallbacks.py).
    @property
    def fallback_types(self) -> str:
        return self.key("fallback-types")

    @property
    def on_demand_after(self) -> str:
        return self.key("on-demand-after")

    # The job's own progress rule (domain/progress_rule.py).
    @property
    def progress_pattern(self) -> str:
        return self.key("progress-pattern")

    @property
    def progress_interval_seconds(self) -> str:
        return self.key("progress-interval-seconds")

    @property
    def progress_start_seconds(self) -> str:
        return self.key("progress-start-seconds")

    # The owner's leave to act on what the job's step lines show (docs/pace.md); without it, told only.
    @property
    def relaunch_if_slow(self) -> str:
        return self.key("relaunch-if-slow")

    @property
    def stop_if_diverged(self) -> str:
        return self.key("stop-if-diverged")

    # Lineage tags, written by trainguard on every relaunch.
    @property
    def root_job(self) -> str:
        return self.key("root-job")

    @property
    def attempt(self) -> str:
        return self.key("attempt")

    @property
    def retry_of(self) -> str:
        return self.key("retry-of")

    @property
    def spot_failures(self) -> str:
        """Spot failures (past MaxWait, spot capacity refused) so far in the lineage, for on-demand-after."""
        return self.key("spot-failures")

    @property
    def blocked_launch(self) -> str:
        """On a user's launch that trainguard made after a quota wall: the launch's own name."""
        return self.key("blocked-launch")


@dataclass(frozen=True)
class TagProblem:
    """A tag whose value trainguard cannot use: its key and value as written, what it uses instead, and why."""

    key: str
    value: str
    fallback: str
    why: str = ""  # what the value must be, or what is wrong with it ("" when the fallback says it)

    def describe(self) -> str:
        """One line: the value is quoted (it is the job's text), never inside trainguard's parentheses."""
        shown = self.value if len(self.value) <= 60 else self.value[:57] + "..."
        why = f": {self.why}" if self.why else ""
        return f"tag {self.key}={shown!r} could not be read{why}; using {self.fallback}"


@dataclass(frozen=True)
class JobPolicy:
    enabled: bool
    max_retries: int
    actions: frozenset[str]
    restart_without_checkpoint: bool
    continue_after_max_runtime: bool
    problems: tuple[TagProblem, ...] = field(default=())
    why_not_enabled: str = ""
    relaunch_if_slow: bool = False  # a slowdown: stop, and relaunch from the checkpoint on new instances
    stop_if_diverged: bool = False  # a divergence: stop, never relaunch

    @property
    def dry_run(self) -> bool:
        return self.actions <= {"notify"}

    def allows(self, action: str) -> bool:
        return action in self.actions


def why_not_launch_now(policy: JobPolicy, keys: TagKeys, actions: Collection[str], *, global_dry_run: bool) -> str:
    """Why a launch decided earlier is no longer wanted, read from the kill switches as they are now ("" when it
    still is): the deployer's global dry run, then the job's opt-in, `dry-run` and `actions` tags."""
    if global_dry_run:
        return "trainguard runs in dry run now (the setting dry_run): it launches nothing"
    if not policy.enabled:
        return f"the job is no longer opted in: {policy.why_not_enabled}"
    if policy.dry_run:
        return f"the job is in dry run now (its tag {keys.dry_run} or {keys.actions})"
    missing = [action for action in actions if not policy.allows(action)]
    if missing:
        return f"its tag {keys.actions} no longer allows {' or '.join(missing)}"
    return ""


def read_job_policy(tags: Mapping[str, str], defaults: PolicyDefaults, keys: TagKeys) -> JobPolicy:
    """Turn a job's tags into its policy. Never raises: bad values fall back and are reported."""
    problems: list[TagProblem] = []
    enabled, why_not = _read_enabled(tags, keys)

    max_retries = read_int_tag(
        tags, keys.max_retries, defaults.max_retries, 0, MAX_RETRIES_CEILING, problems, " relaunches"
    )

    actions = DEFAULT_ACTIONS
    if keys.actions in tags:
        raw = tags[keys.actions]
        parsed_actions = _parse_actions(raw)
        if parsed_actions is None:
            problems.append(TagProblem(keys.actions, raw, "notify only (dry run)"))
            actions = frozenset({"notify"})
        else:
            actions = parsed_actions | {"notify"}

    dry_run = defaults.dry_run
    if keys.dry_run in tags:
        parsed_flag = _parse_bool(tags[keys.dry_run])
        if parsed_flag is None:
            problems.append(TagProblem(keys.dry_run, tags[keys.dry_run], "dry run"))
            dry_run = True
        else:
            dry_run = dry_run or parsed_flag
    if dry_run:
        actions = frozenset({"notify"})

    restart = _read_flag(tags, keys.restart_without_checkpoint, defaults.restart_without_checkpoint, problems)
    cont = _read_flag(tags, keys.continue_after_max_runtime, defaults.continue_after_max_runtime, problems)
    relaunch_if_slow = _read_flag(tags, keys.relaunch_if_slow, False, problems)
    stop_if_diverged = _read_flag(tags, keys.stop_if_diverged, False, problems)
    return JobPolicy(
        enabled=enabled,
        max_retries=max_retries,
        actions=actions,
        restart_without_checkpoint=restart,
        continue_after_max_runtime=cont,
        problems=tuple(problems),
        why_not_enabled=why_not,
        relaunch_if_slow=relaunch_if_slow,
        stop_if_diverged=stop_if_diverged,
    )


def _read_enabled(tags: Mapping[str, str], keys: TagKeys) -> tuple[bool, str]:
    if keys.enabled not in tags:
        return False, f"the job has no {keys.enabled} tag"
    raw = tags[keys.enabled]
    if raw.strip().lower() == _TRUE:
        return True, ""
    shown = raw if len(raw) <= 40 else raw[:37] + "..."
    return False, f"tag {keys.enabled}={shown!r}; only 'true' opts a job in"


def _read_flag(tags: Mapping[str, str], key: str, default: bool, problems: list[TagProblem]) -> bool:
    if key not in tags:
        return default
    parsed = _parse_bool(tags[key])
    if parsed is None:
        problems.append(TagProblem(key, tags[key], f"the default ({str(default).lower()})"))
        return default
    return parsed


def _parse_bool(raw: str) -> bool | None:
    text = raw.strip().lower()
    if text == _TRUE:
        return True
    if text == _FALSE:
        return False
    return None


def read_int_tag(
    tags: Mapping[str, str], key: str, default: int, low: int, high: int, problems: list[TagProblem], unit: str
) -> int:
    """A whole number from `low` to `high` (plain ASCII digits); anything else falls back to `default`
    and is reported in `problems`, with `unit` (" min", "%") after the figure."""
    if key not in tags:
        return default
    text = tags[key].strip()
    if re.fullmatch(r"[0-9]{1,6}", text) and low <= int(text) <= high:
        return int(text)
    why = f"it must be a whole number from {format_value(low)}{unit} to {format_value(high)}{unit}"
    problems.append(TagProblem(key, tags[key], f"the default of {default}{unit}", why))
    return default


def _parse_actions(raw: str) -> frozenset[str] | None:
    words = [w for w in re.split(r"[\s+]+", raw.strip().lower()) if w]
    if not words or any(w not in KNOWN_ACTIONS for w in words):
        return None
    return frozenset(words)


def parse_tag_list(tags: object) -> dict[str, str]:
    """Tags as AWS sends them: a {key: value} map, or a [{Key, Value}] list. Anything else: empty."""
    if isinstance(tags, Mapping):
        return {str(k): str(v) for k, v in tags.items() if isinstance(k, str) and v is not None}
    if isinstance(tags, list):
        result: dict[str, str] = {}
        for item in tags:
            if isinstance(item, Mapping):
                key = item.get("Key", item.get("key"))
                value = item.get("Value", item.get("value", ""))
                if isinstance(key, str) and value is not None:
                    result[key] = str(value)
        return result
    return {}
