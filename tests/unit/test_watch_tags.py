"""A job's watch starts with its stall and progress tags read over the deployer's defaults: the defaults apply where a
job has no tag, a job's tag wins, and a tag that cannot be read is told to the job's owners once, with why and the
value used in its place (workflows/stall_watch.py, domain/watch_messages.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.fakes import NOW, FakePorts, fake_ports
from tests.unit.test_message_rules import channels, rule_breaks
from tests.unit.test_stall_workflows import OPTED_IN, training
from trainguard.domain.message_kinds import MessageKind
from trainguard.domain.outcome import OutcomeKind
from trainguard.domain.policy import TagKeys, TagProblem
from trainguard.domain.progress_limits import judge_progress
from trainguard.domain.progress_settings import ProgressSettings
from trainguard.domain.progress_watch import ProgressState
from trainguard.domain.watch_messages import compose_unread_tags_notice
from trainguard.workflows.stall_prober import probe
from trainguard.workflows.stall_watch import UNREAD_TAGS_STEP, follow_training_state

JOB = "llama-pretrain"
KEYS = TagKeys()
DEPLOYED = {
    "progress_interval_factor": 5,
    "progress_phase_margin_percent": 80,
    "progress_phase_minutes": 90,
    "progress_start_minutes": 45,
}
BAD_PATTERN = "iteration @stp <b>(((loss)))"


def started(tags: dict[str, str], **config: int) -> FakePorts:
    ports = fake_ports(**config)
    training(ports, JOB, tags={**OPTED_IN, **tags})
    follow_training_state(ports, JOB)
    return ports


def watched_settings(ports: FakePorts) -> ProgressSettings:
    [job] = ports.stall_ledger.watched()
    return job.progress_settings


# --- the deployer's defaults, under the job's tags ----------------------------------------------------------------


def test_a_job_with_no_progress_tags_is_judged_by_the_deployers_defaults() -> None:
    settings = watched_settings(started({}, **DEPLOYED))
    figures = (settings.interval_factor, settings.phase_margin_percent, settings.phase_minutes, settings.start_minutes)
    assert figures == (5, 80, 90, 45)
    assert watched_settings(started({})) == ProgressSettings()  # with none deployed: the code's own
    marker = NOW - timedelta(minutes=40)  # a start marker 40 min ago and no step: within 45 min, past 30
    state = ProgressState(started_at=marker)
    judged = judge_progress(state, settings, NOW, fixed_minutes=30, training_since=marker)
    assert judged is not None and not judged.stalled and "start cutoff of 45 min, the default" in judged.reason
    by_code = judge_progress(state, ProgressSettings(), NOW, fixed_minutes=30, training_since=marker)
    assert by_code is not None and by_code.stalled


def test_a_jobs_own_tags_win_over_the_deployers_defaults() -> None:
    tags = {
        KEYS.key("progress-interval-factor"): "7",
        KEYS.key("progress-phase-margin-percent"): "200",
        KEYS.key("progress-phase-minutes"): "120",
        KEYS.key("progress-start-minutes"): "10",
    }
    settings = watched_settings(started(tags, **DEPLOYED))
    assert (settings.interval_factor, settings.phase_margin_percent, settings.phase_minutes) == (7, 200, 120)
    assert settings.start_minutes == 10


def test_a_tag_that_cannot_be_read_falls_back_to_the_deployers_default_and_says_so() -> None:
    ports = started({KEYS.key("progress-interval-factor"): "50"}, **DEPLOYED)
    assert watched_settings(ports).interval_factor == 5
    [told] = ports.notifier.sent
    assert "using the default of 5 times" in told.body and "from 2 times to 20 times" in told.body


# --- tags the watch could not read: told once ---------------------------------------------------------------------


def test_a_bad_tag_is_told_once_and_a_duplicate_start_tells_nothing() -> None:
    ports = started({KEYS.progress_pattern: BAD_PATTERN, KEYS.key("stall-minutes"): "45m"})
    [told] = ports.notifier.sent
    assert told.kind is MessageKind.WATCH_TAGS_NOT_READ and told.attributes["job_name"] == JOB
    assert "tag trainguard:stall-minutes='45m' could not be read" in told.body
    assert "using the default of 30 min" in told.body and "using no progress rule of its own" in told.body
    assert "a SageMaker tag value holds only" in told.body  # why the pattern was refused
    again = follow_training_state(ports, JOB)  # the next state change, or a redelivery of this one
    assert again.kind is OutcomeKind.WATCHING and len(ports.notifier.sent) == 1
    probe(ports)  # the prober's cycle: the job is watched, nothing is started or told again
    assert len(ports.notifier.sent) == 1
    [job] = ports.stall_ledger.watched()
    assert job.thresholds.stall_minutes == 30 and job.progress_settings.pattern == ""


def test_the_first_start_says_it_told() -> None:
    ports = fake_ports()
    training(ports, JOB, tags={**OPTED_IN, KEYS.key("gpu-idle-percent"): "90"})
    first = follow_training_state(ports, JOB)
    assert first.kind is OutcomeKind.WATCHED_WITH_DEFAULTS and first.notifies
    assert "gpu-idle-percent='90'" in first.reason


def test_a_job_opted_in_while_training_with_a_bad_tag_is_told_once_by_the_prober() -> None:
    ports = fake_ports()
    training(ports, JOB, tags={**OPTED_IN, KEYS.key("progress-start-minutes"): "1"})
    first = probe(ports)
    assert first.started == [JOB]
    probe(ports)
    [told] = ports.notifier.sent
    assert told.kind is MessageKind.WATCH_TAGS_NOT_READ and "progress-start-minutes='1'" in told.body


def test_a_start_while_another_start_tells_it_watches_the_job_and_leaves_the_telling_to_that_one() -> None:
    ports = fake_ports()
    training(ports, JOB, tags={**OPTED_IN, KEYS.key("stall-minutes"): "2"})
    ports.ledger.begin_step(JOB, UNREAD_TAGS_STEP, NOW)  # the job-events function, telling it right now
    outcome = follow_training_state(ports, JOB)  # the prober's discovery of the same job: must not fail its cycle
    assert outcome.kind is OutcomeKind.WATCHING and ports.notifier.sent == []
    assert [job.job_name for job in ports.stall_ledger.watched()] == [JOB]


@pytest.mark.parametrize(
    "tags",
    [
        {},
        {"trainguard:progress-pattern": "iteration @step/ @any lm loss: @loss", "trainguard:stall-minutes": "45"},
        {"trainguard:progress-interval-factor": "4", "trainguard:progress-start-seconds": "600"},
        {"other-team:progress-interval-factor": "banana"},  # not trainguard's tag
    ],
)
def test_good_tags_tell_nothing(tags: dict[str, str]) -> None:
    ports = started(tags)
    assert ports.notifier.sent == []
    assert ports.stall_ledger.watched()[0].job_name == JOB


def test_a_tag_left_unread_by_the_job_end_path_is_not_told_here() -> None:
    """The policy's tags (max-retries, actions) are told with the job's end, where they act: not at the watch."""
    ports = started({KEYS.max_retries: "lots"})
    assert ports.notifier.sent == []


# --- the composer -------------------------------------------------------------------------------------------------


def test_the_notice_lists_each_tag_with_why_and_its_fallback_and_keeps_the_message_rules() -> None:
    hostile = "50 (((times))) <!channel> https://evil.example/x"
    problems = (
        TagProblem("trainguard:progress-interval-factor", hostile, "the default of 3 times", "it must be 2-20"),
        TagProblem("trainguard:progress-pattern", "@here step", "no progress rule of its own", "why it is refused"),
    )
    notice = compose_unread_tags_notice(JOB, problems, "us-east-1", NOW)
    assert notice.kind is MessageKind.WATCH_TAGS_NOT_READ
    assert notice.subject == f"[trainguard] {JOB}: watched with defaults for tags it could not read"
    body = notice.body
    section = body[body.index("Tags trainguard could not read") :]
    lines = [line for line in section.split("\n")[1:] if line.startswith("  - ")]
    assert len(lines) == 2
    assert "progress-interval-factor='50 (((times))) \u2039!channel\u203a https[:]//evil[.]example/x'" in lines[0]
    assert lines[0].endswith("could not be read: it must be 2-20; using the default of 3 times")
    assert "'\uff20here step'" in lines[1] and lines[1].endswith("why it is refused; using no progress rule of its own")
    assert "<!channel>" not in body and "https://evil" not in body and "@here" not in body
    for channel, (text, chat) in channels(notice).items():
        assert rule_breaks(text, (hostile, "@here step"), chat) == [], channel
