"""Issue 27 in the stand-in (moto and the simulated SageMaker on 127.0.0.1) with the production handlers, on the stall
demo's harness (demo/stalls.py: the simulation core's jobs on a virtual clock, their lines through the log
subscription's handler, the stall prober every minute, the local alarm evaluator playing CloudWatch): a job that
prints trainguard's progress contract every 10 s hangs with its GPUs at 100% and is stopped within 5 minutes; a job
that prints the contract and announces 14-minute checkpoint saves is never stopped through three of them; a job that
prints Megatron-LM's lines keeps logging a heartbeat while its step no longer advances (a livelock) and is stopped
within 10 minutes. Each job is a trace job (a JobSpec whose reporting says how it words its lines, a Fault),
played through stand_in/played_launch.py's PlayedLaunch.of_job."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Any

import pytest

from trainguard.handlers.wiring import reset_production_ports
from trainguard_local.demo.demo_jobs import demo_fault, demo_job
from trainguard_local.demo.stalls import MINUTES, StallAct
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.reporting import CONTRACT, FRAMEWORKS, HEARTBEAT_LINE, JobReporting, Reporting
from trainguard_local.simulation.rhythm import JobRhythm, phases
from trainguard_local.simulation.trace import Fault, JobSpec
from trainguard_local.stand_in.local_aws import LocalAWS, local_aws

pytestmark = pytest.mark.slow

CONTRACT_JOB = JobReporting(Reporting.PROGRESS, CONTRACT)
MEGATRON_JOB = JobReporting(Reporting.FRAMEWORK, next(d for d in FRAMEWORKS if d.name == "megatron"))
CHATTY = replace(
    demo_job("chatty-contract", "ml.g5.12xlarge", 2, JobRhythm(10.0, 1.0, announces_phases=True), 40),
    reporting=CONTRACT_JOB,
)
LONG_SAVES = replace(
    demo_job("long-saves", "ml.g5.12xlarge", 1, JobRhythm(10.0, 14.0, announces_phases=True), 30),
    reporting=CONTRACT_JOB,
)
LIVELOCKED = replace(demo_job("livelocked", "ml.g5.xlarge", 1, JobRhythm(30.0, 2.0), 30), reporting=MEGATRON_JOB)
FAULTS: dict[str, Fault | None] = {
    CHATTY.name: demo_fault(CHATTY, FaultKind.HANG_BUSY_GPU, at_minutes=50),
    LONG_SAVES.name: None,
    LIVELOCKED.name: demo_fault(LIVELOCKED, FaultKind.LIVELOCK, at_minutes=45),
}
JOBS: tuple[JobSpec, ...] = (CHATTY, LONG_SAVES, LIVELOCKED)


@dataclass
class Played:
    aws: LocalAWS
    act: StallAct
    notifications: list[dict[str, Any]]  # what trainguard published, read once (reading takes them off the queue)


def messages_about(played: Played, job: str) -> list[dict[str, Any]]:
    found = []
    for message in played.notifications:
        attributes = {k: v["Value"] for k, v in message.get("MessageAttributes", {}).items()}
        if attributes.get("job_name") == job:
            found.append({"subject": message["Subject"], "body": " ".join(message["Message"].split()), **attributes})
    return found


@pytest.fixture(scope="module")
def played() -> Iterator[Played]:
    """The three jobs on one stand-in, played for the act's minutes."""
    reset_production_ports()
    with local_aws() as aws:
        act = StallAct(aws)
        for job in JOBS:
            act.launch(job, fault=FAULTS[job.name])
        act.kernel.spawn(act.every_minute(), act.origin)
        act.kernel.run()
        yield Played(aws, act, aws.notifications())
    reset_production_ports()


def stopped_minutes_after_strike(act: StallAct, job: JobSpec) -> int:
    fault = FAULTS[job.name]
    assert fault is not None
    struck, stopped = act.story.first(job.name, "hangs: "), act.story.first(job.name, "trainguard: stall-stopped")
    assert struck == round(fault.strikes_at * 60) and stopped is not None, act.story.events
    return stopped - struck


def test_a_chatty_contract_job_hung_with_busy_gpus_is_stopped_within_5_minutes(
    played: Played,
) -> None:
    act = played.act
    assert 0 < stopped_minutes_after_strike(act, CHATTY) <= 5  # silence and 100% GPUs alone: 30 min
    assert act.story.first(CHATTY.name, "relaunched") is not None
    [message, *_] = messages_about(played, CHATTY.name)
    assert message["outcome"] == "stall-stopped"
    assert "Progress rule for this job" in message["body"] and "trainguard:progress step=" in message["body"]
    assert "GPUUtilization peaked at 400% of a possible 400%" in message["body"]  # busy: ml.g5.12xlarge has 4 GPUs


def test_a_contract_job_in_its_long_announced_saves_is_left_alone(played: Played) -> None:
    aws, act = played.aws, played.act
    saves = phases(LONG_SAVES.rhythm, LONG_SAVES.checkpoint_every_minutes, 0.0, MINUTES / 60)
    assert len(saves) >= 3 and all(save.minutes == 14.0 for save in saves)  # each past the 2-min floor, and 5 min
    lines = [at for at, _ in act.launches[LONG_SAVES.name].activity.lines(act.origin, act.origin + MINUTES / 60)]
    assert max(b - a for a, b in pairwise(lines)) * 60 >= 14.0  # the saves were silent
    assert not [what for _, job, what in act.story.events if job == LONG_SAVES.name and "alarm" in what]
    assert aws.plane.describe(LONG_SAVES.name)["TrainingJobStatus"] == "InProgress"
    assert messages_about(played, LONG_SAVES.name) == []


def test_a_livelock_of_a_framework_job_is_stopped_within_10_minutes(played: Played) -> None:
    act = played.act
    assert 0 < stopped_minutes_after_strike(act, LIVELOCKED) <= 10
    [message, *_] = messages_about(played, LIVELOCKED.name)
    assert message["outcome"] == "stall-stopped" and f"UTC: {HEARTBEAT_LINE}" in message["body"]
    assert "Lines that do not advance the step are no progress" in message["body"]
