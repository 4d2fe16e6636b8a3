"""Stall verdicts (domain/stalls.py): thresholds from tags, alarm names, grace, and the two signals."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from tests.fakes import described_job
from trainguard.domain.instance_types import gpus_per_host
from trainguard.domain.model import TrainingJob
from trainguard.domain.policy import JobPolicy, PolicyDefaults, TagKeys, read_job_policy
from trainguard.domain.stalls import (
    StallEvidence,
    StallSignal,
    StallThresholds,
    StallVerdict,
    alarm_name,
    grace_reason,
    judge_stall,
    parse_alarm_name,
    read_stall_thresholds,
)
from trainguard.events.training_job import job_from_description

KEYS = TagKeys()
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
OPTED_IN = read_job_policy({"trainguard:enabled": "true"}, PolicyDefaults(), KEYS)
DRY_RUN = read_job_policy({"trainguard:enabled": "true", "trainguard:actions": "notify"}, PolicyDefaults(), KEYS)
DEFAULTS = StallThresholds()


def running_job(trained_for: timedelta, secondary: str = "Training", transitions: list | None = None) -> TrainingJob:
    description = described_job(status="InProgress", secondary=secondary)
    description["TrainingStartTime"] = NOW - trained_for
    if transitions is not None:
        description["SecondaryStatusTransitions"] = transitions
    return job_from_description(description, {"trainguard:enabled": "true"})


def evidence(log_age: timedelta | None, gpu: float = 0.0, hosts: int = 4, gpus: int | None = 8) -> StallEvidence:
    return StallEvidence(
        last_log_time=None if log_age is None else NOW - log_age,
        last_log_line="step 4200 loss 1.93",
        gpu_by_host={f"llama-pretrain/algo-{n}": gpu for n in range(1, hosts + 1)},
        gpus_per_host=gpus,
    )


def judged(
    signal: StallSignal, seen: StallEvidence, job: TrainingJob | None = None, policy: JobPolicy = OPTED_IN
) -> StallVerdict:
    """The verdict, now and under the default thresholds, on the job (by default an opted-in one three hours
    into training) given what was seen of it."""
    return judge_stall(signal, running_job(timedelta(hours=3)) if job is None else job, policy, DEFAULTS, seen, NOW)


def test_thresholds_come_from_tags_and_bad_values_fall_back() -> None:
    tags = {
        "trainguard:stall-minutes": "45",
        "trainguard:gpu-idle-minutes": "ten",
        "trainguard:gpu-idle-percent": "2",
        "trainguard:startup-grace-minutes": "99999",
    }
    thresholds = read_stall_thresholds(tags, DEFAULTS, KEYS)
    assert (thresholds.stall_minutes, thresholds.gpu_idle_minutes, thresholds.gpu_idle_percent) == (45, 20, 2)
    assert thresholds.startup_grace_minutes == 20
    assert sorted(p.key for p in thresholds.problems) == [
        "trainguard:gpu-idle-minutes",
        "trainguard:startup-grace-minutes",
    ]
    assert read_stall_thresholds({"trainguard:stall-minutes": "1"}, DEFAULTS, KEYS).stall_minutes == 30


@pytest.mark.parametrize("job_name", ["a", "llama-pretrain", "idle-gpu-x", "log-silence", "x" * 63, "a-" * 31 + "b"])
@pytest.mark.parametrize("signal", list(StallSignal))
def test_alarm_names_parse_back(signal: StallSignal, job_name: str) -> None:
    name = alarm_name(signal, job_name)
    assert name.startswith("trainguard-stall-") and len(name) <= 255
    assert parse_alarm_name(name) == (signal, job_name)


@pytest.mark.parametrize(
    "name", ["", "trainguard-stall-", "trainguard-stall-log-silence-", "other-alarm", "trainguard-stall-cpu-job"]
)
def test_names_that_are_not_ours(name: str) -> None:
    assert parse_alarm_name(name) is None


@pytest.mark.parametrize("secondary", ["Starting", "Pending", "Downloading", "Uploading", "Interrupted"])
def test_no_verdict_outside_training(secondary: str) -> None:
    assert "not Training" in grace_reason(running_job(timedelta(hours=3), secondary), DEFAULTS, NOW)


# Cluster repair (https://docs.aws.amazon.com/sagemaker/latest/dg/model-checkpoints-cluster-repair.html): "During
# this process, you will see the following message in your training job status: Repairing training cluster due to
# hardware failure"; the SecondaryStatus enum has "Restarting". Either one holds the stall path back.
REPAIR_MESSAGE = "Repairing training cluster due to hardware failure"


def transition(status: str, message: str, minutes_ago: int) -> dict:
    return {"Status": status, "StartTime": NOW - timedelta(minutes=minutes_ago), "StatusMessage": message}


@pytest.mark.parametrize(
    "secondary, transitions",
    [
        ("Restarting", [transition("Training", "Training in progress.", 180), transition("Restarting", "", 5)]),
        (
            "Training",
            [transition("Training", "Training in progress.", 180), transition("Training", REPAIR_MESSAGE, 40)],
        ),
        ("Restarting", [transition("Restarting", REPAIR_MESSAGE, 40)]),
    ],
)
def test_no_verdict_while_sagemaker_repairs_the_cluster(secondary: str, transitions: list) -> None:
    job = running_job(timedelta(hours=3), secondary, transitions)
    assert "SageMaker is re" in grace_reason(job, DEFAULTS, NOW)
    for signal in StallSignal:
        verdict = judge_stall(signal, job, OPTED_IN, DEFAULTS, evidence(timedelta(hours=2)), NOW)
        assert not verdict.stalled and not verdict.act


def test_after_the_repair_training_restarts_with_its_grace() -> None:
    transitions = [
        transition("Training", "Training in progress.", 180),
        transition("Restarting", REPAIR_MESSAGE, 40),
        transition("Training", "Training in progress.", 10),
    ]
    job = running_job(timedelta(hours=3), "Training", transitions)
    assert "startup grace" in grace_reason(job, DEFAULTS, NOW)


def test_no_verdict_within_the_startup_grace() -> None:
    assert "startup grace" in grace_reason(running_job(timedelta(minutes=19)), DEFAULTS, NOW)
    assert grace_reason(running_job(timedelta(minutes=21)), DEFAULTS, NOW) == ""


def test_an_alarm_that_would_never_fire_again_is_rearmed_and_one_that_clears_itself_is_not() -> None:
    """The domain says whether the alarm goes back to OK. Fired in the grace, it would never fire again. A
    log-silence alarm judged within the job's limit is re-armed too: the prober's view of the limit (the
    ledger's line and tags) may differ from the fresh one. Idle GPUs while the job logs clear themselves."""
    silent = evidence(timedelta(hours=2))
    in_grace = judge_stall(StallSignal.LOG_SILENCE, running_job(timedelta(minutes=19)), OPTED_IN, DEFAULTS, silent, NOW)
    assert not in_grace.stalled and in_grace.rearm
    logging = evidence(timedelta(minutes=1))
    past = judge_stall(StallSignal.LOG_SILENCE, running_job(timedelta(hours=3)), OPTED_IN, DEFAULTS, logging, NOW)
    assert not past.stalled and past.rearm
    idle_but_logging = replace(logging, gpu_by_host={"job/algo-1": 0.0})
    cpu_phase = judge_stall(
        StallSignal.IDLE_GPU, running_job(timedelta(hours=3)), OPTED_IN, DEFAULTS, idle_but_logging, NOW
    )
    assert not cpu_phase.stalled and not cpu_phase.rearm


def test_a_spot_restart_starts_the_grace_again() -> None:
    transitions = [
        {"Status": "Training", "StartTime": NOW - timedelta(hours=5), "EndTime": NOW - timedelta(minutes=40)},
        {"Status": "Interrupted", "StartTime": NOW - timedelta(minutes=40), "EndTime": NOW - timedelta(minutes=30)},
        {"Status": "Training", "StartTime": NOW - timedelta(minutes=10)},
    ]
    job = running_job(timedelta(hours=5), transitions=transitions)
    assert job.training_since == NOW - timedelta(minutes=10)
    assert "startup grace" in grace_reason(job, DEFAULTS, NOW)


def test_log_silence_past_the_threshold_is_a_stall() -> None:
    verdict = judged(StallSignal.LOG_SILENCE, evidence(timedelta(minutes=31), gpu=800))
    assert verdict.stalled and verdict.act and "no new log line for 31 min" in verdict.reason


def test_a_job_that_logged_recently_is_not_stalled() -> None:
    verdict = judged(StallSignal.LOG_SILENCE, evidence(timedelta(minutes=29)))
    assert not verdict.stalled and "logged 29 min ago" in verdict.reason


def test_a_hung_collective_at_full_gpu_is_caught_by_silence_not_by_idle_gpu() -> None:
    job = running_job(timedelta(hours=3))
    busy = evidence(timedelta(minutes=40), gpu=800)
    assert not judged(StallSignal.IDLE_GPU, busy, job).stalled
    assert judged(StallSignal.LOG_SILENCE, busy, job).stalled


def test_idle_gpus_with_silent_logs_is_a_stall() -> None:
    verdict = judged(StallSignal.IDLE_GPU, evidence(timedelta(minutes=21), gpu=3))
    assert verdict.stalled and "GPUs idle for 20 min" in verdict.reason


def test_idle_gpus_while_the_job_logs_is_a_cpu_phase() -> None:
    verdict = judged(StallSignal.IDLE_GPU, evidence(timedelta(minutes=2), gpu=0))
    assert not verdict.stalled and "CPU phase" in verdict.reason


def test_idle_is_per_gpu_on_every_host() -> None:
    job = running_job(timedelta(hours=3))
    # 8 GPUs at 4% each = 32 of 800: idle at the default 5%; one busy host is enough to say not idle
    assert judged(StallSignal.IDLE_GPU, evidence(timedelta(hours=1), gpu=32), job).stalled
    mixed = evidence(timedelta(hours=1), gpu=0)
    mixed.gpu_by_host["llama-pretrain/algo-3"] = 400.0
    assert not judged(StallSignal.IDLE_GPU, mixed, job).stalled
    unknown_type = evidence(timedelta(hours=1), gpu=32, gpus=None)
    assert not judged(StallSignal.IDLE_GPU, unknown_type, job).stalled


def test_no_gpu_figures_is_not_idle() -> None:
    no_figures = StallEvidence(NOW - timedelta(hours=1), "", {}, 8)
    assert not judged(StallSignal.IDLE_GPU, no_figures).stalled


def test_a_job_that_never_logged_counts_silence_from_the_end_of_its_grace() -> None:
    # Silent from its start: 45 min of training = 20 min grace + 25 min of counted silence: not yet.
    early = judge_stall(
        StallSignal.LOG_SILENCE, running_job(timedelta(minutes=45)), OPTED_IN, DEFAULTS, evidence(None), NOW
    )
    assert not early.stalled and early.silence == timedelta(minutes=25)
    late = judge_stall(
        StallSignal.LOG_SILENCE, running_job(timedelta(minutes=51)), OPTED_IN, DEFAULTS, evidence(None), NOW
    )
    assert late.stalled and late.silence == timedelta(minutes=31)


def test_a_slow_first_load_with_idle_gpus_gets_the_whole_idle_threshold_after_its_grace() -> None:
    job = running_job(timedelta(minutes=38))  # idle and silent since its start: 18 min past the grace
    assert not judged(StallSignal.IDLE_GPU, evidence(None, gpu=0), job).stalled
    job = running_job(timedelta(minutes=41))
    assert judged(StallSignal.IDLE_GPU, evidence(None, gpu=0), job).stalled


def test_a_dry_run_job_is_judged_but_not_acted_on() -> None:
    verdict = judged(StallSignal.LOG_SILENCE, evidence(timedelta(hours=1)), policy=DRY_RUN)
    assert verdict.stalled and not verdict.act and "dry run" in verdict.reason


def test_a_job_that_is_not_opted_in_or_has_ended_is_left_alone() -> None:
    not_in = read_job_policy({}, PolicyDefaults(), KEYS)
    assert not judged(StallSignal.LOG_SILENCE, evidence(timedelta(hours=1)), policy=not_in).stalled
    ended = job_from_description(described_job(), {"trainguard:enabled": "true"})
    assert not judged(StallSignal.LOG_SILENCE, evidence(timedelta(hours=1)), ended).stalled


@pytest.mark.parametrize(
    ("instance_type", "gpus"),
    [("ml.p4d.24xlarge", 8), ("ml.g5.12xlarge", 4), ("ml.g5.xlarge", 1), ("ml.trn1.32xlarge", None)],
)
def test_gpus_per_host(instance_type: str, gpus: int | None) -> None:
    assert gpus_per_host(instance_type) == gpus


def test_a_contract_job_loading_silently_after_step_0_is_judged_after_the_grace_and_the_whole_limit() -> None:
    """The stall verdict passes the end of the startup grace to the progress rules (progress_limits.judge_progress):
    step 0 printed as training starts, then a silent first load, is no stall 35 minutes in, one at 51."""
    from trainguard.domain.progress_lines import read_progress_line
    from trainguard.domain.progress_watch import ProgressState, advance

    def seen(trained: timedelta) -> StallVerdict:
        start = NOW - trained
        state = advance(ProgressState(), read_progress_line("trainguard:start", None), start)
        state = advance(state, read_progress_line("trainguard:progress step=0", None), start + timedelta(seconds=1))
        told = replace(evidence(trained - timedelta(seconds=1), gpu=0.0), progress=state)
        return judged(StallSignal.LOG_SILENCE, told, running_job(trained))

    assert not seen(timedelta(minutes=35)).stalled
    late = seen(timedelta(minutes=51))
    assert late.stalled and "end of its startup grace" in late.reason


@pytest.mark.parametrize("every_minutes", [31, 35, 40])
@pytest.mark.parametrize("first_line_minutes", [0, 10])
def test_a_tag_rule_job_that_logs_only_its_steps_slower_than_the_threshold_is_left_alone_between_them(
    every_minutes: int, first_line_minutes: int
) -> None:
    """A job reporting by a tag rule whose only lines are its steps, one every 31 to 40 minutes from its start, is
    judged by the log-silence rules until it has shown 3 intervals (progress_limits.judge_progress), and those raise
    the fixed 30 minutes by its first gap after the grace (log_rhythm.py, rule 3), the rhythm counted as the ledger
    counts it: no stop a minute before any of its next 5 step lines. (Checked after a chaos run's wrong stop of
    such a job: the world, not this rule, was at fault, and an earlier check that passed no rhythm misread it.)"""
    from trainguard.domain.log_rhythm import LogRhythm
    from trainguard.domain.progress_lines import read_progress_line
    from trainguard.domain.progress_rule import compile_template
    from trainguard.domain.progress_watch import ProgressState, advance

    rule = compile_template("iter: @step train_loss: @loss")
    for lines in range(2, 7):
        trained = timedelta(minutes=first_line_minutes + every_minutes * lines - 1)
        start, grace_end = NOW - trained, NOW - trained + timedelta(minutes=DEFAULTS.startup_grace_minutes)
        state, rhythm, newest, text = ProgressState(), LogRhythm(), None, ""
        for step in range(lines):
            at = start + timedelta(minutes=first_line_minutes + every_minutes * step)
            text = f"[rank0] iter: {step} train_loss: 2.0 lr: 0.0003"
            state = advance(state, read_progress_line(text, rule), at)
            rhythm, newest = rhythm.with_lines(newest, [at], grace_end), at
        assert newest is not None
        seen = replace(evidence(NOW - newest, gpu=100.0), last_log_line=text, progress=state, rhythm=rhythm)
        verdict = judged(StallSignal.LOG_SILENCE, seen, running_job(trained))
        assert not verdict.stalled, (lines, verdict.reason)
