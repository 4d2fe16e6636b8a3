"""The acts of `make demo --acts` (demo/__main__.py), against the stand-in over HTTP: the failed jobs here, the
quota wall in quotas.py, the stalls in stalls.py."""

from __future__ import annotations

import os
import textwrap
from typing import Any

from trainguard_local.demo.quotas import act_quota_wall
from trainguard_local.demo.stalls import act_stalls
from trainguard_local.stand_in.fleet_side import CHECKPOINT_BUCKET, training_request
from trainguard_local.stand_in.local_aws import LambdaContext, LocalAWS, local_aws

JOBS: dict[str, dict[str, Any]] = {
    "llama-pretrain": {
        "tags": {"trainguard:enabled": "true", "team": "llm"},
        "reason": "InternalServerError: We encountered an internal error. Please try again.",
        "instances": ("ml.p5.48xlarge", 4),
    },
    "bert-finetune": {
        "tags": {"trainguard:enabled": "true", "team": "nlp"},
        "reason": "AlgorithmError: ExecuteUserScriptError:\nExitCode 1\nErrorMessage \"KeyError: 'labels'\"",
        "instances": ("ml.g5.12xlarge", 1),
    },
    "resnet-sweep-17": {
        "tags": {"team": "vision"},
        "reason": "InternalServerError: We encountered an internal error. Please try again.",
        "instances": ("ml.g5.xlarge", 1),
    },
}


def launch(aws: LocalAWS, name: str, spec: dict[str, Any]) -> None:
    instance_type, count = spec["instances"]
    aws.client("s3").put_object(Bucket=CHECKPOINT_BUCKET, Key=f"{name}/step-000400/model.pt", Body=b"weights")
    aws.client("sagemaker").create_training_job(**training_request(name, instance_type, count, spec["tags"]))
    aws.plane.start_training(name)


def run_demo(say: Any = print) -> dict[str, Any]:
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    from trainguard.handlers.wiring import reset_production_ports

    report: dict[str, Any] = {"outcomes": [], "notifications": [], "relaunched": {}}
    with local_aws() as aws:
        reset_production_ports()
        say(
            f"Local AWS stand-in: moto at {aws.moto_url}, simulated SageMaker at "
            f"{os.environ['AWS_ENDPOINT_URL_SAGEMAKER']}\n"
        )
        report["outcomes"] = act_failed_jobs(aws, say)
        report["stalls"] = act_stalls(aws, say)
        report["quota_wall"] = act_quota_wall(aws, say)
        report["notifications"] = say_notifications(aws, say)
        report["relaunched"] = say_relaunched(aws, report["outcomes"], say)
        reset_production_ports()
    return report


def act_failed_jobs(aws: LocalAWS, say: Any) -> list[dict[str, Any]]:
    """Acts 1-3: the jobs fail, and the job-events handler answers each Failed event (the first one twice)."""
    from trainguard.handlers import job_events

    for name, spec in JOBS.items():
        launch(aws, name, spec)
        say(f"launched {name:<16} tags={spec['tags']}")
    aws.receive_rule_events()  # InProgress changes: the rule does not match them
    say("")
    for name, spec in JOBS.items():
        aws.plane.fail(name, spec["reason"])
        say(f"SageMaker: {name} Failed: {spec['reason'].splitlines()[0]}")
    events = aws.receive_rule_events()
    say(
        f"\nEventBridge rule matched {len(events)} event(s); delivering them to the job-events handler "
        "(the first one twice, as EventBridge may):\n"
    )
    outcomes = []
    for event in [events[0], *events]:
        outcome = job_events.handler(event, LambdaContext())
        outcomes.append(outcome)
        new = f" -> {outcome['new_job_name']}" if outcome["new_job_name"] else ""
        say(
            f"  {outcome['job_name']:<16} {outcome['kind']:<16}{new}\n"
            f"  {'':<16} {textwrap.shorten(outcome['reason'], 110)}"
        )
    return outcomes


def say_notifications(aws: LocalAWS, say: Any) -> list[dict[str, Any]]:
    """Every SNS message the acts published: each one's subject, and the full text of the first of each outcome."""
    notifications = list(aws.notifications())
    say(f"\nSNS: {len(notifications)} message(s) published (the full text of one of each kind)\n")
    shown: set[str] = set()
    for message in notifications:
        attributes = {k: v["Value"] for k, v in message.get("MessageAttributes", {}).items()}
        say(f"--- Subject: {message['Subject']}\n    attributes: {attributes}")
        if attributes.get("outcome") not in shown:
            shown.add(attributes.get("outcome", ""))
            say(textwrap.indent(message["Message"], "    ") + "\n")
    return notifications


def say_relaunched(aws: LocalAWS, outcomes: list[dict[str, Any]], say: Any) -> dict[str, Any]:
    """The jobs trainguard relaunched, as SageMaker describes them: status, checkpoint, instances, lineage tags."""
    relaunched: dict[str, Any] = {}
    for outcome in outcomes:
        if outcome["kind"] == "relaunched" and outcome["new_job_name"] not in relaunched:
            new = aws.client("sagemaker").describe_training_job(TrainingJobName=outcome["new_job_name"])
            tags = aws.client("sagemaker").list_tags(ResourceArn=new["TrainingJobArn"])["Tags"]
            relaunched[new["TrainingJobName"]] = {
                "status": new["TrainingJobStatus"],
                "checkpoint": new.get("CheckpointConfig"),
                "resource_config": new["ResourceConfig"],
                "tags": {t["Key"]: t["Value"] for t in tags},
            }
    for name, job in relaunched.items():
        say(
            f"Relaunched job {name}: {job['status']}, checkpoint {job['checkpoint']['S3Uri']}, "
            f"{job['resource_config']['InstanceCount']} x {job['resource_config']['InstanceType']}"
        )
        say(f"  lineage tags: { {k: v for k, v in job['tags'].items() if k.startswith('trainguard:')} }")
    return relaunched
