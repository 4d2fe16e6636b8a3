"""A verified hang of a job a parent owns (issue 27, "Hangs of jobs a parent owns"), in the pure domain: the stall
verdict stops it like any other job's (the setting stop_stalled_parent_jobs off: told, never stopped), and its end
is never a relaunch. The workflows' side is tested in test_ownership.py, the stand-in's in
tests/integration/test_parent_stalls.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.fakes import described_job
from trainguard.domain.job_end import assess_job_end
from trainguard.domain.message_kinds import MessageKind
from trainguard.domain.model import Decision, TrainingJob
from trainguard.domain.ownership import PARENT_KINDS, ParentKind, find_parent
from trainguard.domain.policy import PolicyDefaults, TagKeys, read_job_policy
from trainguard.domain.stall_messages import stall_kind, what_was_done
from trainguard.domain.stalls import StallEvidence, StallSignal, StallThresholds, judge_stall
from trainguard.events.training_job import job_from_description

KEYS = TagKeys()
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
OPTED_IN = {"trainguard:enabled": "true"}
PIPELINE = {"sagemaker:pipeline-execution-arn": "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/x"}
SILENT_FOR_AN_HOUR = StallEvidence(NOW - timedelta(hours=1), "step 4200 loss 1.93", {}, 8)


def pipeline_job(status: str = "InProgress", extra_tags: dict[str, str] | None = None) -> TrainingJob:
    description = described_job(
        "pipelines-x-Train-1", status=status, secondary="Training" if status == "InProgress" else status
    )
    description["TrainingStartTime"] = NOW - timedelta(hours=3)
    return job_from_description(description, {**OPTED_IN, **PIPELINE, **(extra_tags or {})})


# (case, the job's extra tags, the alarm's mute rule, the setting) -> (stopped?, what the message is)
CASES = [
    ("a verified hang is stopped", {}, "", True, True, MessageKind.STALL_STOPPED_FOR_OWNER),
    ("the setting off: told, never stopped", {}, "", False, False, MessageKind.STALL_LEFT_TO_OWNER),
    ("muted: told, never stopped", {}, "maintenance", True, False, MessageKind.STALL_MUTED),
    ("dry run: told what would be done", {"trainguard:actions": "notify"}, "", True, False, MessageKind.STALL_DRY_RUN),
    ("the setting off wins over a mute", {}, "maintenance", False, False, MessageKind.STALL_LEFT_TO_OWNER),
]


@pytest.mark.parametrize("case, tags, muted_by, setting, stopped, kind", CASES, ids=[c[0] for c in CASES])
def test_a_parents_hung_job(
    case: str, tags: dict[str, str], muted_by: str, setting: bool, stopped: bool, kind: MessageKind
) -> None:
    job = pipeline_job(extra_tags=tags)
    policy = read_job_policy(job.tags, PolicyDefaults(), KEYS)
    verdict = judge_stall(
        StallSignal.LOG_SILENCE,
        job,
        policy,
        StallThresholds(),
        SILENT_FOR_AN_HOUR,
        NOW,
        muted_by=muted_by,
        stop_parent_jobs=setting,
    )
    parent = find_parent(job_name=job.name, description=job.description, tags=job.tags)
    assert verdict.stalled and verdict.act is stopped and verdict.parent == parent
    assert verdict.parent_stops_off is not setting and stall_kind(verdict) is kind
    assert ("stop_stalled_parent_jobs is off" in verdict.reason) is not setting
    did, _ = what_was_done(verdict, stopped=verdict.act, muted_until=NOW + timedelta(minutes=30) if muted_by else None)
    assert ("It is not relaunched: its parent decides." in did) is stopped
    assert "relaunches it from its last checkpoint" not in did


def test_a_job_no_parent_owns_is_stopped_as_before_whatever_the_setting() -> None:
    description = described_job(status="InProgress", secondary="Training")
    description["TrainingStartTime"] = NOW - timedelta(hours=3)
    job = job_from_description(description, OPTED_IN)
    policy = read_job_policy(job.tags, PolicyDefaults(), KEYS)
    for setting in (True, False):
        verdict = judge_stall(
            StallSignal.LOG_SILENCE, job, policy, StallThresholds(), SILENT_FOR_AN_HOUR, NOW, stop_parent_jobs=setting
        )
        assert verdict.act and verdict.parent is None and stall_kind(verdict) is MessageKind.STALL_STOPPED
        assert "relaunches it from its last checkpoint" in what_was_done(verdict, True, None)[0]


@pytest.mark.parametrize("kind", PARENT_KINDS, ids=lambda k: k.name)
def test_every_parent_says_what_it_does_with_a_stopped_child(kind: ParentKind) -> None:
    after_stop = kind.after_stop
    assert after_stop.endswith(".") and ("AWS does not document" in after_stop or "retry" in after_stop.lower())


def test_the_end_of_a_parents_job_trainguard_stopped_is_never_a_relaunch() -> None:
    job = pipeline_job("Stopped")
    policy = read_job_policy(job.tags, PolicyDefaults(), KEYS)
    assessment = assess_job_end(job, policy, stall_reason="no new log line for 60 min. The job belongs to ...")
    assert assessment.decision is Decision.IGNORE and assessment.classification.category.value == "stall"
    assert "No relaunch" in assessment.reason and "no new log line for 60 min)" in assessment.reason
    assert assessment.owner and "decides what follows" in assessment.reason
    # The same job's Stopped end without trainguard's stall record is a person's stop: left alone as before.
    assert assess_job_end(job, policy).decision is Decision.IGNORE
    # A job no parent owns, stopped by trainguard for a stall, is relaunched as before.
    plain = job_from_description(described_job(status="Stopped", secondary="Stopped"), OPTED_IN)
    assert assess_job_end(plain, policy, stall_reason="silent").decision is Decision.RETRY
