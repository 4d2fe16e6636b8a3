"""AlarmsPort: FakeAlarms and adapters/alarms.py's StallAlarms on moto's CloudWatch (with the project's
PutCompositeAlarm for moto, local/trainguard_local/fleet/trainguard_run/in_process_clients.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import boto3
import pytest

from tests.contracts.conftest import IMPLEMENTATIONS, REGION
from tests.fakes import NOW, FakeAlarms
from trainguard.adapters.alarms import StallAlarms
from trainguard.domain.stall_alarms import gpu_part_name, plan_stall_alarms
from trainguard.domain.stalls import StallSignal, StallThresholds, alarm_name
from trainguard.workflows.ports import AlarmRearmer, AlarmSweeper, AlarmWatch
from trainguard_local.fleet.trainguard_run.in_process_clients import CompositeAlarmsInMoto

JOB = "llama-pretrain"
SMALL = plan_stall_alarms(JOB, "ml.p4d.24xlarge", 4, StallThresholds())  # metric alarms only
LARGE = plan_stall_alarms(JOB, "ml.p4d.24xlarge", 12, StallThresholds())  # idle GPU: a composite of 2 parts
GPU, LOG = alarm_name(StallSignal.IDLE_GPU, JOB), alarm_name(StallSignal.LOG_SILENCE, JOB)
PART1, PART2 = gpu_part_name(1, JOB), gpu_part_name(2, JOB)


class AlarmsPort(AlarmWatch, AlarmRearmer, AlarmSweeper, Protocol):
    """The adapter's whole surface: every narrow alarm port it serves."""


@dataclass
class Subject:
    alarms: AlarmsPort
    add_alarm: Callable[[str, str], None]  # an alarm that exists in the account (anyone's), in that state
    set_state: Callable[[str, str], None]  # CloudWatch evaluates an existing alarm into that state


@pytest.fixture(params=IMPLEMENTATIONS)
def subject(request: pytest.FixtureRequest) -> Subject:
    if request.param == "fake":
        fake = FakeAlarms()
        return Subject(fake, fake.add_alarm, fake.add_alarm)
    request.getfixturevalue("aws")
    client = boto3.client("cloudwatch", region_name=REGION)
    CompositeAlarmsInMoto(client, "123456789012", REGION)

    def set_state(name: str, state: str) -> None:
        client.set_alarm_state(AlarmName=name, StateValue=state, StateReason="arranged")

    def add_alarm(name: str, state: str) -> None:
        metric = {"MetricName": "m", "Namespace": "n", "Period": 60, "EvaluationPeriods": 1, "Statistic": "Maximum"}
        client.put_metric_alarm(AlarmName=name, Threshold=1.0, ComparisonOperator="GreaterThanThreshold", **metric)
        set_state(name, state)

    return Subject(StallAlarms(client), add_alarm, set_state)


@pytest.fixture
def alarms(subject: Subject) -> AlarmsPort:
    return subject.alarms


@pytest.mark.parametrize("plan", [SMALL, LARGE], ids=["4-hosts", "12-hosts"])
def test_a_plans_alarms_are_created_listed_and_deleted(alarms: AlarmsPort, plan: object) -> None:
    assert alarms.list_owned() == {}
    alarms.create(plan)
    alarms.create(plan)  # safe to repeat
    # Names only: AWS starts a new alarm in INSUFFICIENT_DATA (the fake too), moto 5.2 in OK.
    assert set(alarms.list_owned()) == set(plan.all_names)  # type: ignore[attr-defined]
    alarms.delete(plan.deletion_order())  # type: ignore[attr-defined]
    alarms.delete(plan.deletion_order())  # type: ignore[attr-defined]  # already gone: no error
    assert alarms.list_owned() == {}


def test_only_trainguards_alarms_are_listed_as_owned(subject: Subject) -> None:
    subject.add_alarm("someone-elses-alarm", "ALARM")
    subject.add_alarm(alarm_name(StallSignal.LOG_SILENCE, "gone-job"), "OK")
    assert subject.alarms.list_owned() == {alarm_name(StallSignal.LOG_SILENCE, "gone-job"): "OK"}


def test_a_rearmed_alarm_is_ok_again(subject: Subject) -> None:
    subject.add_alarm(LOG, "ALARM")
    subject.alarms.rearm(LOG, "stopped the job")
    assert subject.alarms.list_owned() == {LOG: "OK"}


def test_rearming_the_idle_gpu_signal_rearms_its_parts_in_alarm_first(subject: Subject) -> None:
    subject.alarms.create(LARGE)
    for name, state in ((PART1, "ALARM"), (PART2, "INSUFFICIENT_DATA"), (GPU, "ALARM")):
        subject.set_state(name, state)
    subject.alarms.rearm(GPU, "the GPUs are busy again")
    states = subject.alarms.list_owned()
    assert (states[GPU], states[PART1], states[PART2]) == ("OK", "OK", "INSUFFICIENT_DATA")


def test_rearming_an_alarm_that_is_gone_is_a_no_op(alarms: AlarmsPort) -> None:
    alarms.rearm(LOG, "stopped the job")
    alarms.rearm(GPU, "stopped the job")
    assert alarms.list_owned() == {}


def test_log_silence_is_published_and_nan_refused(alarms: AlarmsPort) -> None:
    alarms.publish_log_silence({JOB: 12.0, "other": 0.0}, NOW)
    alarms.publish_log_silence({}, NOW)
    with pytest.raises(ValueError, match="NaN"):
        alarms.publish_log_silence({JOB: float("nan")}, NOW)


def test_a_log_silence_alarm_on_another_metric_is_outdated_until_put_again(subject: Subject) -> None:
    subject.alarms.create(SMALL)
    assert subject.alarms.outdated_log_silence_alarms() == []
    old = alarm_name(StallSignal.LOG_SILENCE, "old-job")
    subject.add_alarm(old, "OK")  # an earlier version's, on another metric
    subject.add_alarm("someone-elses-alarm", "OK")
    assert subject.alarms.outdated_log_silence_alarms() == [old]
    subject.alarms.put_metric_alarm(
        plan_stall_alarms("old-job", "ml.p4d.24xlarge", 4, StallThresholds()).metric_alarms[0]
    )
    assert subject.alarms.outdated_log_silence_alarms() == []
