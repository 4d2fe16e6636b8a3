"""Queries over a synthesized template as plain data: find resources by what they are, never by
their hashed logical IDs. Shared by the infra tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from aws_cdk.assertions import Match

# One reading of a template's IAM statements, shared with make lint's check of them.
from trainguard_local.commands.iam_check import as_list, identity_statements, render  # noqa: F401  (re-exported)
from trainguard_local.commands.iam_check.policy_reader import policy_statements

CONFIGURED_STACK = "TrainGuard"
DEFAULTS_STACK = "TrainGuardDefaults"
CONFIGURED_CONTEXT: dict[str, Any] = {
    "tag_prefix": "trainguard",
    "notification_emails": ["ml-oncall@example.com"],
    "chat_notifications": True,
    "passable_role_arns": [
        "arn:aws:iam::123456789012:role/SageMakerTrainingRole",
        "arn:aws:iam::123456789012:role/team/OtherTrainingRole",
    ],
    "checkpoint_buckets": ["example-checkpoints"],
    # The deployer's bound on what trainguard launches (empty in the defaults stack: no type condition there).
    "launchable_instance_types": ["ml.g5.xlarge", "ml.g5.12xlarge", "ml.p4d.24xlarge"],
    "quota_support_case_allowed": False,
    "default_quota_ceiling": 32,
    "quota_ceilings": {"ml.p4d.24xlarge for training job usage": 8, "Number of instances across all training jobs": 40},
    "quota_wait_hours": 48,
    "quota_check_minutes": 10,
    "watch_failed_launches": True,
    "stall_minutes": 45,
    "gpu_idle_minutes": 15,
    "gpu_idle_percent": 3,
    "startup_grace_minutes": 30,
    "progress_interval_factor": 5,
    "progress_phase_margin_percent": 80,
    "progress_phase_minutes": 90,
    "progress_start_minutes": 45,
    "slowdown_percent": 60,
    "slowdown_minutes": 15,
    "divergence_reports": 4,
    "divergence_jump": 8,
    # Off here, on by default: the configured stack's functions read "false" (test_function_environment.py).
    "stop_stalled_parent_jobs": False,
    # Off here, on in the defaults stack: each case is synthesized once.
    "subscribe_to_training_logs": False,
    "local_deploy": True,
}
JOB_EVENTS_HANDLER = "trainguard.handlers.job_events.handler"
RETRY_LAUNCHER_HANDLER = "trainguard.handlers.retry_launcher.handler"
QUOTA_WATCH_HANDLER = "trainguard.handlers.quota_watch.handler"
FAILED_LAUNCHES_HANDLER = "trainguard.handlers.failed_launches.handler"
STALL_ALARMS_HANDLER = "trainguard.handlers.stall_alarms.handler"
STALL_PROBER_HANDLER = "trainguard.handlers.stall_prober.handler"
LOG_ACTIVITY_HANDLER = "trainguard.handlers.log_activity.handler"
# The functions that request quotas (Service Quotas rights); the stall functions do not.
QUOTA_REQUESTING_HANDLERS = (JOB_EVENTS_HANDLER, RETRY_LAUNCHER_HANDLER, QUOTA_WATCH_HANDLER, FAILED_LAUNCHES_HANDLER)
STALL_HANDLERS = (STALL_ALARMS_HANDLER, STALL_PROBER_HANDLER, LOG_ACTIVITY_HANDLER)
# Every function of the configured stack (the defaults stack has no failed-launches function).
ALL_HANDLERS = (*QUOTA_REQUESTING_HANDLERS, *STALL_HANDLERS)


# The statement `enforce_ssl` adds to a queue or topic policy.
DENY_INSECURE_TRANSPORT = Match.object_like({"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})


def resources_of_type(template: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {lid: r for lid, r in template["Resources"].items() if r["Type"] == resource_type}


def only_logical_id(template: dict[str, Any], resource_type: str, **properties: Any) -> str:
    """The logical ID of the one resource of that type whose properties include these values."""
    found = [
        lid
        for lid, r in resources_of_type(template, resource_type).items()
        if all(r.get("Properties", {}).get(k) == v for k, v in properties.items())
    ]
    assert len(found) == 1, f"expected one {resource_type} with {properties}, found {found}"
    return found[0]


def topic_logical_id(template: dict[str, Any]) -> str:
    """The topic trainguard tells people on."""
    return only_logical_id(template, "AWS::SNS::Topic", DisplayName="trainguard")


def function_logical_id(template: dict[str, Any], handler: str) -> str:
    return only_logical_id(template, "AWS::Lambda::Function", Handler=handler)


def rule_targeting(template: dict[str, Any], function_id: str) -> str:
    """The logical ID of the one EventBridge rule whose target is that function."""
    found = [
        lid
        for lid, rule in resources_of_type(template, "AWS::Events::Rule").items()
        if any(t["Arn"] == {"Fn::GetAtt": [function_id, "Arn"]} for t in rule["Properties"].get("Targets", []))
    ]
    assert len(found) == 1, f"expected one rule targeting {function_id}, found {found}"
    return found[0]


def dead_letter_queue_of(template: dict[str, Any], function_id: str) -> str:
    """The queue where the function's failed asynchronous invocations go (its on-failure destination)."""
    (config,) = [
        r["Properties"]
        for r in resources_of_type(template, "AWS::Lambda::EventInvokeConfig").values()
        if r["Properties"]["FunctionName"] == {"Ref": function_id}
    ]
    return str(config["DestinationConfig"]["OnFailure"]["Destination"]["Fn::GetAtt"][0])


def resource_policy_statements(template: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(resource logical ID, statement) for key, topic, queue, bucket and bus policies, Lambda permissions and
    trust policies, as make lint's check reads them."""
    return ((found.policy, found.statement) for found in policy_statements(template) if found.kind != "identity")


def statements_of_role(template: dict[str, Any], role_logical_id: str) -> list[dict[str, Any]]:
    return [
        statement
        for lid, statement in identity_statements(template)
        if {"Ref": role_logical_id} in template["Resources"][lid]["Properties"].get("Roles", [])
    ]


def role_of_function(template: dict[str, Any], function_logical_id: str) -> str:
    role = template["Resources"][function_logical_id]["Properties"]["Role"]
    return role["Fn::GetAtt"][0]
