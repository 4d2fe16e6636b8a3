"""Least privilege: every statement scoped, wildcards only where AWS allows nothing narrower."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from tests.infra.template_queries import (
    ALL_HANDLERS,
    CONFIGURED_CONTEXT,
    FAILED_LAUNCHES_HANDLER,
    JOB_EVENTS_HANDLER,
    QUOTA_WATCH_HANDLER,
    RETRY_LAUNCHER_HANDLER,
    as_list,
    function_logical_id,
    identity_statements,
    only_logical_id,
    render,
    resource_policy_statements,
    role_of_function,
    statements_of_role,
)

pytestmark = pytest.mark.slow

# The functions that relaunch training jobs (the failed-launches function only requests quotas).
LAUNCHING_HANDLERS = [JOB_EVENTS_HANDLER, RETRY_LAUNCHER_HANDLER, QUOTA_WATCH_HANDLER]
# The functions that read checkpoints before a relaunch (the quota watcher launches a request built earlier).
CHECKPOINT_HANDLERS = [JOB_EVENTS_HANDLER, RETRY_LAUNCHER_HANDLER]
TRAINING_JOBS = "arn:<AWS::Partition>:sagemaker:<AWS::Region>:<AWS::AccountId>:training-job/*"
RETRY_SCHEDULES = "arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/trainguard/*"
SAGEMAKER_QUOTAS = "arn:<AWS::Partition>:servicequotas:<AWS::Region>:<AWS::AccountId>:sagemaker/*"
SERVICE_QUOTAS_ROLE = (
    "arn:<AWS::Partition>:iam::<AWS::AccountId>:role/aws-service-role/servicequotas.amazonaws.com/"
    "AWSServiceRoleForServiceQuotas"
)
# Wildcard resources that no narrower ARN can replace; each carries a reasoned cdk-nag acknowledgment.
ALLOWED_WILDCARD_RESOURCES = {TRAINING_JOBS, RETRY_SCHEDULES, SAGEMAKER_QUOTAS}
# Service Quotas actions that support the `quota` resource type, and those that support no resource type
# and no condition key, so only "Resource": "*" allows them (Service Authorization Reference:
# https://docs.aws.amazon.com/service-authorization/latest/reference/list_servicequotas.html).
QUOTA_SCOPED_ACTIONS = {
    "servicequotas:GetServiceQuota",
    "servicequotas:RequestServiceQuotaIncrease",
    "servicequotas:ListRequestedServiceQuotaChangeHistoryByQuota",
}
ACTIONS_WITHOUT_RESOURCE_TYPE = {"servicequotas:ListServiceQuotas", "servicequotas:GetRequestedServiceQuotaChange"}


# Which adapters each handler uses (handlers/wiring.py builds them all; only job-events schedules,
# only the functions that relaunch touch SageMaker, only those that relaunch at once read checkpoints).
ADAPTERS_BY_HANDLER = {
    JOB_EVENTS_HANDLER: ("sagemaker", "checkpoints", "ledger", "notifier", "scheduler", "service_quotas"),
    RETRY_LAUNCHER_HANDLER: ("sagemaker", "checkpoints", "ledger", "notifier", "service_quotas"),
    QUOTA_WATCH_HANDLER: ("sagemaker", "ledger", "notifier", "service_quotas"),
    FAILED_LAUNCHES_HANDLER: ("ledger", "notifier", "service_quotas"),
}
# Granted for the runtime (logs, the async-failure DLQ) and for SSE on the topic, not for an adapter's calls.
PLATFORM_ACTIONS = {
    "logs:CreateLogStream",
    "logs:PutLogEvents",
    "sqs:SendMessage",
    "sqs:GetQueueAttributes",
    "sqs:GetQueueUrl",
    "kms:GenerateDataKey",
    "kms:Decrypt",
}
# What AWS does on the caller's behalf during an adapter's call: the first quota request in an account
# creates Service Quotas' service-linked role, with the caller's iam:CreateServiceLinkedRole.
IMPLIED_ACTIONS = {"servicequotas:RequestServiceQuotaIncrease": {"iam:CreateServiceLinkedRole"}}


def _role_statements(template: dict[str, Any], handler: str) -> list[dict[str, Any]]:
    return statements_of_role(template, role_of_function(template, function_logical_id(template, handler)))


def _with_action(statements: list[dict[str, Any]], action: str) -> list[dict[str, Any]]:
    return [s for s in statements if action in as_list(s["Action"])]


def _is_kms_key_admin_statement(statement: dict[str, Any]) -> bool:
    """CDK's default key policy statement: the account root administers the key (kms:* on the key),
    so the key can never become unmanageable. Present on every customer key."""
    principal = render(statement.get("Principal", {}).get("AWS", ""))
    return statement["Action"] == "kms:*" and principal == "arn:<AWS::Partition>:iam::<AWS::AccountId>:root"


@pytest.mark.parametrize("handler", ALL_HANDLERS)
def test_each_role_grants_exactly_what_its_adapters_declare(synthesized: Any, handler: str) -> None:
    declared = {
        action
        for adapter in ADAPTERS_BY_HANDLER[handler]
        for action in importlib.import_module(f"trainguard.adapters.{adapter}").IAM_ACTIONS
    }
    implied = {extra for action in declared for extra in IMPLIED_ACTIONS.get(action, ())}
    granted = {a for s in _role_statements(synthesized.template, handler) for a in as_list(s["Action"])}
    assert granted - PLATFORM_ACTIONS == declared | implied


@pytest.mark.parametrize("stack", ["template", "defaults_template"])
def test_no_identity_policy_has_a_wildcard_action_or_resource_star(synthesized: Any, stack: str) -> None:
    template = getattr(synthesized, stack)
    statements = list(identity_statements(template))
    assert statements
    for _, statement in statements:
        assert statement["Effect"] == "Allow"
        assert not [a for a in as_list(statement["Action"]) if "*" in a], statement
        resources = [render(r) for r in as_list(statement["Resource"])]
        if "*" in resources:
            # Only for the actions AWS documents with no resource type, and then alone in the statement.
            assert resources == ["*"], statement
            assert set(as_list(statement["Action"])) <= ACTIONS_WITHOUT_RESOURCE_TYPE, statement
            continue
        wildcards = {r for r in resources if isinstance(r, str) and "*" in r}
        assert wildcards <= ALLOWED_WILDCARD_RESOURCES, statement


def test_resource_policies_allow_no_wildcard_action(synthesized: Any) -> None:
    for _, statement in resource_policy_statements(synthesized.template):
        if statement["Effect"] == "Deny" or _is_kms_key_admin_statement(statement):
            continue
        for action in as_list(statement["Action"]):
            assert action != "*" and not action.endswith(":*"), statement


def test_resource_star_appears_only_in_key_policies(synthesized: Any) -> None:
    for lid, statement in resource_policy_statements(synthesized.template):
        if "*" in as_list(statement.get("Resource", [])):
            # In a key policy, "*" means "this key".
            assert synthesized.template["Resources"][lid]["Type"] == "AWS::KMS::Key", statement


@pytest.mark.parametrize("handler", LAUNCHING_HANDLERS)
def test_create_training_job_requires_the_opt_in_tag(synthesized: Any, handler: str) -> None:
    (statement,) = _with_action(_role_statements(synthesized.template, handler), "sagemaker:CreateTrainingJob")
    assert render(statement["Resource"]) == TRAINING_JOBS
    assert statement["Condition"] == {"StringEquals": {"aws:RequestTag/trainguard:enabled": "true"}}
    (describe,) = _with_action(_role_statements(synthesized.template, handler), "sagemaker:DescribeTrainingJob")
    assert sorted(as_list(describe["Action"])) == ["sagemaker:DescribeTrainingJob", "sagemaker:ListTags"]


@pytest.mark.parametrize("handler", LAUNCHING_HANDLERS)
def test_pass_role_only_for_configured_roles_and_only_to_sagemaker(synthesized: Any, handler: str) -> None:
    pass_role = _with_action(_role_statements(synthesized.template, handler), "iam:PassRole")
    to_sagemaker = [
        s for s in pass_role if s["Condition"]["StringEquals"]["iam:PassedToService"] == "sagemaker.amazonaws.com"
    ]
    (statement,) = to_sagemaker
    assert as_list(statement["Resource"]) == CONFIGURED_CONTEXT["passable_role_arns"]
    for each in pass_role:
        assert set(each["Condition"]) == {"StringEquals"}
        assert set(each["Condition"]["StringEquals"]) == {"iam:PassedToService"}


@pytest.mark.parametrize("handler", LAUNCHING_HANDLERS)
def test_no_sagemaker_pass_role_or_bucket_listing_when_settings_list_none(synthesized: Any, handler: str) -> None:
    statements = _role_statements(synthesized.defaults_template, handler)
    services = [s["Condition"]["StringEquals"]["iam:PassedToService"] for s in _with_action(statements, "iam:PassRole")]
    assert "sagemaker.amazonaws.com" not in services
    assert not _with_action(statements, "s3:ListBucket")


@pytest.mark.parametrize("handler", CHECKPOINT_HANDLERS)
def test_list_bucket_only_on_checkpoint_buckets(synthesized: Any, handler: str) -> None:
    (statement,) = _with_action(_role_statements(synthesized.template, handler), "s3:ListBucket")
    assert as_list(statement["Action"]) == ["s3:ListBucket"]
    expected = [f"arn:<AWS::Partition>:s3:::{b}" for b in CONFIGURED_CONTEXT["checkpoint_buckets"]]
    assert [render(r) for r in as_list(statement["Resource"])] == expected


@pytest.mark.parametrize("handler", ALL_HANDLERS)
def test_ledger_topic_and_key_access_is_exact(synthesized: Any, handler: str) -> None:
    template = synthesized.template
    statements = _role_statements(template, handler)
    (ledger,) = _with_action(statements, "dynamodb:GetItem")
    assert sorted(ledger["Action"]) == [
        "dynamodb:DeleteItem",
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:Query",
        "dynamodb:UpdateItem",
    ]
    assert as_list(ledger["Resource"]) == [{"Fn::GetAtt": [only_logical_id(template, "AWS::DynamoDB::Table"), "Arn"]}]
    (publish,) = _with_action(statements, "sns:Publish")
    assert publish["Resource"] == {"Ref": only_logical_id(template, "AWS::SNS::Topic")}
    (key,) = _with_action(statements, "kms:GenerateDataKey")
    assert sorted(key["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey"]
    assert key["Resource"] == {"Fn::GetAtt": [only_logical_id(template, "AWS::KMS::Key"), "Arn"]}


def test_only_job_events_may_schedule_retries_and_pass_the_scheduler_role(synthesized: Any) -> None:
    template = synthesized.template
    scheduler_role = _scheduler_role_id(template)
    job_events = _role_statements(template, JOB_EVENTS_HANDLER)
    (create,) = _with_action(job_events, "scheduler:CreateSchedule")
    assert render(create["Resource"]) == RETRY_SCHEDULES
    (pass_scheduler,) = [
        s for s in _with_action(job_events, "iam:PassRole") if s["Resource"] == {"Fn::GetAtt": [scheduler_role, "Arn"]}
    ]
    assert pass_scheduler["Condition"] == {"StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}}
    for handler in (RETRY_LAUNCHER_HANDLER, QUOTA_WATCH_HANDLER, FAILED_LAUNCHES_HANDLER):
        statements = _role_statements(template, handler)
        assert not [a for s in statements for a in as_list(s["Action"]) if a.startswith("scheduler:")], handler
        passed = [render(s["Resource"]) for s in _with_action(statements, "iam:PassRole")]
        assert passed in ([], [CONFIGURED_CONTEXT["passable_role_arns"]]), handler


def test_scheduler_role_only_invokes_the_retry_launcher_for_this_account(synthesized: Any) -> None:
    template = synthesized.template
    role_id = _scheduler_role_id(template)
    (trust,) = template["Resources"][role_id]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert trust["Condition"]["StringEquals"]["aws:SourceAccount"] == {"Ref": "AWS::AccountId"}
    group = only_logical_id(template, "AWS::Scheduler::ScheduleGroup")
    assert trust["Condition"]["StringEquals"]["aws:SourceArn"] == {"Fn::GetAtt": [group, "Arn"]}
    (statement,) = statements_of_role(template, role_id)
    assert statement["Action"] == "lambda:InvokeFunction"
    launcher = template["Resources"][function_logical_id(template, RETRY_LAUNCHER_HANDLER)]["Properties"]
    expected = f"arn:<AWS::Partition>:lambda:<AWS::Region>:<AWS::AccountId>:function:{launcher['FunctionName']}"
    assert render(statement["Resource"]) == expected


def test_functions_log_only_to_their_own_group_without_managed_policies(synthesized: Any) -> None:
    template = synthesized.template
    for handler in ALL_HANDLERS:
        function_id = function_logical_id(template, handler)
        props = template["Resources"][function_id]["Properties"]
        role = template["Resources"][role_of_function(template, function_id)]["Properties"]
        assert "ManagedPolicyArns" not in role
        (logs,) = _with_action(_role_statements(template, handler), "logs:PutLogEvents")
        assert logs["Resource"] == {"Fn::GetAtt": [props["LoggingConfig"]["LogGroup"]["Ref"], "Arn"]}


@pytest.mark.parametrize("handler", ALL_HANDLERS)
def test_quota_actions_with_a_resource_type_are_limited_to_this_accounts_sagemaker_quotas(
    synthesized: Any, handler: str
) -> None:
    (statement,) = _with_action(_role_statements(synthesized.template, handler), "servicequotas:GetServiceQuota")
    assert set(as_list(statement["Action"])) == QUOTA_SCOPED_ACTIONS
    assert render(statement["Resource"]) == SAGEMAKER_QUOTAS
    # servicequotas:service would repeat what the ARN already says; the statement carries no condition.
    assert "Condition" not in statement


@pytest.mark.parametrize("handler", ALL_HANDLERS)
def test_quota_actions_without_a_resource_type_are_alone_on_star_without_a_condition(
    synthesized: Any, handler: str
) -> None:
    statements = _role_statements(synthesized.template, handler)
    (statement,) = [s for s in statements if "*" in as_list(s["Resource"])]
    assert set(as_list(statement["Action"])) == ACTIONS_WITHOUT_RESOURCE_TYPE
    # Neither action supports servicequotas:service: a condition on it would never match and deny both.
    assert "Condition" not in statement


@pytest.mark.parametrize("handler", ALL_HANDLERS)
def test_only_service_quotas_own_service_linked_role_may_be_created(synthesized: Any, handler: str) -> None:
    (statement,) = _with_action(_role_statements(synthesized.template, handler), "iam:CreateServiceLinkedRole")
    assert as_list(statement["Action"]) == ["iam:CreateServiceLinkedRole"]
    assert render(statement["Resource"]) == SERVICE_QUOTAS_ROLE
    assert statement["Condition"] == {"StringEquals": {"iam:AWSServiceName": "servicequotas.amazonaws.com"}}


@pytest.mark.parametrize("stack", ["template", "defaults_template"])
def test_no_function_may_open_support_cases_itself(synthesized: Any, stack: str) -> None:
    """SupportCaseAllowed lets Service Quotas' own service-linked role open the case, not the caller."""
    actions = {a for _, s in identity_statements(getattr(synthesized, stack)) for a in as_list(s["Action"])}
    assert not {a for a in actions if a.startswith("support:") or a == "servicequotas:CreateSupportCase"}


def test_the_failed_launches_function_cannot_touch_sagemaker_or_pass_roles(synthesized: Any) -> None:
    actions = {a for s in _role_statements(synthesized.template, FAILED_LAUNCHES_HANDLER) for a in as_list(s["Action"])}
    assert not {a for a in actions if a.startswith(("sagemaker:", "s3:", "scheduler:")) or a == "iam:PassRole"}


def test_the_quota_watcher_lists_no_checkpoint_bucket(synthesized: Any) -> None:
    assert not _with_action(_role_statements(synthesized.template, QUOTA_WATCH_HANDLER), "s3:ListBucket")


def _scheduler_role_id(template: dict[str, Any]) -> str:
    (role_id,) = [
        lid
        for lid, r in template["Resources"].items()
        if r["Type"] == "AWS::IAM::Role"
        and any(
            s["Principal"].get("Service") == "scheduler.amazonaws.com"
            for s in r["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        )
    ]
    return role_id
