"""A hang of a job a parent owns, in the stand-in (moto and the simulated SageMaker on 127.0.0.1) with the production
handlers, the stall demo's harness (demo/stalls.py: the simulation core's hang on a virtual clock, the local alarm
evaluator playing CloudWatch, the stall prober every minute): the demo's hung NCCL job carries the tag SageMaker
Pipelines puts on its steps' jobs (domain/ownership.py). It is stopped once, never relaunched, and its owner gets one
message; with the setting stop_stalled_parent_jobs off, it is told once and keeps running.

How far the stand-in models the parent: by its marker only. No pipeline runs here, so what the parent does with
the stopped job (its step's end, its retry policy) is not played; docs/decisions.md has what AWS documents of it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from trainguard.handlers.wiring import reset_production_ports
from trainguard_cli.main import main
from trainguard_local.demo.stalls import JOBS, StallAct
from trainguard_local.stand_in.local_aws import LocalAWS, local_aws

pytestmark = pytest.mark.slow

HUNG = "nccl-hang"  # the demo's job whose collective hangs 30 minutes in, its GPUs at 100%
PIPELINE = {
    "sagemaker:pipeline-execution-arn": "arn:aws:sagemaker:us-east-1:123456789012:pipeline/nightly/execution/e1"
}


def played(aws: LocalAWS) -> StallAct:
    """The demo's hung job, launched by a pipeline's step, played for the act's minutes."""
    act = StallAct(aws)
    act.launch(JOBS[HUNG], PIPELINE)
    act.kernel.spawn(act.every_minute(), act.origin)
    act.kernel.run()
    return act


def messages_about(aws: LocalAWS, job: str) -> list[dict[str, Any]]:
    found = []
    for message in aws.notifications():
        attributes = {k: v["Value"] for k, v in message.get("MessageAttributes", {}).items()}
        if attributes.get("job_name") == job:
            found.append({"subject": message["Subject"], "body": message["Message"], **attributes})
    return found


@pytest.fixture
def aws(request: pytest.FixtureRequest) -> Iterator[LocalAWS]:
    reset_production_ports()
    with local_aws(**getattr(request, "param", {})) as stand_in:
        yield stand_in
    reset_production_ports()


def test_a_pipelines_hung_job_is_stopped_once_never_relaunched_and_told_once(
    aws: LocalAWS, capsys: pytest.CaptureFixture[str]
) -> None:
    act = played(aws)
    stops = [what for _, job, what in act.story.events if job == HUNG and "trainguard: stall-stopped" in what]
    assert len(stops) == 1, act.story.events
    assert act.story.first(HUNG, "Stopped (the stop took effect)") is not None
    assert act.story.first(HUNG, "relaunched") is None
    assert aws.plane.describe(HUNG)["TrainingJobStatus"] == "Stopped"
    assert aws.plane.job_names() == [HUNG]  # no copy behind the pipeline's back
    [message] = messages_about(aws, HUNG)
    assert message["subject"].endswith(f"{HUNG} stalled: stopped, its parent decides what follows")
    assert message["decision"] == "stop" and message["outcome"] == "stall-stopped"
    assert "It is not relaunched: its parent decides." in " ".join(message["body"].split())
    # The job's Stopped end is in the ledger, recorded and not acted on, with why.
    assert main(["history", HUNG, "--json"]) == 0
    timeline = json.loads(capsys.readouterr().out)["timeline"]
    [end] = [event for event in timeline if event["event"] == "end"]
    assert (end["kind"], end["decision"], end["category"]) == ("skipped", "ignore", "stall")
    assert "No relaunch" in end["reason"] and "decides what follows" in end["reason"]


@pytest.mark.parametrize("aws", [{"stop_stalled_parent_jobs": False}], indirect=True)
def test_with_the_setting_off_a_pipelines_hung_job_is_told_once_and_keeps_running(aws: LocalAWS) -> None:
    act = played(aws)
    assert act.story.first(HUNG, "stall-stopped") is None and act.story.first(HUNG, "Stopped") is None
    assert aws.plane.describe(HUNG)["TrainingJobStatus"] == "InProgress"
    [message] = messages_about(aws, HUNG)
    assert message["subject"].endswith(f"{HUNG} stalled, left to its owner") and message["decision"] == "notify"
    assert "stop_stalled_parent_jobs is off" in message["body"]
