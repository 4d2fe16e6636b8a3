"""The stall act of `make demo --acts` (local/trainguard_local/demo/stalls.py) tells one story: every figure its
timeline and trainguard's stall notices give about a job (when it hangs, what its GPUs read, its newest line,
its checkpoint's age, the gaps its limit is learned from) is the one its description (a trace job, its rhythm and
its fault, played on the simulation core) says."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from trainguard.domain.wording import format_value
from trainguard.handlers.wiring import reset_production_ports
from trainguard_local.demo.demo_jobs import cadence
from trainguard_local.demo.stalls import FAULTS, JOBS, act_stalls
from trainguard_local.simulation.activity import LaunchActivity
from trainguard_local.simulation.fault_table import FAULT_TABLE
from trainguard_local.stand_in.local_aws import local_aws

HUNG = [name for name, fault in FAULTS.items() if FAULT_TABLE[fault.kind].hung]


@pytest.fixture(scope="module")
def act() -> Iterator[tuple[dict[str, Any], dict[str, str]]]:
    reset_production_ports()
    with local_aws() as aws:
        report = act_stalls(aws, lambda *_: None)
        notices = {m["Subject"].split()[1]: m["Message"] for m in aws.notifications() if "stalled" in m["Subject"]}
    reset_production_ports()
    yield report, notices


def _minutes_of(report: dict[str, Any], job: str, words: str) -> list[int]:
    return [minute for minute, name, what in report["timeline"] if name == job and words in what]


def test_the_timeline_tells_what_each_job_description_says(act: tuple[dict[str, Any], dict[str, str]]) -> None:
    report, _ = act
    for name, job in JOBS.items():
        [started] = [what for minute, job_name, what in report["timeline"] if job_name == name and minute == 0]
        assert f"{job.instance_count} x {job.instance_type}; {cadence(job.rhythm)}" in started
    for name, fault in FAULTS.items():
        if FAULT_TABLE[fault.kind].hung:
            assert _minutes_of(report, name, "hangs") == [round(fault.strikes_at * 60)]
        else:
            assert _minutes_of(report, name, "first log line") == [round(fault.silent_minutes)]
    assert sorted(HUNG) == sorted(name for name, found in report["detections"].items() if found["stopped"])
    # The slow-epoch job, silent past the fixed threshold, is judged by the gaps of its own cadence.
    [(minute, _, what)] = [event for event in report["timeline"] if "past the fixed threshold" in event[2]]
    epoch_minutes = JOBS["slow-epochs"].rhythm.log_every_seconds / 60
    assert f"the longest was {epoch_minutes:g} min" in what, what
    assert minute % epoch_minutes == 30  # 30 silent minutes after one of its lines


@pytest.mark.parametrize("name", HUNG)
def test_the_stall_notice_quotes_what_the_job_did(name: str, act: tuple[dict[str, Any], dict[str, str]]) -> None:
    report, notices = act
    job, fault = JOBS[name], FAULTS[name]
    notice, start = notices[name], datetime.fromisoformat(report["start"])
    activity = LaunchActivity(job.rhythm, job.checkpoint_every_minutes, job.gpus_per_instance, 0.0)
    activity.strike(fault.kind, fault.strikes_at)
    newest = start + timedelta(hours=activity.newest_line(fault.strikes_at) or 0.0)
    assert f"{newest:%Y-%m-%d %H:%M:%S} UTC: step " in notice
    per_host = FAULT_TABLE[fault.kind].gpu_per_gpu() * job.gpus_per_instance
    most = 100 * job.gpus_per_instance
    for host in ("algo-1", "algo-2"):
        assert f"- {host}: GPUUtilization peaked at {format_value(per_host)}% of a possible {most}%" in notice, notice
    every, write, strike = job.checkpoint_every_minutes, job.rhythm.checkpoint_write_minutes, fault.strikes_at * 60
    saves = [0.0] + [k * every + write for k in range(1, math.floor(strike / every) + 1) if k * every + write < strike]
    age = report["detections"][name]["stopped"] - max(saves)  # the one at launch, or the newest it saved
    assert re.search(rf"[Nn]ewest checkpoint is {age:g} min old", notice), notice
