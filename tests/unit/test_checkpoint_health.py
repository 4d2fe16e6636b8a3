"""Checkpoint health (domain/checkpoint_health.py) by table, and the prober's warning with in-memory ports."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from tests.fakes import NOW, fake_ports
from tests.unit.test_stall_workflows import at, training
from trainguard.domain.checkpoint_health import (
    CHECK_EVERY_MINUTES,
    checked_now,
    checkpoint_interval,
    checkpoint_writes,
    judge_checkpoints,
    redo_sentence,
)
from trainguard.domain.checkpoints import CheckpointState
from trainguard.domain.messages import compose_job_end_notification
from trainguard.domain.model import Category, TrainingJob
from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard.workflows.stall_prober import probe
from trainguard.workflows.stall_watch import follow_training_state

T0 = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
URI = "s3://ckpt/llama/"


def written(every_minutes: float, writes: int, *, files: int = 3, last: datetime = T0) -> CheckpointState:
    """`writes` checkpoints `every_minutes` apart, the newest at `last`, each of `files` objects a few seconds apart."""
    times = tuple(
        last - timedelta(minutes=every_minutes * k) + timedelta(seconds=20 * f)
        for k in range(writes)
        for f in range(files)
    )
    return CheckpointState(URI, max(times), len(times), object_times=tuple(sorted(times)))


def test_the_files_of_one_checkpoint_are_one_write_and_the_interval_is_the_median_gap() -> None:
    state = written(30, 5)
    assert len(checkpoint_writes(state.object_times)) == 5
    assert checkpoint_interval(state) == timedelta(minutes=30)
    assert checkpoint_interval(written(30, 2)) is None  # too few writes to call it an interval


@pytest.mark.parametrize(
    ("name", "state", "training_for", "now", "stale"),
    [
        ("fresh", written(30, 5), timedelta(hours=5), T0 + timedelta(minutes=20), False),
        ("just under 3 intervals", written(30, 5), timedelta(hours=5), T0 + timedelta(minutes=89), False),
        ("past 3 intervals", written(30, 5), timedelta(hours=5), T0 + timedelta(minutes=95), True),
        (
            "restarted 1 h ago: not long enough to have written one",
            written(30, 5),
            timedelta(hours=1),
            T0 + timedelta(hours=3),
            False,
        ),
        ("no interval yet", written(30, 2), timedelta(hours=5), T0 + timedelta(hours=3), False),
        ("nothing written", CheckpointState(URI, None, 0), timedelta(hours=5), T0, False),
        ("unreadable", CheckpointState(URI, listing_error="AccessDenied: no"), timedelta(hours=5), T0, False),
    ],
)
def test_stale_checkpoints(
    name: str, state: CheckpointState, training_for: timedelta, now: datetime, stale: bool
) -> None:
    health = judge_checkpoints(state, now - training_for, now)
    assert health.stale is stale, (name, health.reason)
    assert health.reason


def test_a_relaunch_notice_says_how_much_work_it_redoes_only_when_the_checkpoint_is_much_older() -> None:
    assert redo_sentence(written(30, 5), T0 + timedelta(minutes=40)) == ""
    sentence = redo_sentence(written(30, 5), T0 + timedelta(hours=3))
    assert "2 h 59 min old" in sentence and "every 30 min" in sentence and "redoes about 2 h 59 min" in sentence


def test_each_job_is_checked_once_every_15_minutes() -> None:
    for name in ("llama-pretrain", "bert-finetune", "x"):
        assert sum(checked_now(name, minute) for minute in range(60)) == 60 // CHECK_EVERY_MINUTES


def test_the_prober_warns_once_when_checkpoints_stop_and_never_stops_the_job() -> None:
    ports = fake_ports()
    training(ports, for_=timedelta(hours=6), CheckpointConfig={"S3Uri": URI})
    follow_training_state(ports, "llama-pretrain")
    ports.checkpoints.newest, ports.checkpoints.count, ports.checkpoints.every = (
        NOW - timedelta(hours=2),
        15,
        timedelta(minutes=20),
    )
    slot = next(m for m in range(60) if checked_now("llama-pretrain", m))
    when = NOW.replace(minute=slot)
    report = probe(at(ports, when - NOW))
    [warning] = [o for o in report.outcomes if o.kind is OutcomeKind.CHECKPOINT_STALE]
    assert warning.details == {
        "age_minutes": pytest.approx(120 + (when - NOW).total_seconds() / 60),
        "interval_minutes": 20.0,
    }
    [message] = ports.notifier.sent
    assert "checkpoints have stopped reaching S3" in message.subject and "every 20 min" in message.body
    again = probe(at(ports, when - NOW + timedelta(minutes=CHECK_EVERY_MINUTES)))  # the same checkpoint: told once
    assert not [o for o in again.outcomes if o.kind is OutcomeKind.CHECKPOINT_STALE] and len(ports.notifier.sent) == 1
    assert ports.jobs.stops == []
    off_slot = replace(ports, clock=lambda: when + timedelta(minutes=1))
    assert not probe(off_slot).outcomes  # other minutes read no checkpoint of this job


def test_the_relaunch_notice_says_how_much_work_the_relaunch_redoes() -> None:
    arn = "arn:aws:sagemaker:us-east-1:123456789012:training-job/llama-pretrain"
    job = TrainingJob("llama-pretrain", arn, "Failed", failure_reason="InternalServerError: try again.")
    relaunched = Outcome(
        OutcomeKind.RELAUNCHED, job.name, "transient", None, Category.INTERNAL, "llama-pretrain-retry1"
    )
    stale = compose_job_end_notification(job, relaunched, written(30, 5), (), "us-east-1", T0 + timedelta(hours=3))
    assert "the relaunch redoes about 2 h 59 min of training" in stale.body
    fresh = compose_job_end_notification(job, relaunched, written(30, 5), (), "us-east-1", T0 + timedelta(minutes=20))
    assert "redoes" not in fresh.body
    told = replace(relaunched, kind=OutcomeKind.NOTIFIED)  # not relaunched: nothing is redone
    assert (
        "redoes"
        not in compose_job_end_notification(job, told, written(30, 5), (), "us-east-1", T0 + timedelta(hours=3)).body
    )


def test_a_writes_time_is_the_span_of_its_files_never_under_a_minute() -> None:
    from trainguard.domain.checkpoint_health import MIN_WRITE_TIME, checkpoint_write_time

    assert checkpoint_write_time(written(30, 5, files=7)) == timedelta(minutes=2)  # 7 files 20 s apart
    assert checkpoint_write_time(written(30, 5, files=1)) == MIN_WRITE_TIME
    assert checkpoint_write_time(CheckpointState(URI, None, 0)) == MIN_WRITE_TIME


def test_history_advises_a_shorter_interval_to_a_lineage_that_fails_often() -> None:
    from trainguard_cli.lineage_advice import lineage_advice

    arn = "arn:aws:sagemaker:us-east-1:123456789012:training-job/llama-pretrain-retry3"
    resources = {"ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 4}}
    job = TrainingJob("llama-pretrain-retry3", arn, "InProgress", description=resources)
    launches = [T0 - timedelta(hours=12), T0 - timedelta(hours=8), T0 - timedelta(hours=4), T0]  # 3 failures in 12 h
    advice = lineage_advice(job, launches, written(120, 5, files=4), T0)
    assert advice["failures"] == 3 and advice["hours_observed"] == 12.0 and advice["current_interval_minutes"] == 120
    # Model values, no clock: 4 files 20 s apart are a 1-minute write (the floor), and Daly's interval for a
    # 1-minute write C and a failure every M = 240 minutes, sqrt(2CM) (1 + sqrt(C/2M)/3 + C/18M) - C, in minutes.
    write, between_failures = 1.0, 240.0
    ratio = write / (2 * between_failures)
    daly = math.sqrt(2 * write * between_failures) * (1 + math.sqrt(ratio) / 3 + ratio / 9) - write
    assert advice["checkpoint_write_minutes"] == write
    assert advice["best_interval_minutes"] == pytest.approx(daly, abs=0.05)
    assert advice["gpu_hours_saved_per_week"] > 0 and "instead of every 2.0 h" in advice["advice"]
    none_yet = lineage_advice(job, launches[:1], written(120, 5), T0)
    assert none_yet["advice"] is None and none_yet["why"] == "no failure yet"


def test_a_relaunch_notice_gives_the_lineages_checkpoint_advice() -> None:
    from tests.fakes import described_job
    from trainguard.workflows.job_ended import handle_job_end

    ports = fake_ports()
    failed = described_job()  # its checkpoints under s3://ckpt-bucket/llama-pretrain/
    failed["CreationTime"] = NOW - timedelta(hours=3)  # one failure in 3 hours
    ports.jobs.add(failed, {"trainguard:enabled": "true"})
    ports.checkpoints.newest, ports.checkpoints.count, ports.checkpoints.every = NOW, 5, timedelta(hours=2)
    assert handle_job_end(ports, "llama-pretrain").kind is OutcomeKind.RELAUNCHED
    [message] = ports.notifier.sent
    assert "Advice: checkpointing every" in message.body and "instead of every 2.0 h" in message.body


@pytest.mark.parametrize(
    ("count", "truncated", "said"),
    [(1, False, "; 1 object in s3://ckpt/llama/"), (2, False, "; 2 objects in"), (1, True, "; 1 object or more in")],
)
def test_the_checkpoint_line_counts_its_objects_in_words(count: int, truncated: bool, said: str) -> None:
    state = CheckpointState(URI, T0, count, listing_truncated=truncated)
    assert said in state.describe(T0 + timedelta(minutes=5))
