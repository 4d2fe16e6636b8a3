"""The SDK helper's settings (sdk/trainguard_sdk/guard_settings.py), without the SDK: the tags are the
ones the guard reads back, and a value the guard would not read is refused at launch with a clear error."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.sdk.guard_examples import CHECKPOINTS, EVERY_SETTING
from trainguard.domain.policy import PolicyDefaults, TagKeys, read_job_policy
from trainguard.domain.stalls import StallThresholds, read_stall_thresholds
from trainguard_sdk import (
    GuardSettings,
    GuardSettingsError,
    LauncherNotInstalled,
    estimator_arguments,
    has_estimator,
    launchers,
)
from trainguard_sdk.guard_settings import ACCEPTED_VALUES


def test_the_opt_in_comes_first_and_only_the_given_settings_are_tagged() -> None:
    assert GuardSettings(CHECKPOINTS).tags() == {"trainguard:enabled": "true"}
    assert GuardSettings(CHECKPOINTS, max_retries=0, dry_run=True).tags() == {
        "trainguard:enabled": "true",
        "trainguard:max-retries": "0",
        "trainguard:dry-run": "true",
    }


def test_the_guard_reads_every_tag_back_as_it_was_set() -> None:
    tags = GuardSettings(CHECKPOINTS, **EVERY_SETTING).tags()
    keys = TagKeys()
    policy = read_job_policy(tags, PolicyDefaults(), keys)
    thresholds = read_stall_thresholds(tags, StallThresholds(), keys)
    assert tags["trainguard:actions"] == "retry+notify+stop"
    assert (policy.enabled, policy.max_retries, policy.actions) == (True, 2, frozenset({"retry", "notify", "stop"}))
    assert (policy.restart_without_checkpoint, policy.continue_after_max_runtime) == (False, True)
    assert (thresholds.stall_minutes, thresholds.gpu_idle_minutes) == (45, 15)
    assert (thresholds.gpu_idle_percent, thresholds.startup_grace_minutes) == (10, 30)
    assert policy.problems == () and thresholds.problems == ()


def test_a_deployment_with_its_own_prefix_reads_its_own_keys() -> None:
    tags = GuardSettings(CHECKPOINTS, tag_prefix="acme-guard", max_retries=5).tags()
    assert tags == {"acme-guard:enabled": "true", "acme-guard:max-retries": "5"}
    assert read_job_policy(tags, PolicyDefaults(), TagKeys("acme-guard")).max_retries == 5


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (
            dict(max_retries=21),
            "trainguard:max-retries='21' is not a value trainguard reads (accepted: a whole number from 0 to 20)",
        ),
        (dict(max_retries=-1), "trainguard:max-retries='-1'"),
        (dict(actions="retry,notify"), "trainguard:actions='retry,notify' is not a value trainguard reads"),
        (dict(actions=["retry", "reboot"]), "trainguard:actions='retry+reboot'"),
        (dict(actions=[]), "trainguard:actions=''"),
        (dict(stall_minutes=4), "trainguard:stall-minutes='4'"),
        (dict(gpu_idle_minutes=1441), "trainguard:gpu-idle-minutes='1441'"),
        (dict(gpu_idle_percent=51), "(accepted: a whole number from 0 to 50)"),
        (dict(startup_grace_minutes=721), "trainguard:startup-grace-minutes='721'"),
        (dict(max_retries=True), "max_retries must be a whole number, not True"),
        (dict(stall_minutes=30.5), "stall_minutes must be a whole number, not 30.5"),
        (dict(dry_run="yes"), "dry_run must be True or False, not 'yes'"),
        (dict(actions=5), "actions must be words such as ['retry', 'notify'], not 5"),
        (dict(actions=["retry", None]), "actions must be words"),
    ],
)
def test_a_value_the_guard_would_not_read_is_refused_at_launch(setting: dict[str, Any], message: str) -> None:
    with pytest.raises(GuardSettingsError) as refused:
        GuardSettings(CHECKPOINTS, **setting)
    assert message in str(refused.value)


def test_every_bad_value_is_named_at_once() -> None:
    with pytest.raises(GuardSettingsError) as refused:
        GuardSettings(CHECKPOINTS, max_retries=99, gpu_idle_percent=99)
    assert "trainguard:max-retries='99'" in str(refused.value)
    assert "trainguard:gpu-idle-percent='99'" in str(refused.value)


@pytest.mark.parametrize("tag", [name for name, text in ACCEPTED_VALUES.items() if "whole number" in text])
def test_the_ranges_in_the_messages_are_the_ranges_the_guard_reads(tag: str) -> None:
    low, high = map(int, re.findall(r"from (\d+) to (\d+)", ACCEPTED_VALUES[tag])[0])
    field = tag.replace("-", "_")
    for inside in (low, high):
        settings: dict[str, Any] = {field: inside}
        assert GuardSettings(CHECKPOINTS, **settings).tags()[f"trainguard:{tag}"] == str(inside)
    for outside in (low - 1, high + 1):
        settings = {field: outside}
        with pytest.raises(GuardSettingsError, match=f"trainguard:{tag}="):
            GuardSettings(CHECKPOINTS, **settings)


@pytest.mark.parametrize(
    ("uri", "local_path"),
    [
        ("", "/opt/ml/checkpoints"),
        ("ml-bucket/checkpoints/", "/opt/ml/checkpoints"),
        ("https://ml-bucket.s3.amazonaws.com/checkpoints/", "/opt/ml/checkpoints"),  # trainguard lists s3:// only
        ("s3://", "/opt/ml/checkpoints"),
        ("s3:///checkpoints", "/opt/ml/checkpoints"),
        ("s3://ml-bucket/" + "k" * 1010, "/opt/ml/checkpoints"),  # CheckpointConfig.S3Uri: at most 1024
        (CHECKPOINTS, "checkpoints"),
    ],
)
def test_a_checkpoint_location_sagemaker_or_the_guard_cannot_use_is_refused(uri: str, local_path: str) -> None:
    with pytest.raises(GuardSettingsError, match="checkpoint"):
        GuardSettings(uri, checkpoint_local_path=local_path)


@pytest.mark.parametrize("prefix", ["", "aws", "AWS-guard", "has,comma", "x" * 101])
def test_a_prefix_no_deployment_can_have_is_refused(prefix: str) -> None:
    with pytest.raises(GuardSettingsError, match="tag_prefix"):
        GuardSettings(CHECKPOINTS, tag_prefix=prefix)


def test_your_own_tags_come_after_the_guards() -> None:
    tag_list = GuardSettings(CHECKPOINTS, max_retries=1).tag_list({"team": "nlp", "cost-center": "4711"})
    assert tag_list == [
        {"Key": "trainguard:enabled", "Value": "true"},
        {"Key": "trainguard:max-retries", "Value": "1"},
        {"Key": "team", "Value": "nlp"},
        {"Key": "cost-center", "Value": "4711"},
    ]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"trainguard:max-retries": "50"}, "set trainguard's tags through GuardSettings"),
        ({"trainguard:retry-of": "other-job"}, "set trainguard's tags through GuardSettings"),
        ({"aws:cloudformation:stack-name": "x"}, "reserved by AWS"),
        ({"team": "a,b"}, "not a valid AWS tag"),
        ({"k" * 129: "v"}, "not a valid AWS tag"),
        ({f"tag-{n}": "v" for n in range(50)}, "51 tags: a training job takes at most 50"),
    ],
)
def test_your_own_tags_are_refused_when_aws_or_the_guard_would_be_misled(extra: dict[str, str], message: str) -> None:
    with pytest.raises(GuardSettingsError, match=re.escape(message)):
        GuardSettings(CHECKPOINTS).tag_list(extra)


def test_the_installed_sdk_v3_has_no_estimator_and_the_helper_says_so() -> None:
    assert not has_estimator()
    with pytest.raises(LauncherNotInstalled) as refused:
        estimator_arguments(GuardSettings(CHECKPOINTS))
    assert "sagemaker 3.27.0" in str(refused.value) and "model_trainer_arguments()" in str(refused.value)


def test_under_sdk_v2_the_estimator_gets_its_own_argument_names(monkeypatch: pytest.MonkeyPatch) -> None:
    # SDK v2 is not installed here: this checks the form only, against the names AWS documents for the
    # v2 Estimator (checkpoint_s3_uri, checkpoint_local_path, tags as Key/Value dicts):
    # https://docs.aws.amazon.com/sagemaker/latest/dg/model-checkpoints-enable.html (its SDK v2 version)
    monkeypatch.setattr(launchers, "has_estimator", lambda: True)
    arguments = estimator_arguments(GuardSettings(CHECKPOINTS, max_retries=1), extra_tags={"team": "nlp"})
    assert arguments == {
        "tags": [
            {"Key": "trainguard:enabled", "Value": "true"},
            {"Key": "trainguard:max-retries", "Value": "1"},
            {"Key": "team", "Value": "nlp"},
        ],
        "checkpoint_s3_uri": CHECKPOINTS,
        "checkpoint_local_path": "/opt/ml/checkpoints",
    }
