"""A spoke of the organization's hub (docs/organization.md): one account and region whose training jobs the hub
guards. No function, no table, no topic: the spoke forwards its events and lets the hub's functions in.

- Rules on the default bus, with the hub's patterns (infra/event_patterns.py), whose target is the hub's bus;
  EventBridge puts the events there with this stack's forwarding role, `trainguard-spoke-forward-to-hub-<region>`
  (PutEvents on that one bus; the hub's bus takes events from this role only), and keeps their `account` and
  `region`. Only EventBridge may assume it, for this account's rules (aws:SourceAccount, aws:SourceArn). A
  forward that fails waits in this stack's dead-letter queue.
- For each hub function that acts in a job's account, a role `trainguard-spoke-<function>-<region>` that only
  that function's hub role can assume (`aws:PrincipalArn`, optionally `aws:PrincipalOrgID` too), with exactly
  the statements the function has in a single-account stack for the calls that land in the job's account
  (infra/grants.py, trainguard.adapters.spoke_roles.IN_JOB_ACCOUNT_PORTS), scoped to this account and region.

It has no asset, so its template deploys with CloudFormation StackSets as well as with `cdk deploy`. The settings
that shape its grants (tag_prefix, passable_role_arns, checkpoint_buckets, watch_failed_launches,
launchable_instance_types) must be the hub's; a listed execution role is passable only in its own account, by its
exact ARN.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import Aws, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_logs_destinations as logs_destinations
from constructs import Construct

from infra import spoke_log_forwarder
from infra.action_groups import TRAINING_JOBS_REASON
from infra.event_patterns import guarded_events, spoke_log_lines_pattern
from infra.grants import LAUNCH_JOBS, LAUNCH_ON_PLANS, TAG_ON_CREATE, Grants
from infra.guard_function import dead_letter_queue, event_pattern, guard_function
from infra.nag import PendingAcknowledgments, nag_arn
from infra.port_permissions import FUNCTION_HANDLERS
from infra.quota_walls import FAILED_LAUNCHES_HANDLER
from infra.settings import Settings
from infra.stack import acts_in_job_account, in_job_account_actions
from trainguard.adapters.job_activity import LOG_GROUP as TRAINING_LOG_GROUP
from trainguard.adapters.spoke_roles import (
    forwarding_role_name,
    function_key,
    hub_event_bus_arn,
    hub_role_name,
    spoke_role_name,
)
from trainguard.events.log_subscription import SPOKE_LOG_DETAIL_TYPE, SPOKE_LOG_SOURCE


def acting_handlers(settings: Settings) -> list[str]:
    """The hub functions that act in a job's account, each with a role in every spoke (the failed-launches
    function only where its events are watched)."""
    return [
        handler
        for handler in FUNCTION_HANDLERS
        if acts_in_job_account(handler) and (handler != FAILED_LAUNCHES_HANDLER or settings.watch_failed_launches)
    ]


# The launch statements, the same for every function that launches (its SageMaker adapter's `create`): written once,
# in one managed policy the launching roles share, so that the deployer's list of launchable instance types is in the
# spoke's template once, not once per role (the template must stay small: tests/infra/test_organization.py).
LAUNCH_ACTIONS = frozenset({*LAUNCH_JOBS.group, *TAG_ON_CREATE.group, *LAUNCH_ON_PLANS.group})


def _passes_roles(handler: str) -> bool:
    return "iam:PassRole" in in_job_account_actions(handler).get("jobs", ())


class TrainGuardSpokeStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: Settings,
        hub_account: str,
        hub_region: str,
        organization_id: str = "",
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.settings = settings
        self.hub_account, self.organization_id = hub_account, organization_id
        self.grants = Grants(stack=self, settings=settings, acknowledgments=PendingAcknowledgments())
        self._launch_policy: iam.ManagedPolicy | None = None
        self._forward_to(hub_event_bus_arn(hub_account, hub_region, Aws.PARTITION))
        training_logs = logs.LogGroup.from_log_group_name(self, "TrainingLogs", TRAINING_LOG_GROUP)
        self.log_forwarder = self._forward_log_lines(training_logs) if settings.subscribe_to_training_logs else None
        self.roles = {
            function_key(handler): self._spoke_role(handler, training_logs) for handler in acting_handlers(settings)
        }
        passing = [self.roles[function_key(h)] for h in acting_handlers(settings) if _passes_roles(h)]
        self.grants.allow_passing_execution_roles_of_the_account(passing)
        self.grants.acknowledgments.acknowledge_all()

    def _forward_to(self, hub_bus_arn: str) -> None:
        hub_bus = events.EventBus.from_event_bus_arn(self, "HubBus", hub_bus_arn)
        self.forward_dead_letter_queue = dead_letter_queue(
            self, "ForwardDeadLetterQueue", holds="the events this spoke could not put on the hub's bus"
        )
        patterns = guarded_events(self.settings.watch_failed_launches)
        if self.settings.subscribe_to_training_logs:  # the log forwarder's events (_forward_log_lines)
            patterns["LogLines"] = spoke_log_lines_pattern()
        # EventBridge's confused-deputy guidance: aws:SourceAccount, and aws:SourceArn, which "for EventBridge event bus
        # rule targets ... must be the rule ARN" ("Cross-service confused deputy prevention in Amazon EventBridge").
        # The rules name this role, so their ARNs cannot be named here (a cycle): this account's rules, this region.
        this_accounts_rules = f"arn:{Aws.PARTITION}:events:{Aws.REGION}:{Aws.ACCOUNT_ID}:rule/*"
        self.forward_role = iam.Role(
            self,
            "ForwardToHubRole",
            role_name=forwarding_role_name(Aws.REGION),
            assumed_by=iam.ServicePrincipal(
                "events.amazonaws.com",
                conditions={
                    "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                    "ArnLike": {"aws:SourceArn": this_accounts_rules},
                },
            ),
            description="trainguard spoke: EventBridge puts this account's training-job events on the hub's bus",
        )
        target = targets.EventBus(hub_bus, role=self.forward_role, dead_letter_queue=self.forward_dead_letter_queue)
        self.forward_rules = [
            events.Rule(
                self,
                f"Forward{name}",
                description=f"trainguard spoke: {name} to the hub's bus",
                event_pattern=event_pattern(pattern),
                targets=[target],
            )
            for name, pattern in patterns.items()
        ]

    def _forward_log_lines(self, training_logs: logs.ILogGroup) -> lambda_.Function:
        """The log rhythm's way to the hub: a subscription on SageMaker's training log group here, to a small
        function (infra/spoke_log_forwarder.py, inline) that puts each delivery on this account's default bus, from
        where the forwarding rule of its pattern takes it to the hub's bus, as it takes every other event: with
        its role and its dead-letter queue, and with this account and region as the event's origin."""
        function = guard_function(
            self,
            "LogForwarder",
            code=lambda_.Code.from_inline(Path(spoke_log_forwarder.__file__).read_text()),
            handler="index.handler",
            description="trainguard spoke: puts this account's training log deliveries on the hub's bus",
            dead_letter_queue=self.forward_dead_letter_queue,
        )
        function.add_environment("SOURCE", SPOKE_LOG_SOURCE)
        function.add_environment("DETAIL_TYPE", SPOKE_LOG_DETAIL_TYPE)
        default_bus = events.EventBus.from_event_bus_name(self, "DefaultBus", "default")
        default_bus.grant_put_events_to(function)
        # LambdaDestination also lets logs.amazonaws.com invoke the function, from this log group only.
        logs.SubscriptionFilter(
            self,
            "TrainingLogsToHub",
            log_group=training_logs,
            destination=logs_destinations.LambdaDestination(function),
            filter_pattern=logs.FilterPattern.all_events(),
        )
        return function

    @property
    def launch_policy(self) -> iam.ManagedPolicy:
        """The launch statements (CreateTrainingJob on opted-in jobs and their plans, AddTags on create), built once."""
        if self._launch_policy is None:
            policy = iam.ManagedPolicy(
                self, "LaunchPolicy", description="trainguard spoke: launch opted-in training jobs (hub functions)"
            )
            self.grants.allow_launching_opted_in_training_jobs(policy)
            self.grants.allow_tagging_the_jobs_it_creates(policy)
            self.grants.allow_launching_on_training_plans(policy)
            self._launch_policy = policy
        return self._launch_policy

    def _spoke_role(self, handler: str, training_logs: logs.ILogGroup) -> iam.Role:
        """The role the hub's function `handler` assumes here, with its statements for the job's account."""
        key = function_key(handler)
        hub_role = f"arn:{Aws.PARTITION}:iam::{self.hub_account}:role/{hub_role_name(key)}"
        conditions: dict[str, Any] = {"ArnEquals": {"aws:PrincipalArn": hub_role}}
        if self.organization_id:
            conditions["StringEquals"] = {"aws:PrincipalOrgID": self.organization_id}
        role = iam.Role(
            self,
            f"{key.title().replace('-', '')}SpokeRole",
            role_name=spoke_role_name(key, Aws.REGION),
            assumed_by=iam.AccountPrincipal(self.hub_account).with_conditions(conditions),
            description=f"trainguard spoke: what the hub's {key} function does in this account and region",
        )
        by_port = in_job_account_actions(handler)
        needed = frozenset().union(*by_port.values())
        placed = self.grants.allow_what_it_calls(role, needed - LAUNCH_ACTIONS, training_logs)
        if launches := needed & LAUNCH_ACTIONS:
            self.launch_policy.attach_to_role(role)
            placed |= launches
            # Its DescribeTrainingJob on the same ARN is acknowledged with the launch's reason (infra/grants.py).
            jobs = f"AwsSolutions-IAM5[Resource::{nag_arn(self.grants.training_jobs_arn)}]"
            self.grants.acknowledgments.add(role, jobs, TRAINING_JOBS_REASON)
        if _passes_roles(handler):  # the listed roles of this account (Grants.allow_passing_..._of_the_account)
            placed.add("iam:PassRole")
        if unplaced := needed - placed:
            raise ValueError(f"the spoke role of {key} needs {sorted(unplaced)}, which no statement grants")
        return role
