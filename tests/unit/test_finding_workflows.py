"""A slowdown and a divergence, with in-memory ports: the log subscription folds the job's step lines into its pace
and loss, and the prober tells each once per launch, with the figures, and does nothing to the job."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from tests.fakes import NOW, FakePorts, described_job, fake_ports
from tests.unit.test_message_rules import channels, rule_breaks
from tests.unit.test_progress_workflows import JOB, deliver, watched
from tests.unit.test_stall_workflows import OPTED_IN, training
from trainguard.domain.message_kinds import MessageKind
from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard.workflows.job_ended import handle_job_end
from trainguard.workflows.stall_prober import probe
from trainguard.workflows.stall_watch import follow_training_state

PIPELINE_ARN = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/x1y2z3"


def lines(start: datetime, seconds: list[float], first_step: int = 1, losses: list[float] | None = None) -> list:  # type: ignore[type-arg]
    """A contract step line at `start` and after each of `seconds`, with its loss (2.0 unless given)."""
    out, at = [], start
    for index in range(len(seconds) + 1):
        loss = losses[index] if losses is not None and index < len(losses) else 2.0
        out.append((at, f"2026-12-06 rank0 INFO trainguard:progress step={first_step + index} loss={loss}"))
        at += timedelta(seconds=seconds[index]) if index < len(seconds) else timedelta(0)
    return out


def told(ports: FakePorts, kind: MessageKind) -> list[str]:
    return [n.body for n in ports.notifier.sent if n.kind is kind]


def slowed_job() -> FakePorts:
    """A job stepping every 10 s, twice as slow for its last 15 min."""
    ports = watched()
    gaps = [10.0] * 120 + [20.0] * 45
    deliver(ports, lines(NOW - timedelta(seconds=sum(gaps)), gaps), 30)
    return ports


def test_a_slowdown_is_told_once_with_its_figures_and_cost_and_nothing_is_done_to_the_job() -> None:
    ports = slowed_job()
    report = probe(ports)
    assert [o.kind for o in report.outcomes] == [OutcomeKind.SLOWDOWN_FOUND]
    [body] = told(ports, MessageKind.SLOWDOWN_FOUND)
    assert "its steps take 2.00 times as long as its baseline: 20 s a step" in body and "against 10 s" in body
    assert "50% of every hour it runs is lost: 2 instance-hours of 4 x ml.p4d.24xlarge an hour" in body
    assert "Which host" in body and "Nothing to the job: it keeps training" in body
    assert ports.jobs.stops == [] and ports.jobs.created == []
    probe(ports)
    assert len(told(ports, MessageKind.SLOWDOWN_FOUND)) == 1  # told once for this launch


def test_a_host_whose_gpus_alone_read_low_is_named_with_its_figures() -> None:
    ports = slowed_job()
    ports.gpu_metrics.averages = {1: 790.0, 2: 168.0, 3: 800.0, 4: 795.0}  # ml.p4d.24xlarge: 8 GPUs a host
    probe(ports)
    [body] = told(ports, MessageKind.SLOWDOWN_FOUND)
    assert "algo-2, most likely: its GPUs averaged 168% of a possible 800% since the slowdown began" in body


def test_a_steady_job_and_a_short_slowdown_are_not_told() -> None:
    ports = watched()
    gaps = [10.0] * 120 + [20.0] * 20 + [10.0] * 60  # twice as slow for 6 min 40 s, then as before
    deliver(ports, lines(NOW - timedelta(seconds=sum(gaps)), gaps), 30)
    assert probe(ports).outcomes == [] and ports.notifier.sent == []


def test_a_divergence_is_told_once_with_the_step_and_the_checkpoint_before_it() -> None:
    ports = watched()
    ports.checkpoints.newest, ports.checkpoints.count, ports.checkpoints.every = NOW, 6, timedelta(minutes=20)
    gaps = [10.0] * 60
    losses = [2.0] * 55 + [float("nan")] * 6
    deliver(ports, lines(NOW - timedelta(seconds=sum(gaps)), gaps, losses=losses), 20)
    report = probe(ports)
    assert [o.kind for o in report.outcomes] == [OutcomeKind.DIVERGENCE_FOUND]
    [body] = told(ports, MessageKind.DIVERGENCE_FOUND)
    first_nan = NOW - timedelta(seconds=50)
    assert "its loss has been bad in 6 reports in a row from step 56, the first loss nan, loss nan, loss nan" in body
    assert "bad is NaN, infinite or past 4 times the median of its good reports, loss 2." in body
    before = NOW - timedelta(minutes=20)  # the checkpoint written at NOW is after the first NaN
    assert f"written at {before.strftime('%Y-%m-%d %H:%M UTC')}: resume from that checkpoint" in body
    assert f"step 56, {first_nan.strftime('%Y-%m-%d %H:%M UTC')}" in body
    assert ports.jobs.stops == [] and ports.jobs.created == []
    probe(ports)
    assert len(told(ports, MessageKind.DIVERGENCE_FOUND)) == 1


def test_the_notices_keep_the_message_rules() -> None:
    ports = slowed_job()
    probe(ports)
    [notice] = ports.notifier.sent
    for text, chat in channels(notice).values():
        assert rule_breaks(text, (JOB,), chat) == []


SLOW_LEAVE = {"trainguard:relaunch-if-slow": "true"}
DIVERGED_LEAVE = {"trainguard:stop-if-diverged": "true"}


def slowed(tags: dict[str, str], **config: object) -> FakePorts:
    ports = fake_ports(**config)
    training(ports, tags={**OPTED_IN, **tags})
    follow_training_state(ports, JOB)
    gaps = [10.0] * 120 + [20.0] * 45
    deliver(ports, lines(NOW - timedelta(seconds=sum(gaps)), gaps), 30)
    return ports


def ended_as_stopped(ports: FakePorts, tags: dict[str, str]) -> Outcome:
    """The stopped job's end, as its Stopped event brings it to the job-end workflow."""
    ports.jobs.add(described_job(status="Stopped", secondary="Stopped"), {**OPTED_IN, **tags})
    return handle_job_end(ports, JOB)


def test_with_leave_a_slow_job_is_stopped_and_relaunched_on_new_instances_with_the_health_checks() -> None:
    ports = slowed(SLOW_LEAVE, infra_check_after_host_faults=True)
    [outcome] = probe(ports).outcomes
    assert outcome.kind is OutcomeKind.SLOWDOWN_STOPPED and ports.jobs.stops == [JOB]
    record = ports.stall_ledger.stall_record(JOB)
    assert record is not None and record["finding"] == "slowdown"
    [body] = told(ports, MessageKind.SLOWDOWN_STOPPED)
    assert "relaunches it from its newest checkpoint on new instances, with SageMaker's instance health" in body
    relaunch = ended_as_stopped(ports, SLOW_LEAVE)
    assert relaunch.kind is OutcomeKind.RELAUNCHED and relaunch.category == "slowdown"
    [create] = ports.jobs.created
    assert create["InfraCheckConfig"] == {"EnableInfraCheck": True}
    assert create["CheckpointConfig"]["S3Uri"] == "s3://ckpt-bucket/llama-pretrain/"


def test_with_leave_a_diverged_job_is_stopped_and_never_relaunched_nor_told_twice() -> None:
    ports = fake_ports()
    training(ports, tags={**OPTED_IN, **DIVERGED_LEAVE})
    follow_training_state(ports, JOB)
    gaps = [10.0] * 60
    deliver(ports, lines(NOW - timedelta(seconds=sum(gaps)), gaps, losses=[2.0] * 55 + [float("nan")] * 6), 20)
    [outcome] = probe(ports).outcomes
    assert outcome.kind is OutcomeKind.DIVERGENCE_STOPPED and ports.jobs.stops == [JOB]
    [body] = told(ports, MessageKind.DIVERGENCE_STOPPED)
    assert "Stopped it (StopTrainingJob), as its tag allows; it is not relaunched." in body
    sent = len(ports.notifier.sent)
    end = ended_as_stopped(ports, DIVERGED_LEAVE)
    assert end.category == "diverged" and ports.jobs.created == [] and len(ports.notifier.sent) == sent


@pytest.mark.parametrize(
    ("tags", "config", "said"),
    [
        ({}, {}, "With the tag trainguard:relaunch-if-slow=true, it would stop it and relaunch it"),
        ({**SLOW_LEAVE, "trainguard:dry-run": "true"}, {}, "the job is in dry run, by its tag trainguard:dry-run"),
        (SLOW_LEAVE, {"dry_run": True}, "the job is in dry run, by the deployer's setting dry_run"),
        ({**SLOW_LEAVE, "trainguard:actions": "stop"}, {}, "its tag trainguard:actions does not allow retry"),
        ({**SLOW_LEAVE, "sagemaker:pipeline-execution-arn": PIPELINE_ARN}, {}, "owns it, and relaunches it"),
    ],
)
def test_without_leave_or_in_dry_run_or_for_a_parents_job_a_slowdown_is_only_told(
    tags: dict[str, str], config: dict[str, object], said: str
) -> None:
    ports = slowed(tags, **config)
    [outcome] = probe(ports).outcomes
    assert outcome.kind is OutcomeKind.SLOWDOWN_FOUND and ports.jobs.stops == []
    [body] = told(ports, MessageKind.SLOWDOWN_FOUND)
    assert said in body and ports.stall_ledger.stall_record(JOB) is None


@pytest.mark.parametrize(
    ("tags", "said"),
    [
        ({}, "With the tag trainguard:relaunch-if-slow=true"),  # the leave taken back
        ({**SLOW_LEAVE, "trainguard:enabled": "false"}, "the job is no longer opted in: tag trainguard:enabled"),
    ],
)
def test_the_tags_are_read_again_when_the_prober_acts(tags: dict[str, str], said: str) -> None:
    ports = slowed(SLOW_LEAVE)
    ports.jobs.jobs[JOB] = replace(ports.jobs.jobs[JOB], tags={**OPTED_IN, **tags})
    [outcome] = probe(ports).outcomes
    assert outcome.kind is OutcomeKind.SLOWDOWN_FOUND and ports.jobs.stops == []
    assert said in told(ports, MessageKind.SLOWDOWN_FOUND)[0]


def test_a_job_both_diverged_and_slow_is_stopped_as_diverged_and_never_relaunched() -> None:
    ports = fake_ports()
    both = {**SLOW_LEAVE, **DIVERGED_LEAVE}
    training(ports, tags={**OPTED_IN, **both})
    follow_training_state(ports, JOB)
    gaps = [10.0] * 120 + [20.0] * 45
    deliver(ports, lines(NOW - timedelta(seconds=sum(gaps)), gaps, losses=[2.0] * 160 + [float("nan")] * 6), 30)
    kinds = [o.kind for o in probe(ports).outcomes]
    assert kinds == [OutcomeKind.DIVERGENCE_STOPPED, OutcomeKind.SLOWDOWN_FOUND] and ports.jobs.stops == [JOB]
    assert ports.stall_ledger.stall_record(JOB)["finding"] == "diverged"  # type: ignore[index]
    assert ended_as_stopped(ports, both).category == "diverged" and ports.jobs.created == []


def test_a_parents_diverged_job_is_only_told_when_the_deployer_keeps_parents_jobs_running() -> None:
    ports = fake_ports(stop_stalled_parent_jobs=False)
    tags = {**OPTED_IN, **DIVERGED_LEAVE, "sagemaker:pipeline-execution-arn": PIPELINE_ARN}
    training(ports, tags=tags)
    follow_training_state(ports, JOB)
    deliver(ports, lines(NOW - timedelta(seconds=600), [10.0] * 60, losses=[2.0] * 55 + [float("nan")] * 6), 20)
    [outcome] = probe(ports).outcomes
    assert outcome.kind is OutcomeKind.DIVERGENCE_FOUND and ports.jobs.stops == []
    assert "the setting stop_stalled_parent_jobs is off" in told(ports, MessageKind.DIVERGENCE_FOUND)[0]


def test_a_stop_whose_answer_was_lost_is_trainguards_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore's retry of a StopTrainingJob that SageMaker acted on finds the job Stopping: the stop stands."""
    ports = slowed(SLOW_LEAVE)
    stop = ports.jobs.stop
    monkeypatch.setattr(ports.jobs, "stop", lambda name: stop(name) and False)
    [outcome] = probe(ports).outcomes
    assert outcome.kind is OutcomeKind.SLOWDOWN_STOPPED
    assert ended_as_stopped(ports, SLOW_LEAVE).kind is OutcomeKind.RELAUNCHED
