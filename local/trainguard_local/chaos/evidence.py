"""CloudWatch's side of the replay: the evidence a stall verdict reads, and the alarm events that prompt it.

- Evidence is written when it is about to be read: before each attempt of the stall-alarms function, the
  job's newest log line (CloudWatch Logs, the SageMaker training log group) and its hosts' per-minute
  GPUUtilization over the look-back are put from the truth (stall_truth.py). Written later than a real
  job would, but never anything after `now`: the handler reads what CloudWatch would hold.
- Alarm events are hints, and the replay sends them the way CloudWatch would, plus some it would not:
  the idle-GPU alarm `gpu_idle_minutes` after a job's GPUs go idle, the log-silence alarm `stall_minutes`
  after its silence starts counting (at the end of its startup grace at the earliest), and a false
  log-silence alarm on some healthy jobs. An alarm fires only if trainguard created it (DescribeAlarms);
  while it does not exist yet, the hint is checked again every 10 minutes. The events go through the
  stack's own stall-alarm rule (put on the stand-in's EventBridge as the local alarm evaluator does).
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from trainguard.domain.stalls import StallSignal, StallThresholds, alarm_name, parse_alarm_name
from trainguard_local.chaos.stall_truth import gpu_per_host, last_log_time, minute_marks
from trainguard_local.chaos.world import JobTruth, World
from trainguard_local.simulation.kernel import Kernel
from trainguard_local.stand_in.local_aws import LocalAWS

FALSE_ALARM_CHANCE = 0.15
RECHECK = timedelta(minutes=10)


class Evidence:
    def __init__(self, aws: LocalAWS, timeline: Kernel, world: World, thresholds: StallThresholds, seed: int):
        self.aws, self.timeline, self.world, self.thresholds, self.seed = aws, timeline, world, thresholds, seed
        self._cloudwatch, self._events = aws.client("cloudwatch"), aws.client("events")
        self._log_written: dict[str, datetime] = {}
        self._gpu_written: dict[str, datetime] = {}
        self.alarm_events = 0
        self.false_alarms = 0

    # ---- alarm hints ------------------------------------------------------------------------------------

    def training_started(self, job: JobTruth) -> None:
        assert job.training_since is not None
        idle = timedelta(minutes=self.thresholds.gpu_idle_minutes)
        if job.silent is not None and job.silent_gpus_idle and job.silent[1] - job.silent[0] >= idle:
            self._hint(job, StallSignal.IDLE_GPU, job.silent[0] + idle)
        rng = random.Random(f"{self.seed}-false-alarm-{job.name}")
        if rng.random() < FALSE_ALARM_CHANCE:
            self.false_alarms += 1
            at = job.training_since + timedelta(minutes=rng.uniform(25, 120))
            self._hint(job, StallSignal.LOG_SILENCE, at, recheck=False)

    def hung(self, job: JobTruth) -> None:
        assert job.hung_since is not None and job.training_since is not None
        grace_end = job.training_since + timedelta(minutes=self.thresholds.startup_grace_minutes)
        counted_from = max(job.hung_since, grace_end)
        self._hint(job, StallSignal.LOG_SILENCE, counted_from + timedelta(minutes=self.thresholds.stall_minutes))
        if job.gpus_idle_when_hung:
            self._hint(job, StallSignal.IDLE_GPU, job.hung_since + timedelta(minutes=self.thresholds.gpu_idle_minutes))

    def _hint(self, job: JobTruth, signal: StallSignal, at: datetime, recheck: bool = True) -> None:
        self.timeline.at(at, lambda: self._fire(job, signal, recheck))

    def _fire(self, job: JobTruth, signal: StallSignal, recheck: bool) -> None:
        if job.end_status or job.stop_requested_at is not None:
            return
        name = alarm_name(signal, job.name)
        found = self._cloudwatch.describe_alarms(AlarmNames=[name]).get("MetricAlarms", [])
        if not found:
            if recheck:
                self.timeline.after(RECHECK, lambda: self._fire(job, signal, recheck))
            return
        self.alarm_events += 1
        now = self.timeline.clock()
        stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000+0000")
        detail = {
            "alarmName": name,
            "state": {"value": "ALARM", "reason": "Threshold Crossed (chaos replay)", "timestamp": stamp},
            "previousState": {"value": "OK", "reason": "Threshold Crossed (chaos replay)", "timestamp": stamp},
            "configuration": {"description": found[0].get("AlarmDescription", "")},
        }
        self._events.put_events(
            Entries=[
                {
                    "Source": "aws.cloudwatch",
                    "DetailType": "CloudWatch Alarm State Change",
                    "Detail": json.dumps(detail),
                    "Resources": [found[0]["AlarmArn"]],
                    "Time": now,
                }
            ]
        )

    # ---- evidence, written just before it is read --------------------------------------------------------

    def before_stall_verdict(self, event: Any) -> None:
        parsed = (
            parse_alarm_name(str(event.get("detail", {}).get("alarmName", ""))) if isinstance(event, dict) else None
        )
        job = self.world.fleet.jobs.get(parsed[1]) if parsed else None
        if job is not None and job.training_since is not None:
            self._write_log_line(job)
            self._write_gpu(job)

    def _write_log_line(self, job: JobTruth) -> None:
        now = self.timeline.clock()
        newest = last_log_time(job, now)
        assert job.training_since is not None
        written = self._log_written.get(job.name)
        if newest is None or (written is not None and written >= newest):
            return
        self.world.side.write_log_line(job.name, job.training_since, newest, f"step at {newest:%H:%M} loss 1.234")
        self._log_written[job.name] = newest

    def _write_gpu(self, job: JobTruth) -> None:
        now = self.timeline.clock()
        look_back = timedelta(minutes=self.thresholds.gpu_idle_minutes + 5)
        start = max(now - look_back, self._gpu_written.get(job.name, now - look_back) + timedelta(seconds=1))
        marks = minute_marks(job, start, now)
        if not marks:
            return
        values = [(mark, value) for mark in marks if (value := gpu_per_host(job, mark)) is not None]
        self.world.side.put_gpu_utilization(job.name, job.hosts, values)
        self._gpu_written[job.name] = marks[-1]
