"""`make deploy-local-org`: an organization's hub and two spokes (docs/organization.md), deployed with the real CDK
CLI into moto server on localhost, checked, and destroyed.

    start moto server -> hub: cdk bootstrap, cdk deploy TrainGuard with two accounts and two regions enrolled
    -> spoke A (111111111111, us-east-1) and spoke B (222222222222, us-west-2): cdk deploy TrainGuardSpoke
    -> check the hub's bus, rules and role names, and each spoke's roles, trust and forwarding rules
    -> cdk destroy the spokes and the hub -> check they are gone

The hub is moto's default account. A spoke's credentials come from STS AssumeRole in moto server, which acts in
the account the role's ARN names (moto's multi-account support). The spokes are not bootstrapped: their stack
has no asset and a template CloudFormation takes inline (app.py gives it the legacy synthesizer). Like
`make deploy-local` (deploy.py), this is a smoke test of the deploy path. moto accepts the hub's bus policy
without creating it and does not evaluate trust policies; tests/infra/test_organization.py checks what those
policies allow.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3

from infra.settings import SPOKE_CONTEXT_KEY, Settings
from infra.spoke_stack import acting_handlers
from trainguard.adapters.spoke_roles import (
    HUB_EVENT_BUS_NAME,
    forwarding_role_name,
    function_key,
    hub_event_bus_arn,
    hub_role_name,
    spoke_role_name,
)
from trainguard_local.deploy_local.deploy import (
    LocalDeploy,
    Steps,
    local_context,
    project_context,
    run_steps,
)
from trainguard_local.deploy_local.server import REGION, moto_server
from trainguard_local.deploy_local.stack_checks import require

HUB_ACCOUNT = "123456789012"  # moto's default account
SPOKE_STACK_NAME = "TrainGuardSpoke"  # app.SPOKE_STACK_NAME
HUB_STACK_NAME = "TrainGuard"


@dataclass(frozen=True)
class Spoke:
    account: str
    region: str


SPOKES = (Spoke("111111111111", "us-east-1"), Spoke("222222222222", "us-west-2"))


def hub_context() -> dict[str, Any]:
    """cdk.json's settings, for a local deploy, with the spokes' accounts and regions enrolled."""
    return local_context(
        project_context(),
        enrolled_accounts=sorted({spoke.account for spoke in SPOKES}),
        enrolled_regions=sorted({spoke.region for spoke in SPOKES}),
    )


def spoke_arguments(settings: Mapping[str, Any], verb: str) -> list[str]:
    address = {"hub_account": HUB_ACCOUNT, "hub_region": REGION}
    context = ["-c", f"trainguard={json.dumps(settings)}", "-c", f"{SPOKE_CONTEXT_KEY}={json.dumps(address)}"]
    if verb == "deploy":
        return [SPOKE_STACK_NAME, "--require-approval", "never", *context]
    return [SPOKE_STACK_NAME, "--force", *context]


def as_spoke(endpoint: str, scratch: Path, spoke: Spoke, hub: LocalDeploy, *, verbose: bool) -> LocalDeploy:
    """A LocalDeploy whose CLI and clients act in the spoke's account and region (credentials from STS)."""
    role = f"arn:aws:iam::{spoke.account}:role/OrganizationAccountAccessRole"
    credentials = hub.client("sts").assume_role(RoleArn=role, RoleSessionName="trainguard-deploy-local")["Credentials"]
    folder = scratch / f"spoke-{spoke.account}-{spoke.region}"
    folder.mkdir()
    local = LocalDeploy(endpoint, folder, verbose=verbose)
    keys = {
        "AWS_ACCESS_KEY_ID": credentials["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": credentials["SecretAccessKey"],
        "AWS_SESSION_TOKEN": credentials["SessionToken"],
    }
    local.env.update(keys, AWS_REGION=spoke.region, AWS_DEFAULT_REGION=spoke.region)
    local.session = boto3.session.Session(
        region_name=spoke.region,
        aws_access_key_id=keys["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=keys["AWS_SESSION_TOKEN"],
    )
    local.checker.stack_name = SPOKE_STACK_NAME
    return local


def check_hub(hub: LocalDeploy, settings: Settings) -> str:
    require(hub.checker.stack_status() == "CREATE_COMPLETE", f"the hub is {hub.checker.stack_status()}")
    events = hub.client("events")
    bus = events.describe_event_bus(Name=HUB_EVENT_BUS_NAME)
    require(bus["Arn"] == hub_event_bus_arn(HUB_ACCOUNT, REGION), f"the hub's bus is {bus['Arn']}")
    rules = events.list_rules(EventBusName=HUB_EVENT_BUS_NAME)["Rules"]
    patterns = [json.loads(rule["EventPattern"]) for rule in rules]
    routed = [p for p in patterns if p.get("account") == list(settings.enrolled_accounts)]
    require(len(routed) == len(rules) - 1 and len(routed) >= 2, f"the hub's bus has rules {patterns}")
    require(all(p["region"] == list(settings.enrolled_regions) for p in routed), "a route misses the regions")
    keys = [function_key(handler) for handler in acting_handlers(settings)]
    named = [hub_role_name(key) for key in keys if hub.client("iam").get_role(RoleName=hub_role_name(key))]
    return f"bus {HUB_EVENT_BUS_NAME}, {len(routed)} routes and 1 refusal on it, roles {', '.join(named)}"


def check_spoke(local: LocalDeploy, spoke: Spoke) -> str:
    status = local.checker.stack_status()
    require(status == "CREATE_COMPLETE", f"the spoke in {spoke.account} {spoke.region} is {status}")
    iam, events = local.client("iam"), local.client("events")
    forwarding = forwarding_role_name(spoke.region)
    spoke_roles = [r for r in iam.list_roles()["Roles"] if r["RoleName"].startswith("trainguard-spoke-")]
    roles = [r for r in spoke_roles if r["RoleName"] != forwarding]
    require(len(roles) >= 5, f"the spoke has roles {[r['RoleName'] for r in roles]}")
    (forwarder,) = [json.dumps(r["AssumeRolePolicyDocument"]) for r in spoke_roles if r["RoleName"] == forwarding]
    require(
        "events.amazonaws.com" in forwarder and f'"aws:SourceAccount": "{spoke.account}"' in forwarder,
        f"{forwarding} trusts {forwarder}",
    )
    for role in roles:
        key = role["RoleName"].removeprefix("trainguard-spoke-").removesuffix(f"-{spoke.region}")
        require(role["RoleName"] == spoke_role_name(key, spoke.region), f"role {role['RoleName']}: not this region's")
        trust = role["AssumeRolePolicyDocument"]
        text = json.dumps(trust)
        hub_role = f"arn:aws:iam::{HUB_ACCOUNT}:role/{hub_role_name(key)}"
        require(hub_role in text and f"arn:aws:iam::{HUB_ACCOUNT}:root" in text, f"{role['RoleName']} trusts {text}")
    hub_bus = hub_event_bus_arn(HUB_ACCOUNT, REGION)
    rules = events.list_rules()["Rules"]
    require(len(rules) >= 2, f"the spoke has rules {[r['Name'] for r in rules]}")
    for rule in rules:
        (target,) = events.list_targets_by_rule(Rule=rule["Name"])["Targets"]
        require(target["Arn"] == hub_bus and "RoleArn" in target, f"{rule['Name']} targets {target}")
    forwarders = [f for f in local.client("lambda").list_functions()["Functions"] if f["Handler"] == "index.handler"]
    require(len(forwarders) == 1, f"the spoke has log forwarders {[f['FunctionName'] for f in forwarders]}")
    # moto 5.2.5's CloudFormation creates no AWS::Logs::SubscriptionFilter (it is not among the resource types it
    # models), so the forwarder's subscription is checked in the synthesized template (tests/infra).
    return (
        f"{spoke.account} {spoke.region}: {len(roles)} roles trusting their hub roles, {len(rules)} rules to the hub, "
        "the log forwarder"
    )


def check_gone(local: LocalDeploy, stack: str, role_names: list[str]) -> None:
    stacks = [s for s in local.client("cloudformation").list_stacks()["StackSummaries"] if s["StackName"] == stack]
    require(all(s["StackStatus"] == "DELETE_COMPLETE" for s in stacks), f"{stack}: {stacks}")
    left = {r["RoleName"] for r in local.client("iam").list_roles()["Roles"]} & set(role_names)
    require(not left, f"roles left after the destroy: {sorted(left)}")


def run(steps: Steps, scratch: Path, *, verbose: bool = False) -> None:
    context = hub_context()
    settings = Settings.from_context(context)
    with ExitStack() as server:
        with steps.step("start moto server") as step:
            endpoint = server.enter_context(moto_server())
            step.detail = endpoint
        hub = LocalDeploy(endpoint, scratch, verbose=verbose)
        with steps.step("hub: cdk bootstrap") as step:
            step.detail = hub.bootstrap()
        with steps.step("hub: cdk deploy") as step:
            hub.deploy(context, direct=False)
            step.detail = f"{HUB_STACK_NAME} {hub.checker.stack_status()}, enrolled {settings.enrolled_accounts}"
        with steps.step("check the hub") as step:
            step.detail = check_hub(hub, settings)
        spokes = {spoke: as_spoke(endpoint, scratch, spoke, hub, verbose=verbose) for spoke in SPOKES}
        for spoke, local in spokes.items():
            with steps.step(f"spoke {spoke.account}: cdk deploy") as step:
                local.cdk("deploy", *spoke_arguments(context, "deploy"))
                step.detail = f"{SPOKE_STACK_NAME} {local.checker.stack_status()} in {spoke.region}, not bootstrapped"
            with steps.step(f"check spoke {spoke.account}") as step:
                step.detail = check_spoke(local, spoke)
        for spoke, local in spokes.items():
            with steps.step(f"spoke {spoke.account}: cdk destroy") as step:
                names = [r["RoleName"] for r in local.client("iam").list_roles()["Roles"]]
                local.cdk("destroy", *spoke_arguments(context, "destroy"))
                check_gone(local, SPOKE_STACK_NAME, names)
                step.detail = f"{SPOKE_STACK_NAME} and its {len(names)} roles gone"
        with steps.step("hub: cdk destroy") as step:
            hub.cdk("destroy", HUB_STACK_NAME, "--force", "--app", str(hub.output_dir))
            check_gone(hub, HUB_STACK_NAME, [hub_role_name("job-events")])
            step.detail = f"{HUB_STACK_NAME} gone"


def main(argv: list[str] | None = None) -> int:
    verbose = "--verbose" in (argv if argv is not None else sys.argv[1:])
    return run_steps("deploy-local-org", run, verbose=verbose)


if __name__ == "__main__":
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    sys.exit(main())
