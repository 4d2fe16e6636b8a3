"""Least privilege: every statement scoped, wildcards only where AWS allows nothing narrower."""

from __future__ import annotations

from typing import Any

import pytest

from infra.port_permissions import actions_of_ports, ports_of_handler
from tests.infra.template_queries import (
    ALL_HANDLERS,
    CONFIGURED_CONTEXT,
    FAILED_LAUNCHES_HANDLER,
    JOB_EVENTS_HANDLER,
    LOG_ACTIVITY_HANDLER,
    QUOTA_REQUESTING_HANDLERS,
    QUOTA_WATCH_HANDLER,
    RETRY_LAUNCHER_HANDLER,
    STALL_ALARMS_HANDLER,
    STALL_HANDLERS,
    STALL_PROBER_HANDLER,
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

# The functions that launch training jobs: relaunches, and (failed launches) a refused launch on its fallback.
LAUNCHING_BY_DEFAULT = [JOB_EVENTS_HANDLER, RETRY_LAUNCHER_HANDLER, QUOTA_WATCH_HANDLER]
LAUNCHING_HANDLERS = [*LAUNCHING_BY_DEFAULT, FAILED_LAUNCHES_HANDLER]  # the last one only where the setting is on
# The functions that read checkpoints: before a relaunch (the quota watcher launches a request built
# earlier), and in a stall's notification.
CHECKPOINT_HANDLERS = [JOB_EVENTS_HANDLER, RETRY_LAUNCHER_HANDLER, STALL_ALARMS_HANDLER]
TRAINING_JOBS = "arn:<AWS::Partition>:sagemaker:<AWS::Region>:<AWS::AccountId>:training-job/*"
# A relaunch that carries its job's training plan is authorized on the plan too (infra/action_groups.py).
TRAINING_PLANS = {
    f"arn:<AWS::Partition>:sagemaker:<AWS::Region>:<AWS::AccountId>:{kind}/*"
    for kind in ("training-plan", "reserved-capacity")
}
RETRY_SCHEDULES = "arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/trainguard/*"
SAGEMAKER_QUOTAS = "arn:<AWS::Partition>:servicequotas:<AWS::Region>:<AWS::AccountId>:sagemaker/*"
SERVICE_QUOTAS_ROLE = (
    "arn:<AWS::Partition>:iam::<AWS::AccountId>:role/aws-service-role/servicequotas.amazonaws.com/"
    "AWSServiceRoleForServiceQuotas"
)
# trainguard's alarms: the two name prefixes of trainguard.domain.stall_alarms.OWNED_PREFIXES.
STALL_ALARMS = [
    "arn:<AWS::Partition>:cloudwatch:<AWS::Region>:<AWS::AccountId>:alarm:trainguard-stall-*",
    "arn:<AWS::Partition>:cloudwatch:<AWS::Region>:<AWS::AccountId>:alarm:trainguard-gpu-part-*",
]
# SageMaker's training log group, as CloudWatch Logs names a log group in IAM policies (trailing ":*").
TRAINING_LOG_GROUP = "arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:/aws/sagemaker/TrainingJobs:*"
# Wildcard resources that no narrower ARN can replace; each carries a reasoned cdk-nag acknowledgment.
ALLOWED_WILDCARD_RESOURCES = {
    TRAINING_JOBS,
    *TRAINING_PLANS,
    RETRY_SCHEDULES,
    SAGEMAKER_QUOTAS,
    *STALL_ALARMS,
    TRAINING_LOG_GROUP,
}
# CloudWatch actions on alarms that take the `alarm` resource type, granted on STALL_ALARMS only
# (Service Authorization Reference, CloudWatch). DescribeAlarms too, where composites need not be seen.
ALARM_SCOPED_ACTIONS = {
    "cloudwatch:PutMetricAlarm",
    "cloudwatch:DeleteAlarms",
    "cloudwatch:SetAlarmState",
    "cloudwatch:TagResource",
}
# Service Quotas: the one write takes the `quota` resource type in every source; the reads go on "*", where the
# sources disagree on two of them (infra/action_groups.py, UNSCOPED_QUOTA_ACTIONS).
QUOTA_SCOPED_ACTIONS = {"servicequotas:RequestServiceQuotaIncrease"}
ACTIONS_WITHOUT_RESOURCE_TYPE = {
    "servicequotas:ListServiceQuotas",
    "servicequotas:GetRequestedServiceQuotaChange",
    "servicequotas:GetServiceQuota",
    "servicequotas:ListRequestedServiceQuotaChangeHistoryByQuota",
    "sagemaker:ListTrainingJobs",  # the prober's search for opted-in jobs that train unwatched
}
# Actions that only "Resource": "*" can allow: those above; GetMetricData and PutMetricData, which take no
# resource type (PutMetricData is conditioned on its namespace); PutCompositeAlarm, and DescribeAlarms where
# composites must be seen, which CloudWatch allows only "scoped to *" (CloudWatch API Reference).
ACTIONS_ONLY_ON_STAR = {
    *ACTIONS_WITHOUT_RESOURCE_TYPE,
    "cloudwatch:GetMetricData",
    "cloudwatch:PutMetricData",
    "cloudwatch:PutCompositeAlarm",
    "cloudwatch:DescribeAlarms",
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


def _role_statements(template: dict[str, Any], handler: str) -> list[dict[str, Any]]:
    return statements_of_role(template, role_of_function(template, function_logical_id(template, handler)))


def _with_action(statements: list[dict[str, Any]], action: str) -> list[dict[str, Any]]:
    return [s for s in statements if action in as_list(s["Action"])]


def _is_kms_key_admin_statement(statement: dict[str, Any]) -> bool:
    """CDK's default key policy statement: the account root administers the key (kms:* on the key),
    so the key can never become unmanageable. Present on every customer key."""
    principal = render(statement.get("Principal", {}).get("AWS", ""))
    return statement["Action"] == "kms:*" and principal == "arn:<AWS::Partition>:iam::<AWS::AccountId>:root"


def _needed(handler: str) -> frozenset[str]:
    """What the function's ports declare (the adapters its handler module's `build_ports` builds): the one
    declaration the stack reads."""
    return actions_of_ports(ports_of_handler(handler))


@pytest.mark.parametrize("handler", ALL_HANDLERS)
def test_each_role_grants_exactly_what_its_ports_declare(synthesized: Any, handler: str) -> None:
    granted = {a for s in _role_statements(synthesized.template, handler) for a in as_list(s["Action"])}
    assert granted - PLATFORM_ACTIONS == _needed(handler)


def test_the_failed_launches_function_may_launch_the_fallback_its_workflow_launches() -> None:
    """Found by deriving the grants: a user's launch refused for a quota is relaunched on a listed fallback
    (workflows/quota_wall.py), which the hand-kept grants had not allowed (CreateTrainingJob was denied)."""
    assert {"sagemaker:CreateTrainingJob", "iam:PassRole"} <= _needed(FAILED_LAUNCHES_HANDLER)
    assert "sagemaker:StopTrainingJob" not in _needed(FAILED_LAUNCHES_HANDLER)
    # It reads the job's watch entry to add a delivery's gaps to its log rhythm (workflows/log_activity.py).
    assert _needed(LOG_ACTIVITY_HANDLER) == {"dynamodb:GetItem", "dynamodb:UpdateItem"}


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
            # Only for the actions that nothing narrower allows, and then alone in the statement.
            assert resources == ["*"], statement
            assert set(as_list(statement["Action"])) <= ACTIONS_ONLY_ON_STAR, statement
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
    on_jobs, on_plans = _with_action(_role_statements(synthesized.template, handler), "sagemaker:CreateTrainingJob")
    assert render(on_jobs["Resource"]) == TRAINING_JOBS
    # Case ignored, as the code reads the tag (a job tagged TRUE is guarded, and its relaunch must not be refused).
    assert on_jobs["Condition"]["StringEqualsIgnoreCase"] == {"aws:RequestTag/trainguard:enabled": "true"}
    # The job's own training plan: CreateTrainingJob alone, on this account's plans, creating nothing by itself;
    # both bounded by the launchable instance types (tests/infra/test_launch_grants.py).
    assert {render(r) for r in as_list(on_plans["Resource"])} == TRAINING_PLANS
    assert as_list(on_plans["Action"]) == ["sagemaker:CreateTrainingJob"]
    assert set(on_jobs["Condition"]) == {"StringEqualsIgnoreCase", "ForAllValues:StringEquals", "Null"}
    assert set(on_plans["Condition"]) == {"ForAllValues:StringEquals", "Null"}
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


@pytest.mark.parametrize("handler", LAUNCHING_BY_DEFAULT)
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


@pytest.mark.parametrize("handler", [h for h in ALL_HANDLERS if h != LOG_ACTIVITY_HANDLER])
def test_ledger_topic_and_key_access_is_exact(synthesized: Any, handler: str) -> None:
    template = synthesized.template
    statements = _role_statements(template, handler)
    (ledger,) = _with_action(statements, "dynamodb:GetItem")
    assert sorted(ledger["Action"]) == sorted(a for a in _needed(handler) if a.startswith("dynamodb:"))
    assert as_list(ledger["Resource"]) == [{"Fn::GetAtt": [only_logical_id(template, "AWS::DynamoDB::Table"), "Arn"]}]
    (publish,) = _with_action(statements, "sns:Publish")
    # The email-readable topic and, configured here, the chat topic; nothing else.
    assert as_list(publish["Resource"]) == [
        {"Ref": only_logical_id(template, "AWS::SNS::Topic", DisplayName=display_name)}
        for display_name in ("trainguard", "trainguard chat")
    ]
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
    for handler in (RETRY_LAUNCHER_HANDLER, QUOTA_WATCH_HANDLER, FAILED_LAUNCHES_HANDLER, *STALL_HANDLERS):
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


@pytest.mark.parametrize("handler", QUOTA_REQUESTING_HANDLERS)
def test_quota_actions_with_a_resource_type_are_limited_to_this_accounts_sagemaker_quotas(
    synthesized: Any, handler: str
) -> None:
    (statement,) = _with_action(
        _role_statements(synthesized.template, handler), "servicequotas:RequestServiceQuotaIncrease"
    )
    assert set(as_list(statement["Action"])) == QUOTA_SCOPED_ACTIONS
    assert render(statement["Resource"]) == SAGEMAKER_QUOTAS
    # servicequotas:service would repeat what the ARN already says; the statement carries no condition.
    assert "Condition" not in statement


@pytest.mark.parametrize("handler", QUOTA_REQUESTING_HANDLERS)
def test_quota_actions_without_a_resource_type_are_alone_on_star_without_a_condition(
    synthesized: Any, handler: str
) -> None:
    statements = _role_statements(synthesized.template, handler)
    (statement,) = _with_action(statements, "servicequotas:ListServiceQuotas")
    assert as_list(statement["Resource"]) == ["*"]
    assert set(as_list(statement["Action"])) == ACTIONS_WITHOUT_RESOURCE_TYPE & _needed(handler)
    # Reads only; servicequotas:service is not taken by two of them: a condition on it would deny them.
    assert "Condition" not in statement


@pytest.mark.parametrize("handler", QUOTA_REQUESTING_HANDLERS)
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


def test_the_failed_launches_function_launches_but_never_stops_schedules_or_reads_checkpoints(synthesized: Any) -> None:
    """It launches a refused launch on a fallback its tag lists (as an opted-in job only), and nothing more."""
    actions = {a for s in _role_statements(synthesized.template, FAILED_LAUNCHES_HANDLER) for a in as_list(s["Action"])}
    assert "sagemaker:CreateTrainingJob" in actions
    assert not {a for a in actions if a.startswith(("s3:", "scheduler:")) or a == "sagemaker:StopTrainingJob"}


def test_the_quota_watcher_lists_no_checkpoint_bucket(synthesized: Any) -> None:
    assert not _with_action(_role_statements(synthesized.template, QUOTA_WATCH_HANDLER), "s3:ListBucket")


@pytest.mark.parametrize("handler", STALL_HANDLERS)
def test_stall_functions_request_no_quota(synthesized: Any, handler: str) -> None:
    actions = {a for s in _role_statements(synthesized.template, handler) for a in as_list(s["Action"])}
    assert not {a for a in actions if a.startswith("servicequotas:") or a == "iam:CreateServiceLinkedRole"}


# The stall alarms function stops a verified stall; the prober a slowdown or a divergence whose owner gave leave
# by tag (workflows/findings.py). No other function stops a job.
STOPPING_HANDLERS = (STALL_ALARMS_HANDLER, STALL_PROBER_HANDLER)


@pytest.mark.parametrize("handler", STOPPING_HANDLERS)
def test_only_two_functions_stop_jobs_and_only_opted_in_ones(synthesized: Any, handler: str) -> None:
    template = synthesized.template
    (statement,) = _with_action(_role_statements(template, handler), "sagemaker:StopTrainingJob")
    assert as_list(statement["Action"]) == ["sagemaker:StopTrainingJob"]
    assert render(statement["Resource"]) == TRAINING_JOBS
    # The job's own tag (aws:ResourceTag), in any case, as the policy reads it: SageMaker's training-job
    # resource type supports aws:ResourceTag/${TagKey} (Service Authorization Reference, SageMaker).
    assert statement["Condition"] == {"StringEqualsIgnoreCase": {"aws:ResourceTag/trainguard:enabled": "true"}}
    (describe,) = _with_action(_role_statements(template, handler), "sagemaker:DescribeTrainingJob")
    assert {"sagemaker:DescribeTrainingJob", "sagemaker:ListTags"} <= set(as_list(describe["Action"]))
    for other in ALL_HANDLERS:
        if other not in STOPPING_HANDLERS:
            assert not _with_action(_role_statements(template, other), "sagemaker:StopTrainingJob"), other


def test_the_stall_alarms_function_cannot_launch_jobs_or_pass_roles(synthesized: Any) -> None:
    actions = {a for s in _role_statements(synthesized.template, STALL_ALARMS_HANDLER) for a in as_list(s["Action"])}
    assert not actions & {
        "sagemaker:CreateTrainingJob",
        "sagemaker:AddTags",
        "iam:PassRole",
        "scheduler:CreateSchedule",
    }


@pytest.mark.parametrize("stack", ["template", "defaults_template"])
def test_alarm_actions_are_scoped_to_trainguards_two_alarm_prefixes(synthesized: Any, stack: str) -> None:
    template = getattr(synthesized, stack)
    found = 0
    for _, statement in identity_statements(template):
        actions = set(as_list(statement["Action"]))
        if actions & ALARM_SCOPED_ACTIONS:
            found += 1
            assert [render(r) for r in as_list(statement["Resource"])] == STALL_ALARMS, statement
            assert "Condition" not in statement
    # Job events: put, delete; stall alarms: rearm, delete; prober: rearm (a mute's end), delete, put (an alarm an
    # earlier version made on another metric).
    assert found == 7


def test_each_function_gets_the_alarm_calls_its_workflows_make(synthesized: Any) -> None:
    template = synthesized.template

    def on_alarms(handler: str) -> dict[str, list[Any]]:
        return {
            action: [render(r) for r in as_list(s["Resource"])]
            for s in _role_statements(template, handler)
            for action in as_list(s["Action"])
            if action.startswith("cloudwatch:")
        }

    assert on_alarms(JOB_EVENTS_HANDLER) == {
        "cloudwatch:PutMetricAlarm": STALL_ALARMS,
        "cloudwatch:TagResource": STALL_ALARMS,
        "cloudwatch:PutCompositeAlarm": ["*"],
        "cloudwatch:DeleteAlarms": STALL_ALARMS,
    }
    assert on_alarms(STALL_ALARMS_HANDLER) == {
        "cloudwatch:DescribeAlarms": ["*"],  # the GPU parts of one job, by name: a read, with the sweep's grant
        "cloudwatch:SetAlarmState": STALL_ALARMS,
        "cloudwatch:DeleteAlarms": STALL_ALARMS,
        "cloudwatch:GetMetricData": ["*"],
    }
    assert on_alarms(STALL_PROBER_HANDLER) == {
        "cloudwatch:PutMetricData": ["*"],
        "cloudwatch:DescribeAlarms": ["*"],  # the sweep must see composites too
        "cloudwatch:DeleteAlarms": STALL_ALARMS,
        "cloudwatch:SetAlarmState": STALL_ALARMS,  # a muted stall alarm, back to OK when its mute window ends
        # a log-silence alarm an earlier version made, put again; the alarms of a job opted in while it trains
        "cloudwatch:PutMetricAlarm": STALL_ALARMS,
        "cloudwatch:TagResource": STALL_ALARMS,
        "cloudwatch:PutCompositeAlarm": ["*"],  # that job's idle-GPU composite, when it has more than 10 hosts
        "cloudwatch:GetMetricData": ["*"],  # a slow job's hosts' GPU means: which host (workflows/findings.py)
    }
    for handler in (RETRY_LAUNCHER_HANDLER, QUOTA_WATCH_HANDLER, FAILED_LAUNCHES_HANDLER, LOG_ACTIVITY_HANDLER):
        assert on_alarms(handler) == {}, handler


def test_put_metric_data_only_into_the_trainguard_namespace(synthesized: Any) -> None:
    (statement,) = _with_action(
        _role_statements(synthesized.template, STALL_PROBER_HANDLER), "cloudwatch:PutMetricData"
    )
    assert as_list(statement["Action"]) == ["cloudwatch:PutMetricData"]
    assert statement["Resource"] == "*"
    assert statement["Condition"] == {"StringEquals": {"cloudwatch:namespace": "TrainGuard"}}


def test_composite_alarms_and_metric_reads_are_alone_on_star(synthesized: Any) -> None:
    template = synthesized.template
    for handler, action in (
        (JOB_EVENTS_HANDLER, "cloudwatch:PutCompositeAlarm"),
        (STALL_ALARMS_HANDLER, "cloudwatch:GetMetricData"),
        (STALL_PROBER_HANDLER, "cloudwatch:GetMetricData"),
        (STALL_PROBER_HANDLER, "cloudwatch:DescribeAlarms"),
    ):
        (statement,) = _with_action(_role_statements(template, handler), action)
        assert (as_list(statement["Action"]), statement["Resource"]) == ([action], "*"), handler
        assert "Condition" not in statement


def test_filter_log_events_only_on_sagemakers_training_log_group(synthesized: Any) -> None:
    for stack in ("template", "defaults_template"):
        statements = _role_statements(getattr(synthesized, stack), STALL_ALARMS_HANDLER)
        (statement,) = _with_action(statements, "logs:FilterLogEvents")
        assert as_list(statement["Action"]) == ["logs:FilterLogEvents"]
        assert render(statement["Resource"]) == TRAINING_LOG_GROUP
    for handler in ALL_HANDLERS:
        if handler != STALL_ALARMS_HANDLER:
            assert not _with_action(_role_statements(synthesized.template, handler), "logs:FilterLogEvents"), handler


def test_the_log_activity_function_only_reads_and_updates_ledger_items(synthesized: Any) -> None:
    template = synthesized.template
    statements = _role_statements(template, LOG_ACTIVITY_HANDLER)
    actions = {a for s in statements for a in as_list(s["Action"])}
    assert actions - PLATFORM_ACTIONS == {"dynamodb:GetItem", "dynamodb:UpdateItem"}
    assert not actions & {"kms:GenerateDataKey", "kms:Decrypt"}  # it publishes nothing, so no key either
    (statement,) = _with_action(statements, "dynamodb:UpdateItem")
    assert as_list(statement["Resource"]) == [
        {"Fn::GetAtt": [only_logical_id(template, "AWS::DynamoDB::Table"), "Arn"]}
    ]


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
