"""The organization's hub and a spoke, synthesized by app.py from their contexts (infra/hub.py,
infra/spoke_stack.py): the hub's bus takes events only from the enrolled accounts and acts only on enrolled
regions; each spoke role can be assumed only by its hub function's role, and allows exactly what that function
does in a job's account; the spoke forwards the hub's patterns; cdk-nag passes on both."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from infra.event_patterns import (
    failed_training_job_launch_pattern,
    spoke_log_lines_pattern,
    stall_alarm_pattern,
    training_job_state_pattern,
)
from infra.port_permissions import FUNCTION_HANDLERS
from infra.stack import in_job_account_actions
from tests.iam_evaluation import Principal, may_act_on, may_assume, may_call
from tests.infra.template_queries import CONFIGURED_CONTEXT, as_list
from trainguard.adapters.job_activity import LOG_GROUP as TRAINING_LOG_GROUP
from trainguard.adapters.spoke_roles import (
    FORWARDING_KEY,
    HUB_EVENT_BUS_NAME,
    forwarding_role_name,
    function_key,
    hub_role_name,
    spoke_role_arn,
)

pytestmark = pytest.mark.slow

HUB_ACCOUNT, HUB_REGION = "999999999999", "us-east-1"
ENROLLED_ACCOUNTS, ENROLLED_REGIONS = ["111111111111", "222222222222"], ["us-east-1", "eu-west-1"]
ORGANIZATION = "o-exampleorg1"
HUB_CONTEXT = {
    **CONFIGURED_CONTEXT,
    "subscribe_to_training_logs": True,  # the spokes' log forwarders, and the hub's route for their lines
    "enrolled_accounts": ENROLLED_ACCOUNTS,
    "enrolled_regions": ENROLLED_REGIONS,
    "organization_id": ORGANIZATION,
    # Execution roles in the spoke accounts: the same path and name in both, and one more in the first only.
    "passable_role_arns": [
        f"arn:aws:iam::{ENROLLED_ACCOUNTS[0]}:role/SageMakerTrainingRole",
        f"arn:aws:iam::{ENROLLED_ACCOUNTS[0]}:role/team/OtherTrainingRole",
        f"arn:aws:iam::{ENROLLED_ACCOUNTS[1]}:role/SageMakerTrainingRole",
    ],
}
SPOKE_CONTEXT = {"hub_account": HUB_ACCOUNT, "hub_region": HUB_REGION, "organization_id": ORGANIZATION}


@dataclass(frozen=True)
class Organization:
    hub: dict[str, Any]
    spoke: dict[str, Any]
    validation_error: str | None


@pytest.fixture(scope="module")
def organization(tmp_path_factory: pytest.TempPathFactory) -> Organization:
    from aws_cdk import App

    import app as cdk_app

    outdir = tmp_path_factory.mktemp("org.cdk.out")
    context = {"trainguard": HUB_CONTEXT, "trainguard_spoke": SPOKE_CONTEXT}
    error: str | None = None
    try:
        cdk_app.build_app(App(outdir=str(outdir), context=context)).synth()
    except RuntimeError as err:  # cdk-nag findings
        error = str(err)

    def template(name: str) -> dict[str, Any]:
        return json.loads((Path(outdir) / f"{name}.template.json").read_text())

    return Organization(template(cdk_app.STACK_NAME), template(cdk_app.SPOKE_STACK_NAME), error)


def resources(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v["Properties"] for k, v in template["Resources"].items() if v["Type"] == kind}


def statements_by_role(template: dict[str, Any]) -> list[tuple[dict[str, Any], list[str]]]:
    """Each statement of the template's role policies (inline and managed), with the logical IDs of the roles it is
    attached to."""
    return [
        (statement, [role["Ref"] for role in policy.get("Roles", [])])
        for kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy")
        for policy in resources(template, kind).values()
        for statement in policy["PolicyDocument"]["Statement"]
    ]


def joined(value: Any) -> str:
    """A Fn::Join of strings and pseudo parameters as one string: {"Ref": "AWS::Region"} -> ${AWS::Region}."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(joined(part) for part in parts)
    if "Ref" in value:
        return "${" + value["Ref"] + "}"
    return json.dumps(value, sort_keys=True)


def test_cdk_nag_passes_on_the_hub_and_the_spoke(organization: Organization) -> None:
    assert organization.validation_error is None


def test_the_hub_bus_takes_events_from_the_enrolled_accounts_in_the_organization_only(
    organization: Organization,
) -> None:
    (bus,) = resources(organization.hub, "AWS::Events::EventBus").values()
    assert bus["Name"] == HUB_EVENT_BUS_NAME
    (policy,) = resources(organization.hub, "AWS::Events::EventBusPolicy").values()
    statement = policy["Statement"]
    assert statement["Action"] == "events:PutEvents" and statement["Effect"] == "Allow"
    principals = sorted(joined(p) for p in as_list(statement["Principal"]["AWS"]))
    assert principals == [f"arn:${{AWS::Partition}}:iam::{account}:root" for account in ENROLLED_ACCOUNTS]
    assert statement["Condition"]["StringEquals"] == {"aws:PrincipalOrgID": ORGANIZATION}
    forwarders = sorted(joined(arn) for arn in as_list(statement["Condition"]["ArnLike"]["aws:PrincipalArn"]))
    assert forwarders == [
        f"arn:${{AWS::Partition}}:iam::{account}:role/{forwarding_role_name('*')}" for account in ENROLLED_ACCOUNTS
    ]
    assert set(statement["Condition"]) == {"StringEquals", "ArnLike"}


@pytest.mark.parametrize("region", ENROLLED_REGIONS)
def test_only_a_spokes_forwarding_role_may_put_events_on_the_hubs_bus(organization: Organization, region: str) -> None:
    (policy,) = resources(organization.hub, "AWS::Events::EventBusPolicy").values()
    bus_policy, render = {"Statement": [policy["Statement"]]}, _render(HUB_ACCOUNT, HUB_REGION)
    enrolled, forwarder = ENROLLED_ACCOUNTS[0], forwarding_role_name(region)

    def may_put(arn: str, organization_id: str = ORGANIZATION) -> bool:
        return may_act_on(bus_policy, Principal(arn, organization_id), "events:PutEvents", render)

    assert may_put(f"arn:aws:iam::{enrolled}:role/{forwarder}")
    for other in (
        f"arn:aws:iam::{enrolled}:role/Admin",  # any other principal of an enrolled account (issue 24)
        f"arn:aws:iam::{enrolled}:root",
        f"arn:aws:iam::{enrolled}:user/{forwarder}",
        f"arn:aws:iam::{enrolled}:role/{spoke_role_name_of('log-activity', region)}",
        f"arn:aws:iam::333333333333:role/{forwarder}",  # the name, in an account that is not enrolled
    ):
        assert not may_put(other), other
    assert not may_put(f"arn:aws:iam::{enrolled}:role/{forwarder}", "o-otherorgxyz")


def spoke_role_name_of(key: str, region: str) -> str:
    return spoke_role_arn("0", region, key).rpartition("/")[2]


def test_the_hub_routes_the_enrolled_accounts_and_regions_and_parks_everything_else(
    organization: Organization,
) -> None:
    on_hub_bus = [r for r in resources(organization.hub, "AWS::Events::Rule").values() if "EventBusName" in r]
    patterns = [rule["EventPattern"] for rule in on_hub_bus]
    for pattern in (
        training_job_state_pattern(),
        stall_alarm_pattern(),
        failed_training_job_launch_pattern(),
        spoke_log_lines_pattern(),
    ):
        assert {**pattern, "account": ENROLLED_ACCOUNTS, "region": ENROLLED_REGIONS} in patterns
    refused = [p for p in patterns if "$or" in p]
    assert refused == [
        {
            "$or": [
                {"account": [{"anything-but": ENROLLED_ACCOUNTS}]},
                {"region": [{"anything-but": ENROLLED_REGIONS}]},
            ]
        }
    ]
    assert len(on_hub_bus) == 5
    (parked,) = [r for r in on_hub_bus if "$or" in r["EventPattern"]]
    (queue_id,) = [t["Arn"]["Fn::GetAtt"][0] for t in parked["Targets"]]
    alarms = resources(organization.hub, "AWS::CloudWatch::Alarm").values()
    watching = [
        a
        for a in alarms
        if {"Name": "QueueName", "Value": {"Fn::GetAtt": [queue_id, "QueueName"]}} in a.get("Dimensions", [])
    ]
    assert len(watching) == 1 and watching[0]["Threshold"] == 0 and watching[0]["AlarmActions"]  # told on the topic


def test_each_acting_hub_function_has_its_fixed_role_name_and_assumes_only_its_spoke_roles(
    organization: Organization,
) -> None:
    roles = {v["RoleName"]: k for k, v in resources(organization.hub, "AWS::IAM::Role").items() if "RoleName" in v}
    acting = [h for h in FUNCTION_HANDLERS if any(in_job_account_actions(h).values())]
    assert sorted(roles) == sorted(hub_role_name(function_key(h)) for h in acting)
    assume = [
        (statement, policy)
        for policy in resources(organization.hub, "AWS::IAM::Policy").values()
        for statement in policy["PolicyDocument"]["Statement"]
        if "sts:AssumeRole" in as_list(statement["Action"])
    ]
    assert len(assume) == len(acting)
    for statement, policy in assume:
        (role,) = policy["Roles"]
        key = next(name for name, logical_id in roles.items() if role == {"Ref": logical_id}).removeprefix(
            "trainguard-hub-"
        )
        assert as_list(statement["Action"]) == ["sts:AssumeRole"]
        assert sorted(joined(r) for r in as_list(statement["Resource"])) == [
            f"arn:${{AWS::Partition}}:iam::{account}:role/trainguard-spoke-{key}-*" for account in ENROLLED_ACCOUNTS
        ]


def function_roles(spoke: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The spoke's roles for the hub's functions, by logical ID (the named roles but the forwarding role)."""
    return {
        logical_id: role
        for logical_id, role in resources(spoke, "AWS::IAM::Role").items()
        if "RoleName" in role and not joined(role["RoleName"]).startswith(f"trainguard-spoke-{FORWARDING_KEY}-")
    }


def test_each_spoke_role_trusts_only_its_hub_functions_role(organization: Organization) -> None:
    roles = {joined(v["RoleName"]): v for v in function_roles(organization.spoke).values()}
    acting = [h for h in FUNCTION_HANDLERS if any(in_job_account_actions(h).values())]
    assert sorted(roles) == sorted(f"trainguard-spoke-{function_key(h)}-${{AWS::Region}}" for h in acting)
    for name, role in roles.items():
        key = name.removeprefix("trainguard-spoke-").removesuffix("-${AWS::Region}")
        (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
        assert trust["Action"] == "sts:AssumeRole" and trust["Effect"] == "Allow"
        assert joined(trust["Principal"]["AWS"]) == f"arn:${{AWS::Partition}}:iam::{HUB_ACCOUNT}:root"
        hub_role = joined(trust["Condition"]["ArnEquals"]["aws:PrincipalArn"])
        assert hub_role == f"arn:${{AWS::Partition}}:iam::{HUB_ACCOUNT}:role/{hub_role_name(key)}"
        assert trust["Condition"]["StringEquals"] == {"aws:PrincipalOrgID": ORGANIZATION}
        assert set(trust["Condition"]) == {"ArnEquals", "StringEquals"}


def test_each_spoke_role_allows_what_its_function_does_in_a_jobs_account_and_nothing_else(
    organization: Organization,
) -> None:
    template = organization.spoke
    names = {k: joined(v["RoleName"]) for k, v in function_roles(template).items()}
    granted: dict[str, set[str]] = {}
    for statement, role_ids in statements_by_role(template):
        for role_id in role_ids:
            if role_id in names:
                granted.setdefault(names[role_id], set()).update(as_list(statement["Action"]))
    for handler in FUNCTION_HANDLERS:
        needed = frozenset().union(*in_job_account_actions(handler).values())
        if needed:
            assert granted[f"trainguard-spoke-{function_key(handler)}-${{AWS::Region}}"] == set(needed), handler
    assert not any(a.startswith(("dynamodb:", "sns:", "scheduler:", "sts:")) for a in set().union(*granted.values()))


def test_the_spoke_forwards_the_hubs_patterns_to_the_hub_bus_with_its_own_role(organization: Organization) -> None:
    rules = list(resources(organization.spoke, "AWS::Events::Rule").values())
    assert sorted(json.dumps(r["EventPattern"], sort_keys=True) for r in rules) == sorted(
        json.dumps(p, sort_keys=True)
        for p in (
            training_job_state_pattern(),
            stall_alarm_pattern(),
            failed_training_job_launch_pattern(),
            spoke_log_lines_pattern(),  # the log forwarder's events, put on this account's default bus
        )
    )
    hub_bus = f"arn:${{AWS::Partition}}:events:{HUB_REGION}:{HUB_ACCOUNT}:event-bus/{HUB_EVENT_BUS_NAME}"
    for rule in rules:
        (target,) = rule["Targets"]
        assert joined(target["Arn"]) == hub_bus and "RoleArn" in target and "DeadLetterConfig" in target
    roles = resources(organization.spoke, "AWS::IAM::Role")
    function_role_ids = function_roles(organization.spoke)
    trusted = sorted(
        json.dumps(role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"])
        for logical_id, role in roles.items()
        if logical_id not in function_role_ids
    )
    assert trusted == ['{"Service": "events.amazonaws.com"}', '{"Service": "lambda.amazonaws.com"}']  # + forwarder
    (forward_role,) = [
        role for role in roles.values() if role.get("RoleName", {}) and FORWARDING_KEY in joined(role["RoleName"])
    ]
    assert joined(forward_role["RoleName"]) == forwarding_role_name("${AWS::Region}")  # the name the hub admits
    (trust,) = forward_role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Condition"] == {
        "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
        "ArnLike": {"aws:SourceArn": trust["Condition"]["ArnLike"]["aws:SourceArn"]},
    }
    assert joined(trust["Condition"]["ArnLike"]["aws:SourceArn"]) == (
        "arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:rule/*"
    )
    put_events = [
        (statement, attached)
        for statement, attached in statements_by_role(organization.spoke)
        if "events:PutEvents" in as_list(statement["Action"])
    ]
    default_bus = "arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:event-bus/default"
    assert sorted(joined(s["Resource"]) for s, _ in put_events) == sorted([hub_bus, default_bus])
    assert [as_list(s["Action"]) for s, _ in put_events] == [["events:PutEvents"], ["events:PutEvents"]]


def test_the_spoke_has_no_asset_and_no_bootstrap_rule_so_stacksets_can_deploy_it(organization: Organization) -> None:
    kinds = {v["Type"] for v in organization.spoke["Resources"].values()}
    assert kinds == {
        "AWS::Events::Rule",
        "AWS::IAM::Role",
        "AWS::IAM::Policy",
        "AWS::IAM::ManagedPolicy",  # the launch statements the launching roles share
        "AWS::SQS::Queue",
        "AWS::SQS::QueuePolicy",
        "AWS::Lambda::Function",  # the log forwarder, whose code is in the template (ZipFile)
        "AWS::Lambda::Permission",
        "AWS::Lambda::EventInvokeConfig",
        "AWS::Logs::LogGroup",
        "AWS::Logs::SubscriptionFilter",
    }
    (forwarder,) = resources(organization.spoke, "AWS::Lambda::Function").values()
    assert set(forwarder["Code"]) == {"ZipFile"}
    assert "BootstrapVersion" not in organization.spoke.get("Parameters", {})
    assert "CheckBootstrapVersion" not in organization.spoke.get("Rules", {})


def _render(account: str, region: str) -> Callable[[Any], str]:
    """Template values as they are in one account and region (the aws partition)."""

    def render(value: Any) -> str:
        text = joined(value)
        return (
            text.replace("${AWS::Partition}", "aws")
            .replace("${AWS::Region}", region)
            .replace("${AWS::AccountId}", account)
        )

    return render


@pytest.mark.parametrize("region", ENROLLED_REGIONS)
def test_a_spoke_role_can_be_assumed_by_its_hub_functions_role_and_nothing_else(
    organization: Organization, region: str
) -> None:
    spoke_account = ENROLLED_ACCOUNTS[0]
    render = _render(spoke_account, region)
    roles = list(function_roles(organization.spoke).values())
    keys = [render(role["RoleName"]).removeprefix("trainguard-spoke-").removesuffix(f"-{region}") for role in roles]
    assert len(keys) == 6
    for key, role in zip(keys, roles, strict=True):
        trust = role["AssumeRolePolicyDocument"]
        its_hub_role = f"arn:aws:iam::{HUB_ACCOUNT}:role/{hub_role_name(key)}"
        assert may_assume(trust, Principal(its_hub_role, ORGANIZATION), render), key
        others = [
            Principal(f"arn:aws:iam::{HUB_ACCOUNT}:role/{hub_role_name(other)}", ORGANIZATION)
            for other in keys
            if other != key
        ]
        others += [
            Principal(f"arn:aws:iam::{HUB_ACCOUNT}:role/Admin", ORGANIZATION),  # anyone else in the hub's account
            Principal(f"arn:aws:iam::{HUB_ACCOUNT}:root", ORGANIZATION),
            Principal(f"arn:aws:iam::{spoke_account}:role/{hub_role_name(key)}", ORGANIZATION),  # the name, elsewhere
            Principal(f"arn:aws:iam::{ENROLLED_ACCOUNTS[1]}:role/{hub_role_name(key)}", ORGANIZATION),
            Principal(its_hub_role, "o-otherorgxyz"),  # the right name in an account outside the organization
            Principal(its_hub_role),
        ]
        for principal in others:
            assert not may_assume(trust, principal, render), (key, principal)


def test_the_hub_can_assume_spoke_roles_in_the_enrolled_accounts_only(organization: Organization) -> None:
    render = _render(HUB_ACCOUNT, HUB_REGION)
    names = {k: v["RoleName"] for k, v in resources(organization.hub, "AWS::IAM::Role").items() if "RoleName" in v}
    for logical_id, name in names.items():
        key = name.removeprefix("trainguard-hub-")
        statements = [
            statement
            for statement, role_ids in statements_by_role(organization.hub)
            if logical_id in role_ids and any(a == "*" or a.startswith("sts:") for a in as_list(statement["Action"]))
        ]
        for account in ENROLLED_ACCOUNTS:
            for region in [*ENROLLED_REGIONS, "ap-south-1"]:  # a region the bus refuses: the role name still matches
                assert may_call(statements, "sts:AssumeRole", spoke_role_arn(account, region, key), render), key
        for other_key in {n.removeprefix("trainguard-hub-") for n in names.values()} - {key}:
            assert not may_call(
                statements, "sts:AssumeRole", spoke_role_arn(ENROLLED_ACCOUNTS[0], HUB_REGION, other_key), render
            )
        for stranger in ("333333333333", HUB_ACCOUNT):
            assert not may_call(statements, "sts:AssumeRole", spoke_role_arn(stranger, HUB_REGION, key), render)
        assert not may_call(
            statements,
            "sts:AssumeRole",
            f"arn:aws:iam::{ENROLLED_ACCOUNTS[0]}:role/OrganizationAccountAccessRole",
            render,
        )


def _deployed_in(template: dict[str, Any], account: str) -> Callable[[dict[str, Any]], bool]:
    """Whether a resource of `template` exists in `account`: no Condition, or an Fn::Equals of the account."""

    def exists(resource: dict[str, Any]) -> bool:
        if "Condition" not in resource:
            return True
        left, right = template["Conditions"][resource["Condition"]]["Fn::Equals"]
        assert left == {"Ref": "AWS::AccountId"}, left
        return bool(right == account)

    return exists


@pytest.mark.parametrize("account", [*ENROLLED_ACCOUNTS, "333333333333"])
def test_a_spoke_passes_the_exact_listed_roles_of_its_own_account_to_sagemaker_only(
    organization: Organization, account: str
) -> None:
    spoke, render = organization.spoke, _render(account, "us-east-1")
    exists = _deployed_in(spoke, account)
    names = {k: render(v["RoleName"]) for k, v in function_roles(spoke).items()}
    statements: dict[str, list[dict[str, Any]]] = {name: [] for name in names.values()}
    for resource in spoke["Resources"].values():
        if resource["Type"] not in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy") or not exists(resource):
            continue
        for role in resource["Properties"]["Roles"]:
            if role["Ref"] in names:
                statements[names[role["Ref"]]] += resource["Properties"]["PolicyDocument"]["Statement"]
    listed = [arn for arn in HUB_CONTEXT["passable_role_arns"] if arn.split(":")[4] == account]
    same_name_elsewhere = [
        f"arn:aws:iam::{account}:role/{arn.split(':role/')[1]}" for arn in HUB_CONTEXT["passable_role_arns"]
    ]
    to_sagemaker = {"iam:PassedToService": "sagemaker.amazonaws.com"}
    passing = [name for name, found in statements.items() if any("iam:PassRole" in as_list(s["Action"]) for s in found)]
    assert len(passing) == (4 if listed else 0)  # job events, retry launcher, quota watch, failed launches
    for name in passing:
        for arn in {*listed, *same_name_elsewhere, *HUB_CONTEXT["passable_role_arns"]}:
            allowed = may_call(statements[name], "iam:PassRole", arn, render, to_sagemaker)
            assert allowed is (arn in listed), (name, arn)  # issue 24: not the listed path and name in every spoke
        assert not may_call(
            statements[name], "iam:PassRole", listed[0], render, {"iam:PassedToService": "ec2.amazonaws.com"}
        )


def test_the_spoke_template_fits_in_a_request_as_stacksets_and_an_unbootstrapped_deploy_send_it(
    organization: Organization,
) -> None:
    # CloudFormation takes a template body of at most 51,200 bytes (TemplateBody, botocore's cloudformation model);
    # larger ones need an S3 URL, which an account with nothing bootstrapped does not have. The CDK CLI sends the
    # template as YAML (makeBodyParameter: toYAML, then TemplateBody up to 50 KiB); the StackSets steps of
    # docs/organization.md send it as minified JSON. Both are kept with headroom.
    import yaml

    as_yaml = len(yaml.safe_dump(organization.spoke, default_flow_style=False, sort_keys=False))
    minified = len(json.dumps(organization.spoke, separators=(",", ":")))
    assert as_yaml < 46_000 and minified < 40_000, (as_yaml, minified)


def test_the_spoke_forwards_its_training_log_lines_to_the_hub_with_inline_code(organization: Organization) -> None:
    from infra import spoke_log_forwarder

    (forwarder,) = resources(organization.spoke, "AWS::Lambda::Function").values()
    code = Path(spoke_log_forwarder.__file__).read_text()
    assert forwarder["Code"]["ZipFile"] == code and len(code) <= 4096  # the spoke's own budget for inline code
    environment = forwarder["Environment"]["Variables"]
    assert {**spoke_log_lines_pattern()} == {
        "source": [environment["SOURCE"]],
        "detail-type": [environment["DETAIL_TYPE"]],
    }
    (subscription,) = resources(organization.spoke, "AWS::Logs::SubscriptionFilter").values()
    assert subscription["LogGroupName"] == TRAINING_LOG_GROUP and subscription["FilterPattern"] == ""
    (permission,) = resources(organization.spoke, "AWS::Lambda::Permission").values()
    assert permission["Principal"] == "logs.amazonaws.com" and "training" in joined(permission["SourceArn"]).lower()


def test_the_hub_alarms_when_a_spoke_cannot_be_served(organization: Organization) -> None:
    from trainguard.metric_names import SPOKE_FAILURES

    alarms = [
        a
        for a in resources(organization.hub, "AWS::CloudWatch::Alarm").values()
        if a.get("MetricName") == SPOKE_FAILURES
    ]
    assert len(alarms) == 1 and alarms[0]["Threshold"] == 0 and alarms[0]["AlarmActions"]
    assert alarms[0]["Namespace"] == "TrainGuard" and alarms[0]["Dimensions"] == [
        {"Name": "service", "Value": "trainguard"}
    ]


@pytest.mark.parametrize("side", ["hub", "spoke"])
def test_every_create_training_job_grant_is_bounded_by_the_launchable_instance_types(
    organization: Organization, side: str
) -> None:
    template = getattr(organization, side)
    launchable = HUB_CONTEXT["launchable_instance_types"]
    creating = [s for s, _ in statements_by_role(template) if "sagemaker:CreateTrainingJob" in as_list(s["Action"])]
    assert creating
    for statement in creating:
        assert statement["Condition"]["ForAllValues:StringEquals"] == {"sagemaker:InstanceTypes": launchable}
        assert statement["Condition"]["Null"] == {"sagemaker:InstanceTypes": "false"}
    render = _render(ENROLLED_ACCOUNTS[0], "us-east-1")
    job = f"arn:aws:sagemaker:us-east-1:{ENROLLED_ACCOUNTS[0]}:training-job/llama-pretrain-retry1"
    opted_in = {"aws:RequestTag/trainguard:enabled": "true"}
    for types, allowed in ((launchable[:1], True), (["ml.p5.48xlarge"], False), (None, False)):
        context = {**opted_in, **({} if types is None else {"sagemaker:InstanceTypes": types})}
        assert may_call(creating, "sagemaker:CreateTrainingJob", job, render, context) is allowed, types


def service_principal_grants(template: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(logical ID, service principal, conditions) of every grant to an AWS service: role trusts, key, topic and
    queue policies, and Lambda permissions (their SourceAccount and SourceArn as the condition keys they are)."""
    documents = {
        "AWS::IAM::Role": "AssumeRolePolicyDocument",
        "AWS::KMS::Key": "KeyPolicy",
        "AWS::SNS::TopicPolicy": "PolicyDocument",
        "AWS::SQS::QueuePolicy": "PolicyDocument",
    }
    found = []
    for logical_id, resource in template["Resources"].items():
        properties = resource.get("Properties", {})
        if resource["Type"] == "AWS::Lambda::Permission":
            keys = {f"aws:{name}": properties[name] for name in ("SourceAccount", "SourceArn") if name in properties}
            found.append((logical_id, properties["Principal"], {"StringEquals": keys}))
        elif resource["Type"] in documents:
            for statement in properties[documents[resource["Type"]]]["Statement"]:
                principal = statement.get("Principal", {})
                for service in as_list(principal.get("Service", []) if isinstance(principal, dict) else []):
                    found.append((logical_id, service, statement.get("Condition", {})))
    return found


@pytest.mark.parametrize("side", ["hub", "spoke"])
def test_every_grant_to_an_aws_service_is_bound_to_this_accounts_own_resources(
    organization: Organization, side: str
) -> None:
    """Cross-service confused deputy: aws:SourceAccount, or an aws:SourceArn that names this account's resource
    (EventBridge, IAM User Guide: "If the aws:SourceArn value does not contain the account ID ... you must use both").
    The functions' roles trust lambda.amazonaws.com alone: Lambda assumes a function's execution role itself, for
    that function only, and its documentation gives no source key for that trust."""
    template = getattr(organization, side)
    grants = service_principal_grants(template)
    assert {service for _, service, _ in grants} >= {"events.amazonaws.com", "lambda.amazonaws.com"}
    for logical_id, service, conditions in grants:
        if service == "lambda.amazonaws.com":
            continue
        keys = {key: value for tests in conditions.values() for key, value in tests.items()}
        source_arn = keys.get("aws:SourceArn")
        names_this_account = source_arn is not None and (
            "${AWS::AccountId}" in joined(source_arn) or "Fn::GetAtt" in json.dumps(source_arn)
        )
        assert keys.get("aws:SourceAccount") == {"Ref": "AWS::AccountId"} or names_this_account, (logical_id, service)
        if service in ("cloudwatch.amazonaws.com",):  # issue 24: the topic key's grant, as the topic's
            assert keys["aws:SourceAccount"] == {"Ref": "AWS::AccountId"} and names_this_account, logical_id


def test_the_spoke_template_still_fits_with_the_most_launchable_instance_types(tmp_path: Path) -> None:
    """The deployer's list is in the spoke's launch statements once (a managed policy the launching roles share),
    so the longest list the settings take keeps the template within the size the test above holds it to."""
    import yaml
    from aws_cdk import App

    import app as cdk_app
    from infra.settings import MAX_LAUNCHABLE_TYPES

    types = [f"ml.p{i % 10}.{i}xlarge" for i in range(MAX_LAUNCHABLE_TYPES)]
    context = {"trainguard": {**HUB_CONTEXT, "launchable_instance_types": types}, "trainguard_spoke": SPOKE_CONTEXT}
    cdk_app.build_app(App(outdir=str(tmp_path), context=context)).synth()
    spoke = json.loads((tmp_path / f"{cdk_app.SPOKE_STACK_NAME}.template.json").read_text())
    as_yaml = len(yaml.safe_dump(spoke, default_flow_style=False, sort_keys=False))
    assert as_yaml < 46_000 and len(json.dumps(spoke, separators=(",", ":"))) < 40_000, as_yaml
