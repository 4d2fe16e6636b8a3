"""The schedule group `make deploy-local` teaches moto's CloudFormation: without it, the stack's scheduler
role (whose trust policy names the group's ARN with Fn::GetAtt) fails the whole deploy in moto."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from trainguard_local.deploy_local import cloudformation_extras

# The shape trainguard's stack has (infra/job_events.py): a named group, and a role that trusts
# EventBridge Scheduler only for that group's ARN.
TEMPLATE: dict[str, Any] = {
    "Resources": {
        "RetrySchedules": {
            "Type": "AWS::Scheduler::ScheduleGroup",
            "Properties": {"Name": "trainguard"},
            "DeletionPolicy": "Delete",
        },
        "SchedulerRole": {
            "Type": "AWS::IAM::Role",
            "Properties": {
                "AssumeRolePolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Action": "sts:AssumeRole",
                            "Principal": {"Service": "scheduler.amazonaws.com"},
                            "Condition": {"StringEquals": {"aws:SourceArn": {"Fn::GetAtt": ["RetrySchedules", "Arn"]}}},
                        }
                    ],
                }
            },
        },
    },
    "Outputs": {
        "GroupName": {"Value": {"Ref": "RetrySchedules"}},
        "GroupArn": {"Value": {"Fn::GetAtt": ["RetrySchedules", "Arn"]}},
    },
}
GROUP_ARN = "arn:aws:scheduler:us-east-1:123456789012:schedule-group/trainguard"


@pytest.fixture
def cloudformation() -> Any:
    cloudformation_extras.register()
    with mock_aws():
        yield boto3.client("cloudformation", region_name="us-east-1")


def outputs(cloudformation: Any) -> dict[str, str]:
    (stack,) = cloudformation.describe_stacks(StackName="Extras")["Stacks"]
    return {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}


def test_the_group_is_created_in_moto_scheduler_and_its_arn_resolves(cloudformation: Any) -> None:
    cloudformation.create_stack(StackName="Extras", TemplateBody=json.dumps(TEMPLATE))
    assert outputs(cloudformation) == {"GroupName": "trainguard", "GroupArn": GROUP_ARN}
    group = boto3.client("scheduler", region_name="us-east-1").get_schedule_group(Name="trainguard")
    assert (group["Arn"], group["State"]) == (GROUP_ARN, "ACTIVE")
    (role,) = [r for r in boto3.client("iam").list_roles()["Roles"] if "SchedulerRole" in r["RoleName"]]
    (statement,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Condition"]["StringEquals"]["aws:SourceArn"] == GROUP_ARN


def test_the_group_is_kept_on_an_update_and_deleted_with_the_stack(cloudformation: Any) -> None:
    cloudformation.create_stack(StackName="Extras", TemplateBody=json.dumps(TEMPLATE))
    scheduler = boto3.client("scheduler", region_name="us-east-1")
    created = scheduler.get_schedule_group(Name="trainguard")["CreationDate"]
    changed = json.loads(json.dumps(TEMPLATE))
    changed["Resources"]["SchedulerRole"]["Properties"]["Description"] = "changed"
    cloudformation.update_stack(StackName="Extras", TemplateBody=json.dumps(changed))
    assert scheduler.get_schedule_group(Name="trainguard")["CreationDate"] == created
    cloudformation.delete_stack(StackName="Extras")
    with pytest.raises(ClientError) as raised:
        scheduler.get_schedule_group(Name="trainguard")
    assert raised.value.response["Error"]["Code"] == "ResourceNotFoundException"


def test_a_stack_whose_managed_policy_names_its_roles_is_deleted(cloudformation: Any) -> None:
    """The spoke's shape (infra/spoke_stack.py): one managed policy for several roles. Deleting the stack detaches
    it first, as CloudFormation does; moto alone refused the role's deletion."""
    assume = {"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"Service": "lambda.amazonaws.com"}}
    trust = {"Version": "2012-10-17", "Statement": [assume]}
    statement = {"Effect": "Allow", "Action": "sagemaker:CreateTrainingJob", "Resource": "*"}
    template = {
        "Resources": {
            "First": {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": trust}},
            "Second": {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": trust}},
            "Launch": {
                "Type": "AWS::IAM::ManagedPolicy",
                "Properties": {
                    "PolicyDocument": {"Version": "2012-10-17", "Statement": [statement]},
                    "Roles": [{"Ref": "First"}, {"Ref": "Second"}],
                },
            },
        }
    }
    cloudformation.create_stack(StackName="Shared", TemplateBody=json.dumps(template))
    iam = boto3.client("iam", region_name="us-east-1")
    assert len(iam.list_roles()["Roles"]) == 2
    cloudformation.delete_stack(StackName="Shared")
    assert iam.list_roles()["Roles"] == []  # (moto 5.2.5 leaves the managed policy itself: not our concern here)
