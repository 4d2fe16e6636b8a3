"""The organization's hub (docs/organization.md): what a trainguard stack adds when other accounts are enrolled.

- A bus of its own, `trainguard-hub`, whose resource policy lets only the spokes' forwarding roles put events on
  it (`trainguard-spoke-forward-to-hub-<region>` of each enrolled account, by `aws:PrincipalArn`; and,
  with `organization_id`, only from inside the organization): any other principal's PutEvents on it, and a
  spoke anywhere else, is refused by EventBridge itself. (What the forwarding rules carry is what reaches the
  spoke's own default bus, where anyone of that account may put a `trainguard.spoke` event: SECURITY.md, "Known
  gaps".)
- On that bus, the same rules to the same functions as on the default bus, for the enrolled accounts and regions
  only (an event's `account` and `region` are its origin's: EventBridge keeps them when a rule forwards it,
  https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-cross-account.html). An event from an account or
  a region that is not enrolled matches one rule only, which parks it in a queue, where it is counted (the
  rule's MatchedEvents metric, the queue's depth, an alarm to the topic) and goes no further.
- Each function that acts in a job's account gets a fixed role name, `trainguard-hub-<function>`, which that
  function's spoke role trusts, and may assume that spoke role in the enrolled accounts only.

Nothing here is built for a single-account stack: every grant there has a purpose a test checks (tests/infra/
test_every_grant_has_a_purpose.py, test_iam_policies.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import Aws
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.event_patterns import from_enrolled, not_enrolled
from infra.guard_function import (
    ALARM_PERIOD,
    alarm_above_zero,
    dead_letter_queue,
    guard_metric,
    rule_to_function,
)
from infra.nag import PendingAcknowledgments, nag_arn
from infra.settings import Settings
from trainguard.adapters.permissions import actions_of
from trainguard.adapters.spoke_roles import (
    HUB_EVENT_BUS_NAME,
    forwarding_role_name,
    function_key,
    hub_role_name,
    spoke_role_name,
)
from trainguard.adapters.spoke_sessions import SpokeSessions
from trainguard.metric_names import SPOKE_FAILURES

# What a hub function's own role needs to act in a spoke: the declaration of the method that takes the credentials.
SPOKE_CREDENTIAL_ACTIONS = actions_of(SpokeSessions, "_assume")
SPOKE_ROLES_REASON = (
    "A spoke deploys one role per hub function in each of its regions, named trainguard-spoke-<function>-<region>; "
    "the hub may assume that function's spoke roles in the enrolled accounts only, in whichever enrolled region "
    "the job runs (the region is the name's last part)."
)


@dataclass(frozen=True)
class Route:
    """An event the hub acts on: its pattern (infra/event_patterns.py), the function and its dead-letter queue."""

    name: str
    pattern: dict[str, Any]
    function: lambda_.IFunction
    dead_letter_queue: sqs.IQueue


class Hub(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: Settings,
        routes: Sequence[Route],
        acting_functions: Sequence[tuple[lambda_.Function, str]],
        acknowledgments: PendingAcknowledgments,
        alarm_topic: sns.ITopic,
    ) -> None:
        super().__init__(scope, construct_id)
        accounts, regions = settings.enrolled_accounts, settings.enrolled_regions
        self.bus = events.EventBus(self, "Bus", event_bus_name=HUB_EVENT_BUS_NAME)
        statement = iam.PolicyStatement(
            sid="EnrolledSpokesPutEvents",
            principals=[iam.AccountPrincipal(account) for account in accounts],
            actions=["events:PutEvents"],
            resources=[self.bus.event_bus_arn],
            conditions=_from_forwarding_roles(accounts, settings.organization_id),
        )
        # The L1 resource with the whole statement (CDK's add_to_resource_policy goes through a deprecated property).
        self.bus_policy = events.CfnEventBusPolicy(
            self,
            "BusPolicy",
            event_bus_name=self.bus.event_bus_name,
            statement_id="EnrolledSpokesPutEvents",
            statement=statement.to_statement_json(),
        )
        self.rules = [
            _route_on(self, self.bus, route, from_enrolled(route.pattern, accounts, regions)) for route in routes
        ]
        self.refused_events = dead_letter_queue(
            self, "RefusedEvents", holds="the hub's events from accounts or regions that are not enrolled"
        )
        self.refused_rule = events.Rule(
            self,
            "RefuseOthers",
            event_bus=self.bus,
            description="trainguard hub: events from accounts or regions not enrolled, kept here and not acted on",
            event_pattern=events.EventPattern(account=list(accounts)),  # replaced below: CDK's struct has no $or
            targets=[targets.SqsQueue(self.refused_events)],
        )
        cfn_refused = self.refused_rule.node.default_child
        assert isinstance(cfn_refused, events.CfnRule)
        cfn_refused.add_property_deletion_override("EventPattern.account")
        cfn_refused.add_property_override("EventPattern.$or", not_enrolled(accounts, regions)["$or"])
        self.refused_alarm = alarm_above_zero(
            self,
            "RefusedEventsAlarm",
            metric=self.refused_events.metric_approximate_number_of_messages_visible(
                period=ALARM_PERIOD, statistic=cloudwatch.Stats.MAXIMUM
            ),
            description="trainguard hub: events came from an account or region that is not enrolled and were not "
            "acted on; read them in the hub's RefusedEvents queue, then enroll the spoke or remove its rules.",
            topic=alarm_topic,
        )
        self.spoke_failures_alarm = alarm_above_zero(
            self,
            "SpokeFailuresAlarm",
            metric=guard_metric(SPOKE_FAILURES, statistic=cloudwatch.Stats.SUM, period=ALARM_PERIOD),
            description="trainguard hub: the stall prober or the quota watch could not serve an enrolled account "
            "and region (its spoke stack not deployed there, or a call refused); its jobs are not probed. Read the "
            "function's log (job_account, job_region), then deploy the spoke there or change the enrolled regions.",
            topic=alarm_topic,
        )
        for function, handler in acting_functions:
            self._act_in_spokes(function, function_key(handler), accounts, acknowledgments)

    def _act_in_spokes(
        self, function: lambda_.Function, key: str, accounts: Sequence[str], acknowledgments: PendingAcknowledgments
    ) -> None:
        """The function's role under its fixed name, allowed to assume its own spoke role in the enrolled accounts."""
        role = function.role
        assert isinstance(role, iam.Role)
        cfn_role = role.node.default_child
        assert isinstance(cfn_role, iam.CfnRole)
        cfn_role.role_name = hub_role_name(key)
        spoke_roles = [f"arn:{Aws.PARTITION}:iam::{account}:role/{spoke_role_name(key, '*')}" for account in accounts]
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="AssumeItsSpokeRoles", actions=list(SPOKE_CREDENTIAL_ACTIONS), resources=spoke_roles
            )
        )
        for arn in spoke_roles:
            acknowledgments.add(role, f"AwsSolutions-IAM5[Resource::{nag_arn(arn)}]", SPOKE_ROLES_REASON)


def _from_forwarding_roles(accounts: Sequence[str], organization_id: str) -> dict[str, Any]:
    """Only the spokes' forwarding roles (infra/spoke_stack.py) of the enrolled accounts. A rule whose target is
    another account's bus puts the events with the role it names: EventBridge assumes that role to call the target
    ("Sending events to an AWS service in another account", EventBridge User Guide), so the request's
    aws:PrincipalArn is the role's ARN. The account principals only make the accounts eligible; without this
    condition any principal of theirs with events:PutEvents could put events here, log lines of any time among them.
    Any region's forwarding role: a spoke in a region that is not enrolled is still parked and alarmed on here
    (RefuseOthers), not refused unseen at its own end."""
    roles = [f"arn:{Aws.PARTITION}:iam::{account}:role/{forwarding_role_name('*')}" for account in accounts]
    conditions: dict[str, Any] = {"ArnLike": {"aws:PrincipalArn": roles}}
    if organization_id:
        conditions["StringEquals"] = {"aws:PrincipalOrgID": organization_id}
    return conditions


def _route_on(scope: Construct, bus: events.IEventBus, route: Route, pattern: dict[str, Any]) -> events.Rule:
    return rule_to_function(
        scope,
        f"{route.name}FromSpokes",
        description=f"trainguard hub: {route.name} from the enrolled accounts and regions",
        pattern=pattern,
        function=route.function,
        dead_letter_queue=route.dead_letter_queue,
        event_bus=bus,
    )
