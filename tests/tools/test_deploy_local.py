"""`make deploy-local`, the pure parts: the settings it deploys with, the CLI's environment and arguments,
and the checks' verdicts on canned answers. The whole run (about 40 s) is in `.ci/run`, not in pytest."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from infra.event_patterns import failed_training_job_launch_pattern, stall_alarm_pattern, training_job_state_pattern
from infra.settings import CONTEXT_KEY, Settings, SettingsError
from trainguard_local.deploy_local.deploy import (
    DeployLocalError,
    cdk_command,
    cdk_environment,
    deploy_arguments,
    local_context,
    project_context,
    update_changes,
)
from trainguard_local.deploy_local.resource_checks import DeployCheckError, StackResource, resolve
from trainguard_local.deploy_local.server import shell_exports
from trainguard_local.deploy_local.stack_checks import (
    StackChecker,
    deployed_resources,
    expected_rule_patterns,
    not_created_types,
)

CDK_JSON_CONTEXT = json.loads((Path(__file__).resolve().parents[2] / "cdk.json").read_text())["context"][CONTEXT_KEY]


def test_local_deploys_switch_on_local_deploy_and_keep_cdk_json_settings() -> None:
    assert CDK_JSON_CONTEXT["local_deploy"] is False  # production: the bootstrap-version rule stays
    context = local_context(project_context())
    assert context == {**CDK_JSON_CONTEXT, "local_deploy": True}
    assert Settings.from_context(context).local_deploy is True


def test_local_context_is_the_whole_object_because_dash_c_replaces_cdk_json() -> None:
    base = {"notification_emails": ["ml-oncall@example.com"], "dry_run": False}
    context = local_context(base, dry_run=True)
    assert context == {"notification_emails": ["ml-oncall@example.com"], "dry_run": True, "local_deploy": True}


def test_a_bad_setting_stops_the_run_before_the_cli() -> None:
    with pytest.raises(SettingsError, match="quota_check_minutes"):
        local_context(CDK_JSON_CONTEXT, quota_check_minutes=1)


@pytest.mark.parametrize(
    "settings",
    [
        Settings(),
        Settings(
            dry_run=True,
            quota_check_minutes=5,
            watch_failed_launches=True,
            notification_emails=("ml-oncall@example.com",),
            passable_role_arns=("arn:aws:iam::123456789012:role/TrainingRole",),
        ),
    ],
)
def test_the_update_changes_every_setting_it_names(settings: Settings) -> None:
    changes = update_changes(settings)
    assert set(changes) == {
        "dry_run",
        "quota_check_minutes",
        "watch_failed_launches",
        "notification_emails",
        "passable_role_arns",
    }
    updated = Settings.from_context(changes)  # valid values
    for name in changes:
        assert getattr(settings, name) != getattr(updated, name), name


def test_the_cli_environment_reaches_only_the_local_endpoint(tmp_path: Path) -> None:
    inherited = {
        "PATH": "/usr/bin",
        "HOME": "/home/someone",
        "AWS_PROFILE": "production",
        "AWS_SESSION_TOKEN": "real-looking",
        "AWS_ENDPOINT_URL_SAGEMAKER": "http://127.0.0.1:9",
        "CDK_DEFAULT_ACCOUNT": "111122223333",
    }
    env = cdk_environment("http://localhost:4566", inherited, tmp_path)
    assert env["AWS_ENDPOINT_URL"] == "http://localhost:4566"
    assert (env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]) == ("testing", "testing")
    for dropped in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_SAGEMAKER", "CDK_DEFAULT_ACCOUNT"):
        assert dropped not in env, dropped
    assert env["AWS_CONFIG_FILE"].startswith(str(tmp_path)) and env["AWS_SHARED_CREDENTIALS_FILE"].startswith(
        str(tmp_path)
    )
    assert env["AWS_EC2_METADATA_DISABLED"] == env["CDK_DISABLE_CLI_TELEMETRY"] == "true"
    assert env["CDK_DISABLE_VERSION_CHECK"] == "true"
    assert env["HOME"] == "/home/someone" and env["PATH"].endswith("/usr/bin")
    assert env["PATH"].split(":")[0].endswith("node_modules/.bin")  # the pinned CLI and Node 22 first


@pytest.mark.parametrize("endpoint", ["https://cloudformation.us-east-1.amazonaws.com", "http://10.0.0.5:4566"])
def test_an_endpoint_off_this_machine_is_refused(endpoint: str, tmp_path: Path) -> None:
    with pytest.raises(DeployLocalError, match="only talks to localhost"):
        cdk_environment(endpoint, {}, tmp_path)


def test_the_cli_writes_its_assembly_to_the_scratch_directory_without_notices(tmp_path: Path) -> None:
    command = cdk_command("deploy", "TrainGuard", output_dir=tmp_path / "cdk.out")
    assert command[0].endswith("node_modules/.bin/cdk") and command[1] == "deploy"
    assert "--no-notices" in command
    assert command[command.index("--output") + 1] == str(tmp_path / "cdk.out")


def test_only_the_update_deploys_directly_and_the_context_goes_whole() -> None:
    context = local_context(CDK_JSON_CONTEXT, dry_run=True)
    first, second = deploy_arguments(context, direct=False), deploy_arguments(context, direct=True)
    assert "--method=direct" not in first and "--method=direct" in second
    assert first[:3] == ["TrainGuard", "--require-approval", "never"]
    key, _, value = first[first.index("-c") + 1].partition("=")
    assert key == CONTEXT_KEY and json.loads(value) == context


def test_the_server_prints_what_points_a_shell_at_it() -> None:
    lines = shell_exports("http://localhost:5055")
    assert lines.startswith("unset AWS_PROFILE AWS_SESSION_TOKEN\nexport ")
    assert "AWS_ENDPOINT_URL=http://localhost:5055" in lines and "AWS_ACCESS_KEY_ID=testing" in lines
    assert "CDK_DISABLE_CLI_TELEMETRY=true" in lines


# The checks, on canned answers.

TEMPLATE: dict[str, Any] = {
    "Resources": {
        "Table": {"Type": "AWS::DynamoDB::Table", "DeletionPolicy": "Retain", "Properties": {}},
        "Queue": {"Type": "AWS::SQS::Queue", "DeletionPolicy": "Delete", "Properties": {}},
        "Alarm1": {"Type": "AWS::CloudWatch::Alarm", "Properties": {}},
        "Alarm2": {"Type": "AWS::CloudWatch::Alarm", "Properties": {}},
        "Function": {
            "Type": "AWS::Lambda::Function",
            "Properties": {
                "Handler": "trainguard.handlers.job_events.handler",
                "Runtime": "python3.14",
                "MemorySize": 256,
                "Timeout": 60,
                "Environment": {
                    "Variables": {
                        "TRAINGUARD_DRY_RUN": "true",
                        "TRAINGUARD_LEDGER_TABLE_NAME": {"Ref": "Table"},
                        "TRAINGUARD_PASSABLE_ROLE_ARNS": "",
                        "TRAINGUARD_TOPIC_ARN": {"Ref": "Topic"},
                    }
                },
            },
        },
    }
}
CREATED = {
    "Table": StackResource("Table", "AWS::DynamoDB::Table", "TrainGuard-Ledger-1"),
    "Queue": StackResource("Queue", "AWS::SQS::Queue", "http://localhost/123456789012/dlq"),
    "Function": StackResource("Function", "AWS::Lambda::Function", "TrainGuard-JobEvents-1"),
    "Topic": StackResource("Topic", "AWS::SNS::Topic", "arn:aws:sns:us-east-1:123456789012:topic"),
}
DEPLOYED_VARIABLES = {
    "TRAINGUARD_DRY_RUN": "true",
    "TRAINGUARD_LEDGER_TABLE_NAME": "TrainGuard-Ledger-1",
    "TRAINGUARD_PASSABLE_ROLE_ARNS": "",
    "TRAINGUARD_TOPIC_ARN": "arn:aws:sns:us-east-1:123456789012:topic",
}
MISSING = ClientError({"Error": {"Code": "ResourceNotFoundException", "Message": "gone"}}, "Describe")
NO_STACK = ClientError({"Error": {"Code": "ValidationError", "Message": "Stack with id X does not exist"}}, "Describe")


class FakeClient:
    """Answers a boto3 call from a table: a value, or an exception to raise."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers

    def __getattr__(self, operation: str) -> Any:
        def call(**_: Any) -> Any:
            answer = self.answers[operation]
            if isinstance(answer, Exception):
                raise answer
            return answer

        return call


def checker(**clients: dict[str, Any]) -> StackChecker:
    return StackChecker(lambda service: FakeClient(clients[service]), "TrainGuard")


def function_answer(variables: dict[str, str], handler: str = "trainguard.handlers.job_events.handler") -> Any:
    config = {"Handler": handler, "Runtime": "python3.14", "MemorySize": 256, "Timeout": 60}
    return {"get_function_configuration": {**config, "Environment": {"Variables": variables}}}


def test_types_moto_lists_without_a_logical_id_count_as_not_created() -> None:
    class Paginated:
        def get_paginator(self, _: str) -> Any:
            return self

        def paginate(self, **_: Any) -> list[dict[str, Any]]:
            summaries = [
                {"LogicalResourceId": lid, "ResourceType": r.resource_type, "PhysicalResourceId": r.physical_id}
                for lid, r in CREATED.items()
            ]
            return [{"StackResourceSummaries": [*summaries, {"LogicalResourceId": "", "ResourceType": ""}]}]

    created = deployed_resources(Paginated(), "TrainGuard")
    assert created == CREATED
    assert not_created_types(TEMPLATE, created) == Counter({"AWS::CloudWatch::Alarm": 2})


def test_template_values_resolve_to_literals_and_physical_ids_only() -> None:
    assert resolve("true", CREATED) == "true"
    assert resolve({"Ref": "Table"}, CREATED) == "TrainGuard-Ledger-1"
    assert resolve({"Fn::GetAtt": ["Function", "Arn"]}, CREATED) is None
    assert resolve({"Ref": "AWS::Region"}, CREATED) is None


def test_the_rules_patterns_are_the_stacks_and_the_cloudtrail_one_only_when_asked() -> None:
    assert expected_rule_patterns(Settings()) == [training_job_state_pattern(), stall_alarm_pattern()]
    assert failed_training_job_launch_pattern() in expected_rule_patterns(Settings(watch_failed_launches=True))


def test_a_function_deployed_as_the_template_says_passes() -> None:
    props = TEMPLATE["Resources"]["Function"]["Properties"]
    checker(**{"lambda": function_answer(DEPLOYED_VARIABLES)}).check_function(CREATED["Function"], props, CREATED)


@pytest.mark.parametrize(
    ("variables", "handler", "message"),
    [
        ({**DEPLOYED_VARIABLES, "TRAINGUARD_DRY_RUN": "false"}, None, "TRAINGUARD_DRY_RUN='false', expected 'true'"),
        ({**DEPLOYED_VARIABLES, "TRAINGUARD_LEDGER_TABLE_NAME": "other"}, None, "TRAINGUARD_LEDGER_TABLE_NAME"),
        ({k: v for k, v in DEPLOYED_VARIABLES.items() if k != "TRAINGUARD_TOPIC_ARN"}, None, "variables"),
        (DEPLOYED_VARIABLES, "trainguard.handlers.retry_launcher.handler", "Handler"),
    ],
)
def test_a_function_that_differs_from_the_template_fails_the_check(
    variables: dict[str, str], handler: str | None, message: str
) -> None:
    props = TEMPLATE["Resources"]["Function"]["Properties"]
    answer = function_answer(variables, handler or props["Handler"])
    with pytest.raises(DeployCheckError, match=message):
        checker(**{"lambda": answer}).check_function(CREATED["Function"], props, CREATED)


def test_after_the_destroy_deleted_resources_are_gone_and_retained_ones_stay() -> None:
    probes = checker(
        cloudformation={"describe_stacks": NO_STACK},
        dynamodb={"describe_table": {"Table": {}}},
        sqs={"get_queue_attributes": MISSING},
        **{"lambda": {"get_function": MISSING}},
        sns={"get_topic_attributes": MISSING},
    )
    report = probes.check_destroyed(TEMPLATE, CREATED)
    assert report.retained == Counter({"AWS::DynamoDB::Table": 1})
    assert report.deleted == Counter({"AWS::SQS::Queue": 1, "AWS::Lambda::Function": 1, "AWS::SNS::Topic": 1})


def test_a_resource_left_behind_or_a_stack_still_there_fails_the_destroy_check() -> None:
    left_behind = checker(
        cloudformation={"describe_stacks": NO_STACK},
        dynamodb={"describe_table": {"Table": {}}},
        sqs={"get_queue_attributes": {"Attributes": {}}},
        **{"lambda": {"get_function": MISSING}},
        sns={"get_topic_attributes": MISSING},
    )
    with pytest.raises(DeployCheckError, match="AWS::SQS::Queue Queue: exists=True"):
        left_behind.check_destroyed(TEMPLATE, CREATED)
    still_there = checker(cloudformation={"describe_stacks": {"Stacks": [{"StackStatus": "DELETE_FAILED"}]}})
    with pytest.raises(DeployCheckError, match="still exists"):
        still_there.check_destroyed(TEMPLATE, CREATED)


def test_a_failing_step_is_printed_and_the_run_exits_1(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    from trainguard_local.deploy_local import deploy as deploy_local

    def run(steps: deploy_local.Steps, scratch: Path, *, verbose: bool = False) -> None:
        with steps.step("cdk bootstrap") as step:
            step.detail = "aws://123456789012/us-east-1"
        with steps.step("cdk deploy"):
            raise DeployLocalError("cdk deploy exited 1:\nStack with id cdk-deploy-change-set does not exist")

    monkeypatch.setattr(deploy_local, "run", run)
    assert deploy_local.main([]) == 1
    out, err = capsys.readouterr()
    assert "] cdk bootstrap" in out and "aws://123456789012/us-east-1" in out
    assert "] cdk deploy" in out and "FAILED" in out
    assert "deploy-local FAILED: DeployLocalError: cdk deploy exited 1" in err and "change-set" in err
