"""The demo's quota wall: two launches refused by quotas at 0, the requests trainguard files, hours of
review skipped on the virtual clock, one approval and the launch that waited for it, one denial."""

from __future__ import annotations

import textwrap
from datetime import timedelta
from typing import Any

from botocore.exceptions import ClientError

from trainguard_local.stand_in.fleet_side import training_request
from trainguard_local.stand_in.local_aws import LambdaContext, LocalAWS

QUOTA_JOBS: dict[str, dict[str, Any]] = {
    "gpt-finetune": {"instances": ("ml.p4d.24xlarge", 2), "review": ("APPROVED", timedelta(hours=4))},
    "vit-pretrain": {"instances": ("ml.trn1.32xlarge", 4), "review": ("DENIED", timedelta(hours=2))},
}


def user_launch(aws: LocalAWS, name: str, instance_type: str, count: int) -> str:
    """The user's own CreateTrainingJob; returns the error SageMaker answered with, or ''."""
    try:
        tags = {"trainguard:enabled": "true", "team": "research"}
        aws.client("sagemaker").create_training_job(**training_request(name, instance_type, count, tags))
    except ClientError as err:
        return f"{err.response['Error']['Code']}: {err.response['Error']['Message']}"
    return ""


def act_quota_wall(aws: LocalAWS, say: Any) -> dict[str, Any]:
    from trainguard.handlers import failed_launches, quota_watch

    report: dict[str, Any] = {"blocked": {}, "outcomes": [], "checks": [], "launched": {}}
    say("\n=== A quota wall ===\n")
    for name, spec in QUOTA_JOBS.items():
        instance_type, count = spec["instances"]
        error = user_launch(aws, name, instance_type, count)
        report["blocked"][name] = error
        say(f"user launches {name} ({count} x {instance_type}): {textwrap.shorten(error, 150) or 'created'}")
    for event in aws.receive_failed_launches():
        outcome = failed_launches.handler(event, LambdaContext())
        report["outcomes"].append(outcome)
        say(
            f"\n  {outcome['job_name']}: {outcome['kind']}\n  "
            + textwrap.fill(outcome["reason"], 110, subsequent_indent="  ")
        )
    for spec in QUOTA_JOBS.values():  # how AWS will decide each request
        instance_type, _ = spec["instances"]
        outcome_status, after = spec["review"]
        aws.quotas.decide(f"{instance_type} for training job usage", outcome_status, after=after)
    start = aws.clock()
    for hours in (1, 5):
        aws.clock.skip(start + timedelta(hours=hours) - aws.clock())
        outcomes = quota_watch.handler({"source": "aws.events"}, LambdaContext())
        report["checks"].append({"hours": hours, "outcomes": outcomes})
        say(
            f"\n+{hours} h: the periodic quota check: "
            + ("nothing to do yet, the requests are open" if not outcomes else f"{len(outcomes)} launch(es) settled")
        )
        for outcome in outcomes:
            say(f"  {outcome['job_name']}: {outcome['kind']} - {textwrap.shorten(outcome['reason'], 100)}")
    for request in aws.quotas.requests():
        say(f"Service Quotas: {request['QuotaName']} -> {request['DesiredValue']:g}: {request['Status']}")
    for name in QUOTA_JOBS:
        try:
            job = aws.client("sagemaker").describe_training_job(TrainingJobName=name)
        except ClientError:
            continue
        config = job["ResourceConfig"]
        report["launched"][name] = {
            "status": job["TrainingJobStatus"],
            "instances": config["InstanceCount"],
            "instance_type": config["InstanceType"],
            "checkpoint": job["CheckpointConfig"],
        }
        say(f"SageMaker: {name} is {job['TrainingJobStatus']}, {config['InstanceCount']} x {config['InstanceType']}")
    return report
