"""Settings: the one reader of cdk.json context. Defaults, `-c` JSON strings, and clear errors."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from infra.settings import CONTEXT_KEY, Settings, SettingsError

CDK_JSON = Path(__file__).resolve().parents[2] / "cdk.json"


def test_no_context_gives_the_defaults() -> None:
    settings = Settings.from_context(None)
    assert settings == Settings()
    assert settings.tag_prefix == "trainguard"
    assert (settings.default_max_retries, settings.retry_budget_per_hour) == (3, 20)
    assert settings.dry_run is False and settings.local_deploy is False
    assert settings.notification_emails == settings.passable_role_arns == settings.checkpoint_buckets == ()
    assert (settings.capacity_backoff_minutes, settings.capacity_backoff_max_minutes) == (10, 120)
    assert settings.quota_support_case_allowed is True and settings.watch_failed_launches is False
    assert (settings.default_quota_ceiling, settings.quota_wait_hours, settings.quota_check_minutes) == (64, 72, 15)
    assert dict(settings.quota_ceilings) == {} and settings.quota_ceilings_json == "{}"
    assert (
        settings.stall_minutes,
        settings.gpu_idle_minutes,
        settings.gpu_idle_percent,
        settings.startup_grace_minutes,
    ) == (30, 20, 5, 20)
    assert settings.subscribe_to_training_logs is True


def test_the_functions_settings_and_their_defaults_are_declared_once() -> None:
    """Settings (the deploy) and GuardConfig (the functions) both take FunctionSettings' fields, and no
    subclass declares one again with a default of its own; the stall and policy defaults are the domain's."""
    from dataclasses import fields

    from trainguard.config import FunctionSettings, GuardConfig
    from trainguard.domain.policy import PolicyDefaults
    from trainguard.domain.progress_settings import ProgressSettings
    from trainguard.domain.stalls import StallThresholds

    shared = {f.name: f.default for f in fields(FunctionSettings)}
    for subclass in (Settings, GuardConfig):
        assert {f.name: f.default for f in fields(subclass) if f.name in shared} == shared
        assert not set(vars(subclass)["__annotations__"]) & set(shared), subclass
    thresholds = StallThresholds()
    assert [shared[n] for n in ("stall_minutes", "gpu_idle_minutes", "gpu_idle_percent", "startup_grace_minutes")] == [
        thresholds.stall_minutes,
        thresholds.gpu_idle_minutes,
        thresholds.gpu_idle_percent,
        thresholds.startup_grace_minutes,
    ]
    progress = ProgressSettings()
    assert [shared[f"progress_{n}"] for n in ("interval_factor", "phase_margin_percent", "phase_minutes")] == [
        progress.interval_factor,
        progress.phase_margin_percent,
        progress.phase_minutes,
    ]
    assert shared["progress_start_minutes"] == progress.start_minutes
    assert (shared["default_max_retries"], shared["dry_run"]) == (
        PolicyDefaults().max_retries,
        PolicyDefaults().dry_run,
    )


def test_cdk_json_context_is_valid_and_states_the_defaults_but_ships_a_dry_run() -> None:
    """cdk.json states every setting at its default, except dry_run: a first deploy tells and does nothing."""
    context = json.loads(CDK_JSON.read_text())["context"][CONTEXT_KEY]
    assert set(context) == {f.name for f in fields(Settings)} - {"organization_id"}
    assert context["dry_run"] is True
    assert Settings.from_context({**context, "dry_run": False}) == Settings()


SOMEONE = {"notification_emails": ["ml-oncall@example.com"]}
A_ROLE = {"passable_role_arns": ["arn:aws:iam::123456789012:role/TrainingRole"]}


@pytest.mark.parametrize(
    ("context", "warned"),
    [
        ({}, {"trainguard:no-one-notified", "trainguard:no-role-passable"}),
        (SOMEONE, {"trainguard:no-role-passable"}),
        (A_ROLE, {"trainguard:no-one-notified"}),
        ({**SOMEONE, **A_ROLE}, set()),
        # The chat topic is there for a channel configuration to subscribe to: someone is meant to read it.
        ({"chat_notifications": True, **A_ROLE}, set()),
    ],
)
def test_synth_warns_of_a_guard_that_tells_no_one_or_relaunches_nothing(
    context: dict[str, Any], warned: set[str]
) -> None:
    warnings = Settings.from_context(context).silent_guard_warnings()
    assert set(warnings) == warned
    for message in warnings.values():
        assert "--strict" in message and "cdk.json" in message


def test_lists_become_tuples_and_the_object_is_frozen() -> None:
    settings = Settings.from_context(
        {
            "notification_emails": ["ml-oncall@example.com"],
            "passable_role_arns": ["arn:aws:iam::123456789012:role/team/SageMakerTrainingRole"],
            "checkpoint_buckets": ["example-checkpoints"],
        }
    )
    assert settings.notification_emails == ("ml-oncall@example.com",)
    assert settings.passable_role_arns == ("arn:aws:iam::123456789012:role/team/SageMakerTrainingRole",)
    assert settings.checkpoint_buckets == ("example-checkpoints",)
    with pytest.raises(AttributeError):
        settings.dry_run = True  # type: ignore[misc]


def test_quota_ceilings_become_a_read_only_mapping_and_sorted_json() -> None:
    ceilings = {"ml.p4d.24xlarge for training job usage": 8, "Number of instances across all training jobs": 40}
    settings = Settings.from_context({"quota_ceilings": ceilings, "default_quota_ceiling": 1})
    assert dict(settings.quota_ceilings) == ceilings
    assert json.loads(settings.quota_ceilings_json) == ceilings
    assert settings.quota_ceilings_json.index("Number") < settings.quota_ceilings_json.index("ml.p4d")
    with pytest.raises(TypeError):
        settings.quota_ceilings["ml.p5.48xlarge for training job usage"] = 1  # type: ignore[index]
    # The same settings compare equal however they were given.
    assert settings == Settings(quota_ceilings=dict(ceilings), default_quota_ceiling=1)


def test_quota_check_and_cloudtrail_rule_settings_are_read() -> None:
    settings = Settings.from_context(
        '{"quota_check_minutes": 5, "quota_wait_hours": 720, "watch_failed_launches": true,'
        ' "quota_support_case_allowed": false}'
    )
    assert (settings.quota_check_minutes, settings.quota_wait_hours) == (5, 720)
    assert settings.watch_failed_launches is True and settings.quota_support_case_allowed is False


def test_stall_settings_are_read_at_their_bounds() -> None:
    low = Settings.from_context(
        {
            "stall_minutes": 5,
            "gpu_idle_minutes": 5,
            "gpu_idle_percent": 0,
            "startup_grace_minutes": 0,
            "subscribe_to_training_logs": False,
        }
    )
    assert (low.stall_minutes, low.gpu_idle_minutes, low.gpu_idle_percent, low.startup_grace_minutes) == (5, 5, 0, 0)
    assert low.subscribe_to_training_logs is False
    high = Settings.from_context(
        '{"stall_minutes": 1440, "gpu_idle_minutes": 1440, "gpu_idle_percent": 50, "startup_grace_minutes": 720}'
    )
    assert (high.stall_minutes, high.gpu_idle_minutes, high.gpu_idle_percent, high.startup_grace_minutes) == (
        1440,
        1440,
        50,
        720,
    )


def test_a_json_string_from_the_command_line_is_parsed() -> None:
    settings = Settings.from_context('{"dry_run": true, "retry_budget_per_hour": 5, "tag_prefix": "guard"}')
    assert (settings.dry_run, settings.retry_budget_per_hour, settings.tag_prefix) == (True, 5, "guard")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"max_retries": 3}, "unknown setting(s) ['max_retries']"),
        ({"notification_emails": ["not-an-email"]}, "'not-an-email' is not one"),
        ({"notification_emails": ["a@b.com,c@d.com"]}, "notification_emails must be email addresses"),
        (
            {"passable_role_arns": ["arn:aws:iam::123456789012:user/alice"]},
            "passable_role_arns must be IAM role ARNs",
        ),
        ({"passable_role_arns": ["SageMakerTrainingRole"]}, "'SageMakerTrainingRole' is not one"),
        ({"retry_budget_per_hour": -1}, "retry_budget_per_hour must be an integer from 1 to 1000"),
        ({"default_max_retries": -1}, "default_max_retries must be an integer from 0 to 20"),
        ({"retry_budget_per_hour": "20"}, "retry_budget_per_hour must be an integer, not '20'"),
        ({"dry_run": "false"}, "dry_run must be true or false, not 'false'"),
        ({"default_max_retries": True}, "default_max_retries must be an integer, not True"),
        ({"notification_emails": "ml-oncall@example.com"}, "notification_emails must be a list of strings"),
        ({"checkpoint_buckets": ["Not_A_Bucket"]}, "checkpoint_buckets must be S3 bucket names"),
        ({"tag_prefix": "aws:guard"}, "tag_prefix must be 1-100 tag-key characters, not starting with 'aws'"),
        (
            {"capacity_backoff_minutes": 30, "capacity_backoff_max_minutes": 20},
            "capacity_backoff_max_minutes",
        ),
        ({"default_quota_ceiling": 0}, "default_quota_ceiling must be an integer from 1 to 10000"),
        ({"default_quota_ceiling": 10001}, "default_quota_ceiling must be an integer from 1 to 10000"),
        ({"quota_ceilings": {"ml.p4d.24xlarge for training job usage": 0}}, "quota_ceilings must be integers"),
        ({"quota_ceilings": {"ml.p4d.24xlarge for training job usage": 10001}}, "1 to 10000"),
        ({"quota_ceilings": {"ml.p4d.24xlarge for training job usage": 8.5}}, "an object of names to integers"),
        ({"quota_ceilings": {"ml.p4d.24xlarge for training job usage": True}}, "an object of names to integers"),
        ({"quota_ceilings": {"ml.p4d.24xlarge for training job usage": "8"}}, "an object of names to integers"),
        ({"quota_ceilings": [["ml.p4d.24xlarge for training job usage", 8]]}, "an object of names to integers"),
        ({"quota_ceilings": {" ": 8}}, "quota_ceilings must be keyed by quota names of 1 to 200 characters"),
        ({"quota_ceilings": {"x" * 201: 8}}, "quota_ceilings must be keyed by quota names"),
        ({"quota_ceilings": {f"quota {i:03d} for training job usage": 8 for i in range(80)}}, "at most 2048"),
        ({"quota_wait_hours": 0}, "quota_wait_hours must be an integer from 1 to 720"),
        ({"quota_wait_hours": 721}, "quota_wait_hours must be an integer from 1 to 720"),
        ({"quota_check_minutes": 4}, "quota_check_minutes must be an integer from 5 to 1440"),
        ({"quota_check_minutes": 1441}, "quota_check_minutes must be an integer from 5 to 1440"),
        ({"watch_failed_launches": "true"}, "watch_failed_launches must be true or false"),
        ({"quota_support_case_allowed": 1}, "quota_support_case_allowed must be true or false"),
        ({"stall_minutes": 4}, "stall_minutes must be an integer from 5 to 1440"),
        ({"stall_minutes": 1441}, "stall_minutes must be an integer from 5 to 1440"),
        ({"stall_minutes": 30.5}, "stall_minutes must be an integer, not 30.5"),
        ({"gpu_idle_minutes": 4}, "gpu_idle_minutes must be an integer from 5 to 1440"),
        ({"gpu_idle_minutes": 1441}, "gpu_idle_minutes must be an integer from 5 to 1440"),
        ({"gpu_idle_percent": -1}, "gpu_idle_percent must be an integer from 0 to 50"),
        ({"gpu_idle_percent": 51}, "gpu_idle_percent must be an integer from 0 to 50"),
        ({"startup_grace_minutes": -1}, "startup_grace_minutes must be an integer from 0 to 720"),
        ({"startup_grace_minutes": 721}, "startup_grace_minutes must be an integer from 0 to 720"),
        # The progress rules' defaults, in their tags' bounds (docs/tags.md).
        ({"progress_interval_factor": 1}, "progress_interval_factor must be an integer from 2 to 20"),
        ({"progress_interval_factor": 21}, "progress_interval_factor must be an integer from 2 to 20"),
        ({"progress_phase_margin_percent": 9}, "progress_phase_margin_percent must be an integer from 10 to 1000"),
        ({"progress_phase_margin_percent": 1001}, "progress_phase_margin_percent must be an integer from 10 to 1000"),
        ({"progress_phase_minutes": 4}, "progress_phase_minutes must be an integer from 5 to 1440"),
        ({"progress_phase_minutes": 1441}, "progress_phase_minutes must be an integer from 5 to 1440"),
        ({"progress_start_minutes": 4}, "progress_start_minutes must be an integer from 5 to 1440"),
        ({"progress_start_minutes": 1441}, "progress_start_minutes must be an integer from 5 to 1440"),
        ({"progress_start_minutes": "30"}, "progress_start_minutes must be an integer, not '30'"),
        ({"subscribe_to_training_logs": "true"}, "subscribe_to_training_logs must be true or false"),
        ("{not json", "context 'trainguard' is not valid JSON"),
        (["dry_run"], "context 'trainguard' must be an object, not list"),
    ],
)
def test_bad_values_raise_settings_error_naming_the_setting(raw: Any, message: str) -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.from_context(raw)
    assert message in str(raised.value)


def test_settings_error_is_a_value_error() -> None:
    assert issubclass(SettingsError, ValueError)


def test_a_function_environment_round_trips_and_a_missing_variable_fails_loudly() -> None:
    from trainguard.config import ConfigError, GuardConfig

    config = GuardConfig(ledger_table_name="t", topic_arn="arn:aws:sns:us-east-1:123456789012:t", dry_run=True)
    assert GuardConfig.from_env(config.to_env()) == config
    for name in config.to_env():
        environment = {k: v for k, v in config.to_env().items() if k != name}
        with pytest.raises(ConfigError, match=name):
            GuardConfig.from_env(environment)
    with pytest.raises(ConfigError, match="TRAINGUARD_DRY_RUN"):
        GuardConfig.from_env({**config.to_env(), "TRAINGUARD_DRY_RUN": "yes"})


@pytest.mark.parametrize(
    ("variable", "text", "message"),
    [
        ("TRAINGUARD_PROGRESS_INTERVAL_FACTOR", "1", "must be an integer from 2 to 20, not 1"),
        ("TRAINGUARD_PROGRESS_PHASE_MARGIN_PERCENT", "1001", "must be an integer from 10 to 1000, not 1001"),
        ("TRAINGUARD_PROGRESS_PHASE_MINUTES", "0", "must be an integer from 5 to 1440, not 0"),
        ("TRAINGUARD_PROGRESS_START_MINUTES", "-5", "must be an integer from 5 to 1440, not -5"),
        ("TRAINGUARD_PROGRESS_START_MINUTES", "soon", "must be an integer, not 'soon'"),
    ],
)
def test_a_progress_default_out_of_its_bounds_fails_the_function_at_its_cold_start(
    variable: str, text: str, message: str
) -> None:
    """Set by hand on a deployed function (the stack never writes one): the function refuses to start, naming it."""
    from trainguard.config import ConfigError, GuardConfig

    environment = GuardConfig(ledger_table_name="t", topic_arn="arn:aws:sns:us-east-1:123456789012:t").to_env()
    assert variable in environment
    with pytest.raises(ConfigError, match=f"{variable} {message}"):
        GuardConfig.from_env({**environment, variable: text})


def test_the_progress_defaults_reach_the_functions_config() -> None:
    from trainguard.config import GuardConfig
    from trainguard.domain.progress_settings import ProgressSettings

    config = GuardConfig(
        ledger_table_name="t",
        topic_arn="arn:aws:sns:us-east-1:123456789012:t",
        progress_interval_factor=5,
        progress_phase_margin_percent=80,
        progress_phase_minutes=90,
        progress_start_minutes=45,
    )
    assert GuardConfig.from_env(config.to_env()).progress_defaults == ProgressSettings(
        interval_factor=5, phase_margin_percent=80, phase_minutes=90, start_minutes=45
    )
