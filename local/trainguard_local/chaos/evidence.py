"""CloudWatch's side of the replay: the evidence a stall verdict reads, and the alarm events that prompt it.

- Evidence is written just before each attempt of the stall-alarms function, from the job's activity
  (simulation/activity.py): its newest log line, and its hosts' per-minute GPUUtilization over the window
  the verdict reads. Later than a real job would write it, but never anything after `now`.
- Alarm events are hints, sent as CloudWatch would send them, plus some it would not: the log-silence
  alarm when the product's own metric (`stall_over_limit`, what its prober publishes) reaches 0, the
  idle-GPU alarm when a job's GPUs have been at or below the alarm's threshold for the alarm's periods, and
  a false log-silence alarm on some jobs. An alarm fires only if trainguard created it (DescribeAlarms);
  until it exists the hint is checked again every 10 minutes. The events go through the stack's own rule.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from trainguard.domain.stalls import StallSignal, StallThresholds, alarm_name, gpu_window_start, parse_alarm_name
from trainguard.domain.watched_job import WatchedJob, stall_over_limit
from trainguard_local.chaos.jobs_truth import JobTruth
from trainguard_local.chaos.replayed_fleet import ReplayedFleet
from trainguard_local.simulation.activity import Silence
from trainguard_local.stand_in.alarm_evaluator import alarm_rule_of
from trainguard_local.stand_in.local_aws import LocalAWS

FALSE_ALARM_CHANCE = 0.15
RECHECK = timedelta(minutes=10)
MINUTE = timedelta(minutes=1)


def line_text(at: datetime) -> str:
    return f"step at {at:%H:%M} loss 1.234"


class Evidence:
    def __init__(self, aws: LocalAWS, fleet: ReplayedFleet, thresholds: StallThresholds, seed: int):
        self.aws, self.fleet, self.thresholds, self.seed = aws, fleet, thresholds, seed
        self.timeline, self.clock = fleet.schedule, fleet.schedule.clock
        self._cloudwatch, self._events = aws.client("cloudwatch"), aws.client("events")
        self._log_written: dict[str, datetime] = {}
        self._gpu_written: dict[str, datetime] = {}
        self.alarm_events = 0
        self.false_alarms = 0

    # ---- alarm hints ------------------------------------------------------------------------------------

    def training_started(self, job: JobTruth) -> None:
        assert job.activity is not None and job.training_since is not None
        for silence in job.activity.silences:  # a healthy silence, known from the start
            self._watch_idle_gpus(job, silence)
        rng = random.Random(f"{self.seed}-false-alarm-{job.name}")
        if rng.random() < FALSE_ALARM_CHANCE:
            self.false_alarms += 1
            at = job.training_since + timedelta(minutes=rng.uniform(25, 120))
            self.timeline.at(at, lambda: self._fire(job, StallSignal.LOG_SILENCE, recheck=False))

    def hung(self, job: JobTruth) -> None:
        assert job.activity is not None
        now = self.clock()
        silence = job.activity.silence_at(self.clock.hours_of(now))
        assert silence is not None
        self.timeline.at(self._log_silence_alarm_at(job, now), lambda: self._fire(job, StallSignal.LOG_SILENCE))
        self._watch_idle_gpus(job, silence)

    def _log_silence_alarm_at(self, job: JobTruth, since: datetime) -> datetime:
        """When the product's log-silence metric, on the job's true newest line, first reaches 0 after `since`:
        stepped by the minutes the metric says are left (a silence inside the startup grace takes two steps)."""
        newest = self._newest_line(job, since)
        text = line_text(newest) if newest else ""
        watched = WatchedJob(job.name, job.instance_type, job.hosts, self.thresholds, job.training_since, newest, text)
        at = since
        for _ in range(5):
            left = -stall_over_limit(watched, at)
            if left <= 0:
                break
            at += timedelta(minutes=left)
        return at

    def _watch_idle_gpus(self, job: JobTruth, silence: Silence) -> None:
        """From the start of `silence`: once trainguard's idle-GPU alarm exists, it fires when the GPUs have
        been at or below its threshold for its periods, if the silence lasts that long."""
        start = self.clock.at_hours(silence.start)

        def look() -> None:
            if job.end_status or job.stop_requested_at is not None or job.activity is None:
                return
            found = self._alarm(job, StallSignal.IDLE_GPU)
            if found is None:
                self.timeline.after(RECHECK, look)
                return
            rule = alarm_rule_of(found)
            if (job.activity.gpu_per_host(silence.start) or 0.0) > rule.threshold:
                return
            fires = start + timedelta(seconds=rule.datapoints_to_alarm * rule.period_seconds)
            if self.clock.hours_of(fires) < silence.end:
                self.timeline.at(fires, lambda: self._fire(job, StallSignal.IDLE_GPU))

        self.timeline.at(start, look)

    def _alarm(self, job: JobTruth, signal: StallSignal) -> dict[str, Any] | None:
        found = self._cloudwatch.describe_alarms(AlarmNames=[alarm_name(signal, job.name)]).get("MetricAlarms", [])
        return found[0] if found else None

    def _fire(self, job: JobTruth, signal: StallSignal, recheck: bool = True) -> None:
        if job.end_status or job.stop_requested_at is not None:
            return
        alarm = self._alarm(job, signal)
        if alarm is None:
            if recheck:
                self.timeline.after(RECHECK, lambda: self._fire(job, signal, recheck))
            return
        self.alarm_events += 1
        now = self.clock()
        stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000+0000")
        state = {"value": "ALARM", "reason": "Threshold Crossed (chaos replay)", "timestamp": stamp}
        detail = {
            "alarmName": alarm["AlarmName"],
            "state": state,
            "previousState": {**state, "value": "OK"},
            "configuration": {"description": alarm.get("AlarmDescription", "")},
        }
        entry = {"Source": "aws.cloudwatch", "DetailType": "CloudWatch Alarm State Change", "Time": now}
        self._events.put_events(Entries=[{**entry, "Detail": json.dumps(detail), "Resources": [alarm["AlarmArn"]]}])

    # ---- evidence, written just before it is read --------------------------------------------------------

    def before_stall_verdict(self, event: Any) -> None:
        name = event.get("detail", {}).get("alarmName", "") if isinstance(event, dict) else ""
        parsed = parse_alarm_name(str(name))
        job = self.fleet.jobs.get(parsed[1]) if parsed else None
        if job is not None and job.activity is not None:
            self._write_log_line(job)
            self._write_gpu(job)

    def _newest_line(self, job: JobTruth, at: datetime) -> datetime | None:
        assert job.activity is not None
        newest = job.activity.newest_line(self.clock.hours_of(at))
        return None if newest is None else self.clock.at_hours(newest)

    def _write_log_line(self, job: JobTruth) -> None:
        newest = self._newest_line(job, self.clock())
        written = self._log_written.get(job.name)
        if newest is None or (written is not None and written >= newest):
            return
        assert job.training_since is not None
        self.fleet.side.write_log_lines(job.name, job.training_since, [(newest, line_text(newest))])
        self._log_written[job.name] = newest

    def _write_gpu(self, job: JobTruth) -> None:
        """Each minute's GPUUtilization since the last written, over the window the verdict reads."""
        assert job.activity is not None and job.training_since is not None
        now = self.clock()
        start = gpu_window_start(self.thresholds, None, now) - 5 * MINUTE
        start = max(start, self._gpu_written.get(job.name, start) + timedelta(seconds=1), job.training_since)
        mark = job.training_since + -((job.training_since - start) // MINUTE) * MINUTE
        values = []
        while mark <= now:
            value = job.activity.gpu_per_host(self.clock.hours_of(mark))
            values += [(mark, value)] if value is not None else []
            mark += MINUTE
        if values:
            self.fleet.side.put_gpu_utilization(job.name, job.hosts, values)
            self._gpu_written[job.name] = values[-1][0]
