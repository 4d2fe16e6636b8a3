from __future__ import annotations

import pytest

from trainguard.domain.policy import PolicyDefaults, TagKeys, parse_tag_list, read_job_policy

KEYS = TagKeys("trainguard")
DEFAULTS = PolicyDefaults(max_retries=3)


def policy(**tags: str):
    return read_job_policy({f"trainguard:{k.replace('_', '-')}": v for k, v in tags.items()}, DEFAULTS, KEYS)


@pytest.mark.parametrize("value", ["true", "TRUE", "True", " true "])
def test_enabled_true_opts_in(value: str) -> None:
    assert policy(enabled=value).enabled


@pytest.mark.parametrize("value", ["1", "yes", "false", "", "truee", "t" * 300, "真"])
def test_anything_else_does_not_opt_in_and_says_why(value: str) -> None:
    result = policy(enabled=value)
    assert not result.enabled
    assert "only 'true' opts a job in" in result.why_not_enabled


def test_no_tag_means_not_opted_in() -> None:
    result = read_job_policy({}, DEFAULTS, KEYS)
    assert not result.enabled and "no trainguard:enabled tag" in result.why_not_enabled


def test_defaults_apply_without_override_tags() -> None:
    result = policy(enabled="true")
    assert result.max_retries == 3
    assert result.allows("retry") and not result.dry_run
    assert not result.restart_without_checkpoint
    assert result.problems == ()


@pytest.mark.parametrize(("raw", "expected"), [("0", 0), ("5", 5), (" 2 ", 2), ("20", 20)])
def test_max_retries_override(raw: str, expected: int) -> None:
    assert policy(enabled="true", max_retries=raw).max_retries == expected


@pytest.mark.parametrize("raw", ["-1", "three", "1e9", "999", "21", "", "2.5", "٣"])
def test_unreadable_max_retries_falls_back_and_is_reported(raw: str) -> None:
    result = policy(enabled="true", max_retries=raw)
    assert result.max_retries == 3
    assert [p.key for p in result.problems] == ["trainguard:max-retries"]
    assert "using the default of 3" in result.problems[0].describe()


@pytest.mark.parametrize(
    ("raw", "allowed"),
    [
        ("retry", {"notify", "retry"}),
        ("retry+stop", {"notify", "retry", "stop"}),
        ("notify retry", {"notify", "retry"}),
        ("notify", {"notify"}),
    ],
)
def test_actions_lists_use_plus_or_spaces(raw: str, allowed: set[str]) -> None:
    assert policy(enabled="true", actions=raw).actions == allowed


def test_notify_only_is_a_dry_run() -> None:
    assert policy(enabled="true", actions="notify").dry_run


def test_unknown_action_falls_back_to_the_safe_side() -> None:
    result = policy(enabled="true", actions="retry,stop")  # commas are not allowed in tag values
    assert result.dry_run
    assert "notify only" in result.problems[0].describe()


def test_dry_run_tag_and_global_dry_run() -> None:
    assert policy(enabled="true", dry_run="true").dry_run
    glob = read_job_policy({"trainguard:enabled": "true"}, PolicyDefaults(dry_run=True), KEYS)
    assert glob.dry_run
    # a job cannot switch the global dry run off
    off = read_job_policy(
        {"trainguard:enabled": "true", "trainguard:dry-run": "false"}, PolicyDefaults(dry_run=True), KEYS
    )
    assert off.dry_run


def test_flags() -> None:
    result = policy(enabled="true", restart_without_checkpoint="true", continue_after_max_runtime="TRUE")
    assert result.restart_without_checkpoint and result.continue_after_max_runtime
    bad = policy(enabled="true", restart_without_checkpoint="maybe")
    assert not bad.restart_without_checkpoint and bad.problems


def test_a_custom_prefix() -> None:
    keys = TagKeys("acme-guard")
    assert read_job_policy({"acme-guard:enabled": "true"}, DEFAULTS, keys).enabled
    assert not read_job_policy({"trainguard:enabled": "true"}, DEFAULTS, keys).enabled


def test_tags_in_both_shapes() -> None:
    assert parse_tag_list({"a": "1"}) == {"a": "1"}
    assert parse_tag_list([{"Key": "a", "Value": "1"}, {"key": "b", "value": "2"}]) == {"a": "1", "b": "2"}
    assert parse_tag_list(None) == {}
    assert parse_tag_list("a=1") == {}
    assert parse_tag_list([1, None, {"Key": 5}]) == {}
