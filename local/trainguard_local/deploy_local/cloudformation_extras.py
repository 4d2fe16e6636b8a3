"""What moto's CloudFormation lacks for trainguard's stack, added to moto server in this process.

moto 5.2.5 deploys a template's resource types it does not know as nothing (a warning, no resource),
and a `Fn::GetAtt` on one fails the whole stack: "Template error: instance of Fn::GetAtt references
undefined resource ...". trainguard's scheduler role names its schedule group's ARN in its trust policy,
so `cdk deploy` into plain moto server stops there. This module teaches moto's CloudFormation one type,
AWS::Scheduler::ScheduleGroup, backed by moto's own EventBridge Scheduler (the group is really created
and deleted there). Importing the module registers it: moto finds its CloudFormation models as the
direct subclasses of `CloudFormationModel`.

Properties and return values, from "AWS::Scheduler::ScheduleGroup" in the CloudFormation reference
(https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-scheduler-schedulegroup.html):
`Name` (optional; a change requires replacement) and `Tags` (no interruption); `Ref` returns the name;
`Fn::GetAtt` gives `Arn`, `CreationDate`, `LastModificationDate` and `State`, of which this model answers
`Arn` and `State` (the stack uses `Arn`). A change of tags alone is not applied on update.
"""

from __future__ import annotations

from typing import Any

from moto.cloudformation import parsing
from moto.core.common_models import CloudFormationModel
from moto.scheduler.models import EventBridgeSchedulerBackend, scheduler_backends

SCHEDULE_GROUP_TYPE = "AWS::Scheduler::ScheduleGroup"


class ScheduleGroupResource(CloudFormationModel):
    """A schedule group created through CloudFormation: a handle on the group in moto's Scheduler."""

    def __init__(self, *, name: str, arn: str) -> None:
        self.name = name
        self.arn = arn

    @staticmethod
    def cloudformation_type() -> str:
        return SCHEDULE_GROUP_TYPE

    @staticmethod
    def cloudformation_name_type() -> str:
        return "Name"

    @property
    def physical_resource_id(self) -> str:
        return self.name

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr in ("Arn", "State")

    def get_cfn_attribute(self, attribute_name: str) -> str:
        if attribute_name == "Arn":
            return self.arn
        if attribute_name == "State":
            return "ACTIVE"
        raise NotImplementedError(f"{SCHEDULE_GROUP_TYPE} attribute {attribute_name}")

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[override]
        cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str, **kwargs: Any
    ) -> ScheduleGroupResource:
        properties = cloudformation_json.get("Properties", {})
        name = properties.get("Name") or resource_name
        group = _backend(account_id, region_name).create_schedule_group(name=name, tags=properties.get("Tags", []))
        return cls(name=group.name, arn=group.arn)

    @classmethod
    def update_from_cloudformation_json(  # type: ignore[override]
        cls,
        original_resource: ScheduleGroupResource,
        new_resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
    ) -> ScheduleGroupResource:
        # Name is the only property that matters here and it requires replacement: keep an unchanged group.
        if cloudformation_json.get("Properties", {}).get("Name", original_resource.name) == original_resource.name:
            return original_resource
        cls.delete_from_cloudformation_json(original_resource.name, cloudformation_json, account_id, region_name)
        return cls.create_from_cloudformation_json(new_resource_name, cloudformation_json, account_id, region_name)

    @classmethod
    def delete_from_cloudformation_json(  # type: ignore[override]
        cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str
    ) -> None:
        _backend(account_id, region_name).delete_schedule_group(resource_name)

    def is_created(self) -> bool:
        return True


def _backend(account_id: str, region_name: str) -> EventBridgeSchedulerBackend:
    return scheduler_backends[account_id][region_name]


def _rules_name_their_bus() -> None:
    """An organization's hub puts rules on its own bus (infra/hub.py): `EventBusName: {"Ref": <the bus>}`, whose
    `Ref` is the bus's name (CloudFormation reference, AWS::Events::EventBus). moto 5.2.5 resolves that Ref to its
    bus object instead, and its rule model then fails on `.split`. Give the rule model the bus's name."""
    from moto.events import models as events

    if getattr(events.Rule, "_trainguard_bus_names", False):
        return

    def named(cloudformation_json: Any) -> Any:
        properties = cloudformation_json.get("Properties", {})
        if isinstance(properties.get("EventBusName"), events.EventBus):
            properties["EventBusName"] = properties["EventBusName"].name
        return cloudformation_json

    create, delete = events.Rule.create_from_cloudformation_json, events.Rule.delete_from_cloudformation_json

    def create_named(resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kw: Any) -> Any:
        return create(resource_name, named(cloudformation_json), account_id, region_name, **kw)

    def delete_named(resource_name: str, cloudformation_json: Any, account_id: str, region_name: str) -> None:
        delete(resource_name, named(cloudformation_json), account_id, region_name)

    events.Rule.create_from_cloudformation_json = staticmethod(create_named)  # type: ignore[method-assign,assignment]
    events.Rule.delete_from_cloudformation_json = staticmethod(delete_named)  # type: ignore[method-assign,assignment]
    events.Rule._trainguard_bus_names = True  # type: ignore[attr-defined]


def _roles_let_go_of_managed_policies() -> None:
    """A spoke's launching roles share one AWS::IAM::ManagedPolicy (infra/spoke_stack.py), which names them in its
    `Roles`: CloudFormation deletes the policy, detaching it, before the roles it depends on. moto 5.2.5 deletes the
    roles first and IAM refuses ("Cannot delete entity, must detach all policies first"); detach them as the
    policy's deletion would have."""
    from moto.iam import models as iam

    if getattr(iam.Role, "_trainguard_detaches", False):
        return
    delete = iam.Role.delete_from_cloudformation_json

    def detached_then_deleted(resource_name: str, cloudformation_json: Any, account_id: str, region_name: str) -> None:
        for backend in iam.iam_backends[account_id].values():
            for role in backend.roles.values():
                if role.name == resource_name:
                    for policy in list(role.managed_policies.values()):
                        policy.detach_from(role)
        delete(resource_name, cloudformation_json, account_id, region_name)

    iam.Role.delete_from_cloudformation_json = staticmethod(detached_then_deleted)  # type: ignore[method-assign,assignment]
    iam.Role._trainguard_detaches = True  # type: ignore[attr-defined]


def register() -> None:
    """Make sure moto's CloudFormation sees the types above (its type map is cached on first use), that its
    rules can name a bus of the stack's own, and that a role can go before the managed policy that names it."""
    _rules_name_their_bus()
    _roles_let_go_of_managed_policies()
    parsing.get_model_map.cache_clear()
    parsing.get_name_type_map.cache_clear()
    if SCHEDULE_GROUP_TYPE not in parsing.get_model_map():
        raise RuntimeError(f"moto's CloudFormation did not pick up {SCHEDULE_GROUP_TYPE}")
