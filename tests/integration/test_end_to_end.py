"""End to end on the local stand-in: moto server + the simulated SageMaker on 127.0.0.1, the stack's
real event pattern, the production handlers and adapters, with only the endpoints changed."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from trainguard.handlers import job_events, retry_launcher
from trainguard.handlers.wiring import reset_production_ports
from trainguard_local.demo.acts import JOBS, launch, run_demo
from trainguard_local.demo.quotas import user_launch
from trainguard_local.stand_in.local_aws import LambdaContext, LocalAWS, local_aws

pytestmark = pytest.mark.slow

CAPACITY = (
    "CapacityError: Unable to provision requested ML compute capacity. Please retry using a different ML instance type."
)


@pytest.fixture
def aws() -> Iterator[LocalAWS]:
    reset_production_ports()
    with local_aws() as stand_in:
        yield stand_in
    reset_production_ports()


def ended(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Failed and Stopped events among what the rule delivered (it also delivers InProgress ones)."""
    return [e for e in events if e["detail"]["TrainingJobStatus"] in ("Failed", "Stopped")]


def creates(aws: LocalAWS) -> list[str]:
    """The jobs trainguard created (the demo's own launches excluded)."""
    names = [params["TrainingJobName"] for op, params in aws.plane.calls if op == "CreateTrainingJob"]
    return [name for name in names if name not in JOBS]


def test_the_demo_shows_the_three_jobs_and_the_quota_wall() -> None:
    report = run_demo(say=lambda *_: None)
    kinds = {(o["job_name"], o["kind"]) for o in report["outcomes"]}
    assert kinds == {
        ("llama-pretrain", "relaunched"),
        ("llama-pretrain", "already-handled"),
        ("bert-finetune", "notified"),
        ("resnet-sweep-17", "skipped"),
    }
    subjects = sorted(m["Subject"] for m in report["notifications"])
    assert subjects == [
        "[trainguard] bert-finetune ended: user-code, not retried",
        "[trainguard] gpt-finetune: launch blocked by a quota",
        "[trainguard] launched gpt-finetune after a quota wall",
        "[trainguard] loader-deadlock stalled: stopped",
        "[trainguard] nccl-hang stalled: stopped",
        "[trainguard] quota request approved: ml.p4d.24xlarge for training job usage",
        "[trainguard] quota request denied: ml.trn1.32xlarge for training job usage",
        "[trainguard] relaunched llama-pretrain",
        "[trainguard] relaunched loader-deadlock",
        "[trainguard] relaunched nccl-hang",
        "[trainguard] vit-pretrain not launched after a quota wall",
        "[trainguard] vit-pretrain: launch blocked by a quota",
    ]
    detections = report["stalls"]["detections"]
    for hung in ("loader-deadlock", "nccl-hang"):  # stopped within the threshold plus 3 minutes, relaunched
        found = detections[hung]
        assert found["stopped"] is not None and 0 <= found["stopped"] - found["signal_crossed"] <= 3, found
        assert found["relaunched"] is not None and found["relaunched"] >= found["stopped"]
    assert detections["slow-starter"]["stopped"] is None and detections["slow-starter"]["relaunched"] is None
    # The chatty job (a line every 10 s) deadlocks at t+85 with its rhythm known: stopped in minutes.
    assert detections["loader-deadlock"]["stopped"] - 85 <= 10, detections["loader-deadlock"]
    # The slow-epoch job is silent for 40 min between its epoch lines, past the fixed 30: its own rhythm keeps it
    # running.
    assert detections["slow-epochs"]["stopped"] is None and detections["slow-epochs"]["relaunched"] is None
    wall = report["quota_wall"]
    assert all(error.startswith("ResourceLimitExceeded") for error in wall["blocked"].values())
    assert [o["kind"] for o in wall["outcomes"]] == ["quota-wall", "quota-wall"]
    assert wall["checks"][0]["outcomes"] == []  # +1 h: both requests still open
    settled = {o["job_name"]: o["kind"] for o in wall["checks"][1]["outcomes"]}
    assert settled == {"gpt-finetune": "relaunched", "vit-pretrain": "not-relaunched"}
    assert wall["launched"] == {
        "gpt-finetune": {
            "status": "InProgress",
            "instances": 2,
            "instance_type": "ml.p4d.24xlarge",
            "checkpoint": {"S3Uri": "s3://demo-checkpoints/gpt-finetune/", "LocalPath": "/opt/ml/checkpoints"},
        }
    }
    relaunched = report["relaunched"]["llama-pretrain-retry1"]
    assert relaunched["checkpoint"]["S3Uri"] == "s3://demo-checkpoints/llama-pretrain/"
    assert relaunched["tags"]["trainguard:retry-of"] == "llama-pretrain"
    assert relaunched["resource_config"]["InstanceCount"] == 4


def test_duplicate_and_reordered_delivery_gives_one_relaunch(aws: LocalAWS) -> None:
    launch(aws, "llama-pretrain", JOBS["llama-pretrain"])
    running = aws.receive_rule_events()
    assert {e["detail"]["TrainingJobStatus"] for e in running} == {"InProgress"}  # watched for stalls
    aws.plane.fail("llama-pretrain", JOBS["llama-pretrain"]["reason"])
    [failed] = ended(aws.receive_rule_events())
    stale_running = json.loads(json.dumps(failed))
    stale_running["detail"].update(TrainingJobStatus="InProgress", SecondaryStatus="Training")
    stale_running["detail"].pop("FailureReason")
    deliveries = [failed] * 4 + [stale_running] * 2
    random.Random(7).shuffle(deliveries)
    outcomes = [job_events.handler(event, LambdaContext()) for event in deliveries]
    assert creates(aws) == ["llama-pretrain-retry1"]
    assert sorted(o["kind"] for o in outcomes) == ["already-handled"] * 3 + ["relaunched"] + ["skipped"] * 2
    assert len(aws.notifications()) == 1


def test_a_capacity_failure_waits_in_the_scheduler_then_relaunches_once(aws: LocalAWS) -> None:
    launch(aws, "llama-pretrain", JOBS["llama-pretrain"])
    aws.plane.fail("llama-pretrain", CAPACITY)
    [event] = ended(aws.receive_rule_events())
    outcome = job_events.handler(event, LambdaContext())
    assert outcome["kind"] == "relaunch-scheduled" and creates(aws) == []
    scheduler = aws.client("scheduler")
    [summary] = scheduler.list_schedules(GroupName="trainguard")["Schedules"]
    schedule = scheduler.get_schedule(Name=summary["Name"], GroupName="trainguard")
    assert schedule["ScheduleExpression"].startswith("at(")
    assert schedule["Target"]["Arn"] == aws.config.retry_launcher_arn
    payload: dict[str, Any] = json.loads(schedule["Target"]["Input"])
    # the schedule fires (at least once)
    fired = [retry_launcher.handler(payload, LambdaContext()) for _ in range(2)]
    assert [f["kind"] for f in fired] == ["relaunched", "already-handled"]
    assert creates(aws) == ["llama-pretrain-retry1"]
    subjects = [m["Subject"] for m in aws.notifications()]
    assert subjects == [
        "[trainguard] relaunch of llama-pretrain scheduled",
        "[trainguard] relaunched llama-pretrain",
    ]


def test_a_relaunch_of_a_relaunch_keeps_the_lineage(aws: LocalAWS) -> None:
    launch(aws, "llama-pretrain", JOBS["llama-pretrain"])
    aws.plane.fail("llama-pretrain", JOBS["llama-pretrain"]["reason"])
    for event in aws.receive_rule_events():
        job_events.handler(event, LambdaContext())
    aws.plane.start_training("llama-pretrain-retry1")
    aws.plane.fail("llama-pretrain-retry1", "InternalServerError: We encountered an internal error.")
    for event in aws.receive_rule_events():
        job_events.handler(event, LambdaContext())
    assert creates(aws) == ["llama-pretrain-retry1", "llama-pretrain-retry2"]
    tags = aws.client("sagemaker").list_tags(
        ResourceArn=aws.client("sagemaker").describe_training_job(TrainingJobName="llama-pretrain-retry2")[
            "TrainingJobArn"
        ]
    )["Tags"]
    lineage = {t["Key"]: t["Value"] for t in tags if t["Key"].startswith("trainguard:")}
    assert lineage == {
        "trainguard:enabled": "true",
        "trainguard:root-job": "llama-pretrain",
        "trainguard:attempt": "2",
        "trainguard:retry-of": "llama-pretrain-retry1",
    }


def test_a_launch_refused_by_a_quota_reaches_the_stack_at_the_stand_ins_time(aws: LocalAWS) -> None:
    """CloudTrail records the refused call when it was made: on the stand-in, its virtual clock (not the wall's)."""
    aws.clock.skip(timedelta(hours=-30))
    called_at = aws.clock()
    assert user_launch(aws, "gpt-finetune", "ml.p4d.24xlarge", 2).startswith("ResourceLimitExceeded")
    [event] = aws.receive_failed_launches()
    assert event["detail"]["eventTime"] == called_at.strftime("%Y-%m-%dT%H:%M:%SZ")
