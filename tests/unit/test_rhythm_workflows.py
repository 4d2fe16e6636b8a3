"""Stalls judged by each job's own rhythm, with in-memory ports: the log subscription learns the rhythm, the
prober publishes the silence over the job's own limit, the verdict uses it, and a muted alarm only tells."""

from __future__ import annotations

from datetime import datetime, timedelta

from tests.fakes import NOW, FakePorts, fake_ports, narrowed
from tests.unit.test_progress_workflows import delivery as delivery_of
from tests.unit.test_stall_workflows import alarm, at, training
from trainguard.domain.log_rhythm import FLOOR_MINUTES, LimitSource
from trainguard.domain.outcome import OutcomeKind
from trainguard.domain.stalls import StallSignal, alarm_name
from trainguard.events.alarm_state_change import AlarmStateChange, parse_alarm_state_change
from trainguard.handlers import log_activity
from trainguard.workflows.function_ports import LogActivityPorts
from trainguard.workflows.stall_alarm import handle_stall_alarm
from trainguard.workflows.stall_prober import probe
from trainguard.workflows.stall_watch import follow_training_state

JOB = "llama-pretrain"


def delivery(job: str, times: list[datetime], message: str = "step loss 1.9", host: int = 1) -> dict[str, object]:
    """A CloudWatch Logs subscription delivery of one stream's lines (events/log_subscription.py), numbered."""
    return delivery_of([(t, f"{message} {i}") for i, t in enumerate(times)], host=host, job=job)


def logs_every(ports: FakePorts, seconds: int, *, from_: datetime, to: datetime, per_delivery: int = 6) -> None:
    """The job logs a line every `seconds`, delivered by the subscription `per_delivery` lines at a time."""
    times = []
    moment = from_
    while moment <= to:
        times.append(moment)
        moment += timedelta(seconds=seconds)
    for start in range(0, len(times), per_delivery):
        log_activity.handle(delivery(JOB, times[start : start + per_delivery]), narrowed(LogActivityPorts, ports))


def watched_chatty_job() -> FakePorts:
    """A job training for 6 h (grace 20 min) that logged every 10 s until 6 min ago, and never announced a
    phase: its limit goes below the fixed threshold after 4 h of logs."""
    ports = fake_ports()
    training(ports, for_=timedelta(hours=6))
    follow_training_state(ports, JOB)
    logs_every(ports, 10, from_=NOW - timedelta(minutes=340), to=NOW - timedelta(minutes=6), per_delivery=60)
    return ports


def test_the_subscription_learns_the_rhythm_across_deliveries() -> None:
    ports = watched_chatty_job()
    [job] = ports.stall_ledger.watched()
    assert job.rhythm.gaps >= 1900 and job.rhythm.longest_seconds == 10
    limit = job.silence_limit()
    assert (limit.source, limit.minutes) == (LimitSource.LEARNED, FLOOR_MINUTES)


def test_a_delivery_for_a_job_not_watched_or_older_than_the_newest_records_nothing() -> None:
    ports = watched_chatty_job()
    before = ports.stall_ledger.watched()
    late = delivery(JOB, [NOW - timedelta(minutes=50)], host=2)
    assert log_activity.handle(late, narrowed(LogActivityPorts, ports))["recorded"] is False
    unknown = delivery("someone-else", [NOW])
    assert log_activity.handle(unknown, narrowed(LogActivityPorts, ports))["recorded"] is False
    assert ports.stall_ledger.watched() == before


def test_a_chatty_job_whose_gpus_went_idle_is_stopped_at_its_learned_limit_well_before_the_fixed_one() -> None:
    ports = watched_chatty_job()
    ports.job_logs.newest = NOW - timedelta(minutes=6)
    ports.gpu_metrics.value = 0.0  # a deadlocked data loader: the GPUs went idle with the logs
    probe(ports)
    assert ports.alarms.published[-1][JOB] == 6.0 - FLOOR_MINUTES  # over its limit: the alarm fires
    outcome = handle_stall_alarm(ports, alarm())
    assert outcome.kind is OutcomeKind.STALL_STOPPED and ports.jobs.stops == [JOB]
    [message] = ports.notifier.sent
    assert "Log-silence limit for this job" in message.body and "learned from the job's rhythm" in message.body


def test_a_chatty_job_announcing_an_evaluation_gets_the_fixed_threshold_as_its_grace() -> None:
    ports = watched_chatty_job()
    last = NOW - timedelta(minutes=6)
    log_activity.handle(
        delivery(JOB, [last + timedelta(seconds=1)], message="***** Running Evaluation *****"),
        narrowed(LogActivityPorts, ports),
    )
    probe(ports)
    assert ports.alarms.published[-1][JOB] < 0
    ports.job_logs.newest = None
    outcome = handle_stall_alarm(ports, alarm())
    assert outcome.kind is OutcomeKind.SKIPPED and "long phase" in outcome.reason and ports.jobs.stops == []


def test_a_slow_epoch_job_is_left_alone_through_a_silence_longer_than_the_fixed_threshold() -> None:
    """One line per 40-minute epoch: 45 silent minutes would be a stall by the fixed 30, not by its rhythm."""
    ports = fake_ports()
    training(ports, for_=timedelta(hours=3))
    follow_training_state(ports, JOB)
    for k in range(4):  # epochs end 160, 120, 80, 45 minutes ago
        ts = [NOW - timedelta(minutes=(160, 120, 80, 45)[k])]
        log_activity.handle(delivery(JOB, ts, "epoch done"), narrowed(LogActivityPorts, ports))
    probe(ports)
    assert ports.alarms.published[-1][JOB] < 0
    ports.job_logs.newest = None
    ports.gpu_metrics.value = 0.0  # and its GPUs idle (a CPU phase between epochs): still not a stall
    for signal in (StallSignal.LOG_SILENCE, StallSignal.IDLE_GPU):
        outcome = handle_stall_alarm(ports, alarm(signal))
        assert outcome.kind is OutcomeKind.SKIPPED, outcome.reason
    assert ports.jobs.stops == []


def muted(change: AlarmStateChange, window_end: datetime | None) -> AlarmStateChange:
    """The same change, muted by an alarm mute rule, read through the event parser."""
    event = {
        "version": "0",
        "id": "evt-muted",
        "detail-type": "CloudWatch Alarm State Change",
        "source": "aws.cloudwatch",
        "account": "123456789012",
        "time": NOW.isoformat(),
        "region": "us-east-1",
        "resources": [f"arn:aws:cloudwatch:us-east-1:123456789012:alarm:{change.alarm_name}"],
        "detail": {
            "alarmName": change.alarm_name,
            "state": {"value": "ALARM", "reason": "Threshold Crossed", "timestamp": "2026-12-01T10:00:00.000+0000"},
            "previousState": {"value": "OK"},
            # The shape of AWS's samples (cloudwatch-and-eventbridge.html), beside `state`.
            "muteDetail": {
                "mutedByArn": "arn:aws:cloudwatch:us-east-1:123456789012:alarm-mute-rule:maintenance",
                "muteWindowStart": "2026-12-01T09:00:00.000+0000",
                **({} if window_end is None else {"muteWindowEnd": window_end.strftime("%Y-%m-%dT%H:%M:%S.000+0000")}),
            },
        },
    }
    return parse_alarm_state_change(event)


def test_a_muted_stall_alarm_tells_once_and_stops_only_after_the_mute_ends() -> None:
    ports = watched_chatty_job()
    ports.job_logs.newest, ports.gpu_metrics.value = NOW - timedelta(minutes=40), 0.0  # silent 6 min, GPUs idle
    end = NOW + timedelta(minutes=30)
    change = muted(alarm(), end)
    assert change.mute is not None and change.mute.rule_name == "maintenance"
    first = handle_stall_alarm(ports, change)
    assert first.kind is OutcomeKind.STALL_FOUND and ports.jobs.stops == []
    assert handle_stall_alarm(ports, change).kind is OutcomeKind.ALREADY_HANDLED  # a duplicate: told once
    [message] = ports.notifier.sent
    assert "alarm muted" in message.subject and "maintenance" in message.body
    probe(at(ports, timedelta(minutes=10)))  # still muted: nothing re-armed
    assert ports.alarms.rearmed == []
    probe(at(ports, timedelta(minutes=31)))  # the window has ended: back to OK, to fire again unmuted
    assert ports.alarms.rearmed == [alarm_name(signal, JOB) for signal in StallSignal]  # each may have fired muted
    assert ports.stall_ledger.watched()[0].muted_until is None
    later = handle_stall_alarm(at(ports, timedelta(minutes=32)), alarm())
    assert later.kind is OutcomeKind.STALL_STOPPED and ports.jobs.stops == [JOB]


def test_a_mute_whose_window_has_already_ended_does_not_hold_the_stop_back() -> None:
    """A late or retried delivery of a muted change: the team's "for now" is over."""
    ports = watched_chatty_job()
    ports.job_logs.newest, ports.gpu_metrics.value = NOW - timedelta(minutes=40), 0.0  # silent 6 min, GPUs idle
    outcome = handle_stall_alarm(ports, muted(alarm(), NOW - timedelta(minutes=1)))
    assert outcome.kind is OutcomeKind.STALL_STOPPED and ports.jobs.stops == [JOB]


def test_a_mute_without_a_window_end_is_told_once_and_looked_at_again_hourly() -> None:
    ports = watched_chatty_job()
    ports.job_logs.newest, ports.gpu_metrics.value = NOW - timedelta(minutes=40), 0.0  # silent 6 min, GPUs idle
    assert handle_stall_alarm(ports, muted(alarm(), None)).kind is OutcomeKind.STALL_FOUND
    assert ports.stall_ledger.watched()[0].muted_until == NOW + timedelta(hours=1)
    probe(at(ports, timedelta(hours=1)))  # re-armed; it fires again, still muted: nothing new is told
    later = handle_stall_alarm(at(ports, timedelta(hours=1, minutes=1)), muted(alarm(), None))
    assert later.kind is OutcomeKind.ALREADY_HANDLED
    assert len(ports.notifier.sent) == 1 and ports.jobs.stops == []


def test_a_chatty_job_silent_past_its_learned_limit_with_busy_gpus_waits_for_the_fixed_threshold() -> None:
    """A phase it has not shown before (a silent evaluation) looks like a hung collective: not stopped at
    the learned limit; the silence is judged at the fixed 30 min, and then the job is stopped."""
    ports = watched_chatty_job()
    ports.job_logs.newest = NOW - timedelta(minutes=6)
    ports.gpu_metrics.value = 640.0
    outcome = handle_stall_alarm(ports, alarm())
    assert outcome.kind is OutcomeKind.SKIPPED and "busy" in outcome.reason and ports.jobs.stops == []
    [job] = ports.stall_ledger.watched()
    assert job.silence_deferred and job.silence_limit().source is LimitSource.DEFERRED
    probe(ports)
    assert ports.alarms.published[-1][JOB] == 6.0 - 30  # the alarm goes back to OK by itself
    later = at(ports, timedelta(minutes=25))  # 31 min of silence
    probe(later)
    assert ports.alarms.published[-1][JOB] == 1.0
    assert handle_stall_alarm(later, alarm()).kind is OutcomeKind.STALL_STOPPED and ports.jobs.stops == [JOB]


def test_a_new_line_ends_the_deferral() -> None:
    ports = watched_chatty_job()
    ports.job_logs.newest = NOW - timedelta(minutes=6)
    ports.gpu_metrics.value = 640.0
    handle_stall_alarm(ports, alarm())
    logs_every(ports, 10, from_=NOW - timedelta(seconds=30), to=NOW)
    [job] = ports.stall_ledger.watched()
    assert not job.silence_deferred and job.silence_limit().source is LimitSource.LEARNED


def test_a_log_silence_alarm_an_earlier_version_made_is_put_again_by_the_sweep() -> None:
    """Made on LogSilenceMinutes against a fixed threshold, it would never fire: nothing publishes that now."""
    ports = watched_chatty_job()
    name = alarm_name(StallSignal.LOG_SILENCE, JOB)
    ports.alarms.add_alarm(name, "OK", metric="LogSilenceMinutes")
    ports.alarms.add_alarm(alarm_name(StallSignal.LOG_SILENCE, "gone-job"), "OK", metric="LogSilenceMinutes")
    sweep_minute = at(ports, timedelta(minutes=(15 - NOW.minute % 15) % 15))
    report = probe(sweep_minute)
    assert report.renewed == [name]  # the job that is not watched any more is the orphan sweep's
    assert ports.alarms.outdated_log_silence_alarms() == []
