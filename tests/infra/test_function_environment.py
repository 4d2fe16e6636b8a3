"""The functions' environment is `GuardConfig.to_env()`: same names, values from settings or resources."""

from __future__ import annotations

from typing import Any

import pytest

from infra.settings import Settings, SettingsError
from infra.stack import guard_config
from tests.infra.template_queries import (
    ALL_HANDLERS,
    CONFIGURED_CONTEXT,
    JOB_EVENTS_HANDLER,
    RETRY_LAUNCHER_HANDLER,
    STALL_ALARMS_HANDLER,
    STALL_PROBER_HANDLER,
    function_logical_id,
    only_logical_id,
    render,
)
from trainguard.config import GuardConfig
from trainguard.domain.progress_settings import FIGURE_RANGES, ProgressSettings

pytestmark = pytest.mark.slow

POWERTOOLS = {"POWERTOOLS_SERVICE_NAME": "trainguard", "POWERTOOLS_METRICS_NAMESPACE": "TrainGuard"}
# GuardConfig fields whose value is a deployed resource's name or ARN (a CDK token in the stack).
RESOURCE_FIELDS = (
    "ledger_table_name",
    "topic_arn",
    "chat_topic_arn",
    "retry_launcher_arn",
    "scheduler_role_arn",
    "account_id",
)


def _environment(template: dict[str, Any], handler: str) -> dict[str, Any]:
    function = template["Resources"][function_logical_id(template, handler)]
    return function["Properties"]["Environment"]["Variables"]


def _expected_config(**resources: str) -> GuardConfig:
    return guard_config(
        Settings.from_context(CONFIGURED_CONTEXT),
        schedule_group_name="trainguard",
        **{name: resources.get(name, f"<{name}>") for name in RESOURCE_FIELDS},
    )


def _variable(field: str) -> str:
    """The variable name GuardConfig gives a field, read from to_env() itself, never typed here."""
    marked = GuardConfig(**{f: f"@{f}" for f in RESOURCE_FIELDS})  # type: ignore[arg-type]
    (name,) = [k for k, v in marked.to_env().items() if v == f"@{field}"]
    return name


@pytest.mark.parametrize("handler", ALL_HANDLERS)
def test_environment_is_guard_config_to_env_plus_powertools(synthesized: Any, handler: str) -> None:
    environment = _environment(synthesized.template, handler)
    expected = _expected_config().to_env()
    assert set(environment) == set(expected) | set(POWERTOOLS)
    for name in POWERTOOLS:
        assert environment[name] == POWERTOOLS[name]
    token_names = {_variable(field) for field in RESOURCE_FIELDS}
    for name, value in expected.items():
        if name not in token_names:
            assert environment[name] == value, name


@pytest.mark.parametrize("handler", ALL_HANDLERS)
def test_resource_variables_point_at_this_stacks_resources(synthesized: Any, handler: str) -> None:
    template = synthesized.template
    environment = _environment(template, handler)
    (scheduler_role,) = [
        lid
        for lid, r in template["Resources"].items()
        if r["Type"] == "AWS::IAM::Role"
        and r["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"].get("Service")
        == "scheduler.amazonaws.com"
    ]
    launcher_name = template["Resources"][function_logical_id(template, RETRY_LAUNCHER_HANDLER)]["Properties"][
        "FunctionName"
    ]
    assert environment[_variable("ledger_table_name")] == {"Ref": only_logical_id(template, "AWS::DynamoDB::Table")}
    assert environment[_variable("topic_arn")] == {
        "Ref": only_logical_id(template, "AWS::SNS::Topic", DisplayName="trainguard")
    }
    assert environment[_variable("chat_topic_arn")] == {
        "Ref": only_logical_id(template, "AWS::SNS::Topic", DisplayName="trainguard chat")
    }
    assert environment[_variable("scheduler_role_arn")] == {"Fn::GetAtt": [scheduler_role, "Arn"]}
    assert environment[_variable("account_id")] == {"Ref": "AWS::AccountId"}  # handlers/origin.py compares with it
    assert render(environment[_variable("retry_launcher_arn")]) == (
        f"arn:<AWS::Partition>:lambda:<AWS::Region>:<AWS::AccountId>:function:{launcher_name}"
    )


@pytest.mark.parametrize("handler", ALL_HANDLERS)
def test_handlers_read_the_environment_back(synthesized: Any, handler: str) -> None:
    """What the stack writes, `GuardConfig.from_env()` reads (tokens stand in as their rendering)."""
    environment = {k: str(render(v)) for k, v in _environment(synthesized.template, handler).items()}
    config = GuardConfig.from_env(environment)
    assert config.passable_role_arns == tuple(CONFIGURED_CONTEXT["passable_role_arns"])
    assert config.tag_prefix == CONFIGURED_CONTEXT["tag_prefix"]
    assert config.schedule_group_name == "trainguard"
    assert config.quota_ceilings == {name: float(v) for name, v in CONFIGURED_CONTEXT["quota_ceilings"].items()}
    assert (config.default_quota_ceiling, config.quota_wait_hours, config.quota_support_case_allowed) == (
        CONFIGURED_CONTEXT["default_quota_ceiling"],
        CONFIGURED_CONTEXT["quota_wait_hours"],
        CONFIGURED_CONTEXT["quota_support_case_allowed"],
    )
    stall = config.stall_defaults
    assert (stall.stall_minutes, stall.gpu_idle_minutes, stall.gpu_idle_percent, stall.startup_grace_minutes) == (
        CONFIGURED_CONTEXT["stall_minutes"],
        CONFIGURED_CONTEXT["gpu_idle_minutes"],
        CONFIGURED_CONTEXT["gpu_idle_percent"],
        CONFIGURED_CONTEXT["startup_grace_minutes"],
    )


# The functions that start a job's watch (job events, the prober's discovery) and judge it (the stall alarms).
WATCHING_HANDLERS = (JOB_EVENTS_HANDLER, STALL_PROBER_HANDLER, STALL_ALARMS_HANDLER)


@pytest.mark.parametrize("handler", WATCHING_HANDLERS)
def test_the_deployers_progress_defaults_reach_the_watching_functions(template: Any, handler: str) -> None:
    from aws_cdk.assertions import Match

    progress = {_variable_of_setting(bounds.setting) for bounds in FIGURE_RANGES.values()}
    wanted = {name: value for name, value in _expected_config().to_env().items() if name in progress}
    assert sorted(wanted.values()) == sorted(str(CONFIGURED_CONTEXT[b.setting]) for b in FIGURE_RANGES.values())
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {"Handler": handler, "Environment": {"Variables": Match.object_like(wanted)}},
    )


@pytest.mark.parametrize("handler", WATCHING_HANDLERS)
def test_the_watching_functions_read_the_progress_defaults_back(synthesized: Any, handler: str) -> None:
    environment = {k: str(render(v)) for k, v in _environment(synthesized.template, handler).items()}
    assert GuardConfig.from_env(environment).progress_defaults == ProgressSettings(
        interval_factor=CONFIGURED_CONTEXT["progress_interval_factor"],
        phase_margin_percent=CONFIGURED_CONTEXT["progress_phase_margin_percent"],
        phase_minutes=CONFIGURED_CONTEXT["progress_phase_minutes"],
        start_minutes=CONFIGURED_CONTEXT["progress_start_minutes"],
        slowdown_percent=CONFIGURED_CONTEXT["slowdown_percent"],
        slowdown_minutes=CONFIGURED_CONTEXT["slowdown_minutes"],
        divergence_reports=CONFIGURED_CONTEXT["divergence_reports"],
        divergence_jump=CONFIGURED_CONTEXT["divergence_jump"],
    )


@pytest.mark.parametrize(
    ("setting", "value", "bounds"),
    [
        ("progress_interval_factor", 1, "from 2 to 20"),
        ("progress_phase_margin_percent", 1001, "from 10 to 1000"),
        ("progress_phase_minutes", 4, "from 5 to 1440"),
        ("progress_start_minutes", 1441, "from 5 to 1440"),
    ],
)
def test_the_synth_refuses_a_progress_default_out_of_its_tags_bounds(
    tmp_path: Any, setting: str, value: int, bounds: str
) -> None:
    from aws_cdk import App

    import app as cdk_app

    context = {"trainguard": {**CONFIGURED_CONTEXT, setting: value}}
    with pytest.raises(SettingsError, match=f"setting {setting} must be an integer {bounds}"):
        cdk_app.build_app(App(outdir=str(tmp_path), context=context)).synth()
    assert not list(tmp_path.glob("*.template.json"))  # nothing was synthesized


def _variable_of_setting(setting: str) -> str:
    """The variable name GuardConfig gives a setting, read from to_env() of a config where only it changed."""
    base = GuardConfig(ledger_table_name="-", topic_arn="-")
    changed = GuardConfig(**{**vars(base), setting: getattr(base, setting) + 1})
    (name,) = [k for k, v in changed.to_env().items() if base.to_env()[k] != v]
    return name


def test_stopping_parents_hung_jobs_is_a_setting_that_reaches_the_stall_alarms_function(synthesized: Any) -> None:
    """stop_stalled_parent_jobs flows cdk.json context -> Settings -> GuardConfig -> the function's environment: off
    in the configured stack, on (its default) in the defaults stack."""
    on, off = (
        GuardConfig(ledger_table_name="", topic_arn="", stop_stalled_parent_jobs=v).to_env() for v in (True, False)
    )
    (name,) = [k for k in on if on[k] != off[k]]  # the variable's name, read from to_env() itself
    for template, expected in ((synthesized.template, False), (synthesized.defaults_template, True)):
        environment = {k: str(render(v)) for k, v in _environment(template, STALL_ALARMS_HANDLER).items()}
        assert environment[name] == ("true" if expected else "false")
        assert GuardConfig.from_env(environment).stop_stalled_parent_jobs is expected
    assert CONFIGURED_CONTEXT["stop_stalled_parent_jobs"] is False and Settings().stop_stalled_parent_jobs is True
