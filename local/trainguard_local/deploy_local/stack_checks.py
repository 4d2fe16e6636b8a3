"""What `make deploy-local` checks after each step, by asking the endpoint with boto3.

The expectations come from the template `cdk deploy` just deployed (its resources, properties and
deletion policies) and from infra/event_patterns.py (the rules' patterns), never from moto's internals.
moto's CloudFormation accepts some resource types without creating anything (no error, nothing in
ListStackResources): those are reported, not checked; only the types in MUST_CREATE must exist.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from infra.event_patterns import failed_training_job_launch_pattern, stall_alarm_pattern, training_job_state_pattern
from infra.settings import Settings
from trainguard_local.deploy_local.resource_checks import DeployCheckError, ResourceChecks, StackResource, require

# What trainguard cannot work without: a deploy that leaves one of these out has failed.
MUST_CREATE = frozenset(
    {
        "AWS::DynamoDB::Table",
        "AWS::SNS::Topic",
        "AWS::SQS::Queue",
        "AWS::Lambda::Function",
        "AWS::Lambda::Permission",
        "AWS::Events::Rule",
        "AWS::IAM::Role",
        "AWS::IAM::Policy",
        "AWS::Logs::LogGroup",
        "AWS::KMS::Key",
        "AWS::Scheduler::ScheduleGroup",
    }
)


@dataclass
class StackReport:
    """One check of a deployed stack: what exists, and what moto accepted without creating."""

    status: str
    created: dict[str, StackResource]
    not_created: Counter[str] = field(default_factory=Counter)
    checked: Counter[str] = field(default_factory=Counter)

    def summary(self) -> str:
        checked = sum(self.checked.values())
        return f"{self.status}, {len(self.created)} resources created, {checked} checked against the template"


@dataclass
class DestroyReport:
    """Per resource type, how many of the stack's resources are gone, and how many its template retains."""

    deleted: Counter[str] = field(default_factory=Counter)
    retained: Counter[str] = field(default_factory=Counter)

    def summary(self) -> str:
        return (
            f"no stack; gone: {count_text(self.deleted)}; retained (DeletionPolicy Retain): {count_text(self.retained)}"
        )


def count_text(counts: Counter[str]) -> str:
    """`AWS::SQS::Queue x3, ...` in type order, or `none`."""
    return ", ".join(f"{t} x{n}" for t, n in sorted(counts.items())) or "none"


def template_resources(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return dict(template["Resources"])


def deployed_resources(cloudformation: Any, stack_name: str) -> dict[str, StackResource]:
    """ListStackResources, keyed by logical ID. moto lists the types it did not create with empty
    fields; those are left out here and counted by `not_created_types`."""
    found: dict[str, StackResource] = {}
    for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack_name):
        for summary in page["StackResourceSummaries"]:
            if summary.get("LogicalResourceId"):
                found[summary["LogicalResourceId"]] = StackResource(
                    summary["LogicalResourceId"], summary["ResourceType"], summary.get("PhysicalResourceId", "")
                )
    return found


def not_created_types(template: dict[str, Any], created: dict[str, StackResource]) -> Counter[str]:
    """Per resource type, how many of the template's resources the deploy did not create."""
    return Counter(r["Type"] for lid, r in template_resources(template).items() if lid not in created)


def expected_rule_patterns(settings: Settings) -> list[dict[str, Any]]:
    """The event patterns the stack's rules must carry with these settings (infra/event_patterns.py)."""
    patterns = [training_job_state_pattern(), stall_alarm_pattern()]
    if settings.watch_failed_launches:
        patterns.append(failed_training_job_launch_pattern())
    return patterns


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def policy_statements(document: Any) -> list[dict[str, Any]]:
    """An IAM policy document's statements, whether boto3 gives the document parsed or as JSON text."""
    parsed = json.loads(document) if isinstance(document, str) else document
    return as_list(parsed["Statement"])


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


class StackChecker(ResourceChecks):
    """Checks one deployed stack resource by resource against the template that was deployed."""

    def __init__(self, client: Callable[[str], Any], stack_name: str) -> None:
        super().__init__(client)
        self.stack_name = stack_name

    def stack_status(self) -> str:
        (stack,) = self.client("cloudformation").describe_stacks(StackName=self.stack_name)["Stacks"]
        return str(stack["StackStatus"])

    def check_deployed(self, template: dict[str, Any], settings: Settings, *, expected_status: str) -> StackReport:
        status = self.stack_status()
        require(status == expected_status, f"stack {self.stack_name} is {status}, expected {expected_status}")
        created = deployed_resources(self.client("cloudformation"), self.stack_name)
        report = StackReport(status=status, created=created, not_created=not_created_types(template, created))
        missing = sorted(t for t in report.not_created if t in MUST_CREATE)
        require(not missing, f"the deploy did not create these resource types: {missing}")
        resources, checks = template_resources(template), self.checks_by_type()
        for logical_id, resource in sorted(created.items()):
            check = checks.get(resource.resource_type)
            if check:
                check(resource, resources[logical_id].get("Properties", {}), created)
                report.checked[resource.resource_type] += 1
        self._check_rule_patterns(created, settings)
        return report

    def check_destroyed(self, template: dict[str, Any], last_deployed: dict[str, StackResource]) -> DestroyReport:
        """The stack is gone; every resource it created is gone, except those the template retains."""
        try:
            self.stack_status()
        except ClientError as err:
            require("does not exist" in str(err), f"DescribeStacks after the destroy: {err}")
        else:
            raise DeployCheckError(f"stack {self.stack_name} still exists after the destroy")
        resources = template_resources(template)
        report = DestroyReport()
        for logical_id, resource in sorted(last_deployed.items()):
            exists = self.exists(resource)
            if exists is None:
                continue
            keep = resources.get(logical_id, {}).get("DeletionPolicy") == "Retain"
            require(exists == keep, f"{resource.resource_type} {logical_id}: exists={exists} after the destroy")
            (report.retained if keep else report.deleted)[resource.resource_type] += 1
        require(sum(report.deleted.values()) > 0, "no resource of the stack was probed after the destroy")
        return report

    def _check_rule_patterns(self, created: dict[str, StackResource], settings: Settings) -> None:
        events = self.client("events")
        deployed = [
            json.loads(pattern)
            for r in created.values()
            if r.resource_type == "AWS::Events::Rule"
            and (pattern := events.describe_rule(Name=r.physical_id).get("EventPattern"))
        ]
        expected = expected_rule_patterns(settings)
        require(
            sorted(map(canonical_json, deployed)) == sorted(map(canonical_json, expected)),
            f"the rules' patterns {deployed} are not the stack's {expected}",
        )

    def settings_applied(self, report: StackReport, settings: Settings) -> str:
        """The settings `make deploy-local` changes on update, read back from what was deployed: every
        function's dry run, the quota check's schedule, and the roles that may be passed to SageMaker."""
        functions = [r for r in report.created.values() if r.resource_type == "AWS::Lambda::Function"]
        dry_run = "true" if settings.dry_run else "false"
        for function in functions:
            config = self.client("lambda").get_function_configuration(FunctionName=function.physical_id)
            require(config["Environment"]["Variables"]["TRAINGUARD_DRY_RUN"] == dry_run, f"{function.logical_id}")
        schedule = f"rate({settings.quota_check_minutes} minutes)"
        schedules = [
            self.client("events").describe_rule(Name=r.physical_id).get("ScheduleExpression")
            for r in report.created.values()
            if r.resource_type == "AWS::Events::Rule"
        ]
        require(schedule in schedules, f"no rule with {schedule}: {schedules}")
        passing = self.roles_passing_to_sagemaker(report)
        require(bool(passing) == bool(settings.passable_role_arns), f"PassRole to SageMaker in {sorted(passing)}")
        for role, passed in passing.items():
            require(passed == set(settings.passable_role_arns), f"{role} may pass {sorted(passed)}")
        cloudtrail = "on" if settings.watch_failed_launches else "off"
        return (
            f"TRAINGUARD_DRY_RUN={dry_run} in {len(functions)} functions, {schedule}, CloudTrail rule {cloudtrail}, "
            f"{len(passing)} roles may pass {len(settings.passable_role_arns)} execution roles to SageMaker"
        )

    def roles_passing_to_sagemaker(self, report: StackReport) -> dict[str, set[str]]:
        """Per role of the stack, the role ARNs its inline policies let it pass to SageMaker."""
        iam = self.client("iam")
        passing: dict[str, set[str]] = {}
        for role in (r for r in report.created.values() if r.resource_type == "AWS::IAM::Role"):
            for name in iam.list_role_policies(RoleName=role.physical_id)["PolicyNames"]:
                document = iam.get_role_policy(RoleName=role.physical_id, PolicyName=name)["PolicyDocument"]
                for statement in policy_statements(document):
                    condition = statement.get("Condition", {}).get("StringEquals", {})
                    if (
                        "iam:PassRole" in as_list(statement["Action"])
                        and condition.get("iam:PassedToService") == "sagemaker.amazonaws.com"
                    ):
                        passing.setdefault(role.logical_id, set()).update(as_list(statement["Resource"]))
        return passing
