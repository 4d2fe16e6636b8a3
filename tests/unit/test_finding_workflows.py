"""A slowdown and a divergence, with in-memory ports: the log subscription folds the job's step lines into its pace
and loss, and the prober tells each once per launch, with the figures, and does nothing to the job."""

from __future__ import annotations

from datetime import datetime, timedelta

from tests.fakes import NOW, FakePorts
from tests.unit.test_message_rules import channels, rule_breaks
from tests.unit.test_progress_workflows import JOB, deliver, watched
from trainguard.domain.message_kinds import MessageKind
from trainguard.domain.outcome import OutcomeKind
from trainguard.workflows.stall_prober import probe


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
