"""StallLedgerPort: FakeStallLedger and adapters/stall_ledger.py's StallLedger on moto's DynamoDB."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Protocol

import pytest

from tests.contracts.conftest import IMPLEMENTATIONS, fake_or_on_the_ledger
from tests.fakes import NOW, FakeStallLedger
from trainguard.adapters.stall_ledger import StallLedger
from trainguard.domain.log_rhythm import LogRhythm
from trainguard.domain.policy import TagProblem
from trainguard.domain.progress_settings import ProgressSettings
from trainguard.domain.progress_watch import ProgressState, with_lines
from trainguard.domain.stalls import StallThresholds
from trainguard.domain.watched_job import LoggedLines, WatchedJob
from trainguard.workflows.ports import JobWatch, LogActivityLedger, StallEvidence, WatchList

THRESHOLDS = StallThresholds(stall_minutes=45, problems=(TagProblem("trainguard:stall-minutes", "x", "30"),))


class StallLedgerPort(JobWatch, StallEvidence, WatchList, LogActivityLedger, Protocol):
    """The adapter's whole surface: every narrow stall-ledger port it serves."""


JOB = WatchedJob("llama-pretrain", "ml.p4d.24xlarge", 4, THRESHOLDS, NOW - timedelta(hours=2))


@pytest.fixture(params=IMPLEMENTATIONS)
def stall_ledger(request: pytest.FixtureRequest) -> StallLedgerPort:
    return fake_or_on_the_ledger(request, FakeStallLedger, StallLedger)


def test_a_watched_job_is_listed_as_watched_without_its_tag_problems(stall_ledger: StallLedgerPort) -> None:
    assert stall_ledger.watched() == [] and stall_ledger.watched_job(JOB.job_name) == []
    stall_ledger.watch(replace(JOB, job_name="b-job"))
    stall_ledger.watch(JOB)
    kept = replace(JOB, thresholds=replace(THRESHOLDS, problems=()))  # the ledger keeps the numbers only
    assert stall_ledger.watched() == [replace(kept, job_name="b-job"), kept]  # by name
    assert stall_ledger.watched_job(JOB.job_name) == [kept]


def test_unwatching_removes_the_job_only(stall_ledger: StallLedgerPort) -> None:
    stall_ledger.watch(JOB)
    stall_ledger.watch(replace(JOB, job_name="other"))
    stall_ledger.unwatch(JOB.job_name)
    stall_ledger.unwatch("never-watched")
    assert [job.job_name for job in stall_ledger.watched()] == ["other"]
    assert stall_ledger.watched_job(JOB.job_name) == []


def test_log_activity_is_kept_for_watched_jobs_and_older_activity_does_not_overwrite(
    stall_ledger: StallLedgerPort,
) -> None:
    assert stall_ledger.record_log_activity(JOB.job_name, NOW, "step 1") is False  # not watched
    stall_ledger.watch(JOB)
    newer = NOW - timedelta(minutes=1, microseconds=1500)  # the ledger keeps milliseconds
    assert stall_ledger.record_log_activity(JOB.job_name, newer, "step 10") is True
    assert stall_ledger.record_log_activity(JOB.job_name, NOW - timedelta(minutes=5), "step 2") is False
    assert stall_ledger.record_log_activity(JOB.job_name, newer, "step 10 again") is False  # not newer
    [job] = stall_ledger.watched_job(JOB.job_name)
    assert (job.last_log_time, job.last_log_line) == (newer - timedelta(microseconds=500), "step 10")


def test_watching_again_updates_the_job_and_keeps_its_log_activity(stall_ledger: StallLedgerPort) -> None:
    stall_ledger.watch(replace(JOB, last_log_time=NOW, last_log_line="not recorded by watch"))
    assert stall_ledger.watched_job(JOB.job_name)[0].last_log_time is None  # watch records no log activity
    stall_ledger.record_log_activity(JOB.job_name, NOW - timedelta(minutes=3), "step 7")
    stopping = replace(JOB, stopping_since=NOW, host_count=8)
    stall_ledger.watch(stopping)
    [job] = stall_ledger.watched_job(JOB.job_name)
    assert (job.stopping_since, job.host_count, job.last_log_line) == (NOW, 8, "step 7")


def test_a_stall_record_holds_its_evidence_as_json(stall_ledger: StallLedgerPort) -> None:
    assert stall_ledger.stall_record(JOB.job_name) is None
    evidence = {"last_log_line": "step 9000", "gpu_by_host": {"llama-pretrain/algo-1": 800.0}, "since": NOW}
    stall_ledger.record_stall(JOB.job_name, evidence, NOW)
    assert stall_ledger.stall_record(JOB.job_name) == {**evidence, "since": str(NOW)}
    stall_ledger.record_stall(JOB.job_name, {"last_log_line": "again"}, NOW + timedelta(minutes=1))
    assert stall_ledger.stall_record(JOB.job_name) == {"last_log_line": "again"}
    assert stall_ledger.stall_record("other") is None


def test_log_lines_and_their_rhythm_are_kept_only_if_the_newest_line_is_still_the_one_read(
    stall_ledger: StallLedgerPort,
) -> None:
    grace_end = NOW - timedelta(hours=1)
    lines = [NOW - timedelta(minutes=10, seconds=10 * i) for i in range(6)]
    rhythm = LogRhythm().with_lines(None, lines, grace_end)
    assert (
        stall_ledger.record_log_lines(JOB.job_name, LoggedLines(max(lines), "step 6", rhythm), None) is False
    )  # not watched
    stall_ledger.watch(JOB)
    assert stall_ledger.record_log_lines(JOB.job_name, LoggedLines(max(lines), "step 6", rhythm), None) is True
    # A delivery that read before that write (its `previous` is stale) loses the race, whatever it carries.
    assert stall_ledger.record_log_lines(JOB.job_name, LoggedLines(NOW, "step 7", LogRhythm()), None) is False
    [job] = stall_ledger.watched_job(JOB.job_name)
    assert (job.last_log_time, job.last_log_line, job.rhythm) == (max(lines), "step 6", rhythm)
    later = rhythm.with_lines(max(lines), [NOW], grace_end)
    assert stall_ledger.record_log_lines(JOB.job_name, LoggedLines(NOW, "step 7", later), job.last_log_time) is True
    stall_ledger.watch(replace(JOB, host_count=8))  # watching again keeps what the job's logs taught
    assert stall_ledger.watched_job(JOB.job_name)[0].rhythm == later


def test_a_jobs_progress_is_kept_with_its_lines_and_its_progress_settings_with_its_watch(
    stall_ledger: StallLedgerPort,
) -> None:
    settings = ProgressSettings(phase_minutes=90, start_seconds=600, pattern="iteration @step lm loss")
    stall_ledger.watch(replace(JOB, progress_settings=settings))
    lines = [(NOW - timedelta(seconds=10 * (6 - i)), f"trainguard:progress step={i}") for i in range(6)]
    progress = with_lines(ProgressState(), [*lines, (NOW, "trainguard:phase begin=checkpoint expect=600")], None)
    assert stall_ledger.record_log_lines(JOB.job_name, LoggedLines(NOW, "step 6", LogRhythm(), progress), None) is True
    [job] = stall_ledger.watched_job(JOB.job_name)
    assert (job.progress, job.progress_settings) == (progress, settings)
    assert job.progress.phase is not None and job.progress.last_step == 5
    stall_ledger.watch(replace(JOB, host_count=8))  # watching again keeps the progress, and sets the settings
    assert stall_ledger.watched()[0].progress == progress
    assert stall_ledger.watched()[0].progress_settings == ProgressSettings()


def test_a_muted_alarm_is_remembered_until_unmuted(stall_ledger: StallLedgerPort) -> None:
    assert stall_ledger.mute(JOB.job_name, "trainguard-stall-log-silence-x", NOW) is False  # not watched
    stall_ledger.watch(JOB)
    assert stall_ledger.mute(JOB.job_name, "trainguard-stall-log-silence-x", NOW + timedelta(hours=1)) is True
    [job] = stall_ledger.watched()
    assert (job.muted_alarm, job.muted_until) == ("trainguard-stall-log-silence-x", NOW + timedelta(hours=1))
    assert stall_ledger.unmute(JOB.job_name) is True
    [job] = stall_ledger.watched()
    assert (job.muted_alarm, job.muted_until) == ("", None)


def test_a_deferred_silence_holds_until_a_newer_line_comes(stall_ledger: StallLedgerPort) -> None:
    assert stall_ledger.defer(JOB.job_name, NOW) is False  # not watched
    stall_ledger.watch(JOB)
    stall_ledger.record_log_activity(JOB.job_name, NOW - timedelta(minutes=6), "step 9")
    assert stall_ledger.defer(JOB.job_name, NOW - timedelta(minutes=6)) is True
    [job] = stall_ledger.watched()
    assert job.deferred_line == NOW - timedelta(minutes=6) and job.silence_deferred
    stall_ledger.record_log_activity(JOB.job_name, NOW, "step 10")
    [job] = stall_ledger.watched()
    assert not job.silence_deferred
