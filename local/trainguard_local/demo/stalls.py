"""The demo's stalls, minute by minute on the virtual clock: two jobs hang after 30 minutes of healthy
training (a deadlocked data loader: idle GPUs and no logs; a hung NCCL collective: GPUs at 100% and no
logs), and a third is quiet through its startup grace, then healthy. The production handlers run on
what the stand-in delivers; the local alarm evaluator plays CloudWatch (moto never evaluates alarms)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from trainguard.handlers.wiring import boto3_ports
from trainguard.workflows.function_ports import JobEventsPorts, LogActivityPorts, StallAlarmsPorts, StallProberPorts
from trainguard_local.stand_in.alarm_evaluator import LocalAlarmEvaluator
from trainguard_local.stand_in.fleet_side import LogLine, training_request
from trainguard_local.stand_in.local_aws import LocalAWS
from trainguard_local.stand_in.stack_resources import TRAINING_LOG_GROUP

GPU_NAMESPACE = "/aws/sagemaker/TrainingJobs"
MINUTES = 70
STALL_MINUTES = 30  # the defaults the demo's jobs keep (no threshold tags)
GPU_IDLE_MINUTES = 20


@dataclass(frozen=True)
class JobScript:
    instance_type: str
    hosts: int
    healthy_gpu: float  # per host, 100 per GPU
    hang_at: int | None = None  # the minute it hangs, if it does
    hang_gpu: float = 0.0
    quiet_until: int = 0  # no logs and idle GPUs until this minute (a compile, a first checkpoint load)

    def gpu(self, minute: int) -> float:
        if minute < self.quiet_until:
            return 0.0
        return self.hang_gpu if self.hang_at is not None and minute >= self.hang_at else self.healthy_gpu

    def logs(self, minute: int) -> bool:
        return minute >= self.quiet_until and (self.hang_at is None or minute < self.hang_at)


SCRIPTS = {
    "loader-deadlock": JobScript("ml.g5.12xlarge", 2, healthy_gpu=310.0, hang_at=30, hang_gpu=0.0),
    "nccl-hang": JobScript("ml.p5.48xlarge", 2, healthy_gpu=720.0, hang_at=30, hang_gpu=800.0),
    "slow-starter": JobScript("ml.g5.xlarge", 1, healthy_gpu=85.0, quiet_until=18),
}


@dataclass
class Timeline:
    events: list[tuple[int, str, str]] = field(default_factory=list)  # (minute, job, what)

    def add(self, minute: int, job: str, what: str) -> None:
        self.events.append((minute, job, what))


def act_stalls(aws: LocalAWS, say: Any) -> dict[str, Any]:
    from trainguard.handlers import job_events, log_activity, stall_alarms, stall_prober

    ports = boto3_ports(clock=aws.clock)
    evaluator = LocalAlarmEvaluator(aws.client("cloudwatch"), aws.client("events"), aws.clock)
    timeline = Timeline()
    say("\n=== Stalls (minutes of simulated time) ===\n")
    start = aws.clock()
    for name, script in SCRIPTS.items():
        tags = {"trainguard:enabled": "true", "team": "stalls-demo"}
        aws.client("sagemaker").create_training_job(**training_request(name, script.instance_type, script.hosts, tags))
        aws.client("s3").put_object(Bucket="demo-checkpoints", Key=f"{name}/step-000100/model.pt", Body=b"w")
        aws.plane.start_training(name)
        timeline.add(0, name, f"training starts ({script.hosts} x {script.instance_type})")
    for event in aws.receive_rule_events():
        job_events.handle(event, ports.of(JobEventsPorts))
    streams: dict[str, bool] = {}
    for minute in range(1, MINUTES + 1):
        aws.clock.skip(timedelta(minutes=1))
        now = aws.clock()
        for name, script in SCRIPTS.items():
            if aws.plane.describe(name)["TrainingJobStatus"] != "InProgress":
                continue
            _publish_gpu(aws, name, script, minute, now)
            if script.logs(minute):
                _log_line(aws, name, minute, now, streams, log_activity, ports)
            _note_crossings(timeline, name, script, minute)
        stall_prober.handle({}, ports.of(StallProberPorts))
        evaluator.evaluate_all()
        for event in aws.receive_stall_alarms():
            outcome = stall_alarms.handle(event, ports.of(StallAlarmsPorts))
            timeline.add(
                minute,
                outcome.job_name or event["detail"]["alarmName"],
                f"alarm {event['detail']['alarmName']} -> ALARM; trainguard: {outcome.kind.value}"
                + ("" if outcome.kind.value == "stall-stopped" else f" ({outcome.reason})"),
            )
        for stopped in aws.plane.settle_all():
            timeline.add(minute, stopped, "Stopped (the stop took effect)")
        for event in aws.receive_rule_events():
            outcome = job_events.handle(event, ports.of(JobEventsPorts))
            if outcome.kind.value == "relaunched":
                timeline.add(minute, outcome.job_name, f"relaunched from its checkpoint as {outcome.new_job_name}")
                aws.plane.start_training(outcome.new_job_name)
    for minute, job, what in sorted(timeline.events, key=lambda event: event[0]):
        say(f"  t+{minute:>2} min  {job:<16} {what}")
    alarms = aws.client("cloudwatch").describe_alarms(AlarmNamePrefix="trainguard-")["MetricAlarms"]
    say(f"\n  alarms now: {len(alarms)} ({', '.join(a['AlarmName'] for a in alarms[:6])})")
    detections = {
        name: {
            "signal_crossed": crossing_minute(script),
            "stopped": next((m for m, job, what in timeline.events if job == name and "stall-stopped" in what), None),
            "relaunched": next((m for m, job, what in timeline.events if job == name and "relaunched" in what), None),
        }
        for name, script in SCRIPTS.items()
    }
    say("")
    for name, found in detections.items():
        if found["signal_crossed"] is None:
            say(f"  {name}: healthy; stopped: {'never' if found['stopped'] is None else found['stopped']}")
        else:
            delay = None if found["stopped"] is None else found["stopped"] - found["signal_crossed"]
            say(
                f"  {name}: signal crossed at t+{found['signal_crossed']}, stopped at t+{found['stopped']} "
                f"(detection delay {delay} min), relaunched at t+{found['relaunched']}"
            )
    return {"timeline": timeline.events, "start": start.isoformat(), "detections": detections}


def _publish_gpu(aws: LocalAWS, name: str, script: JobScript, minute: int, now: Any) -> None:
    aws.client("cloudwatch").put_metric_data(
        Namespace=GPU_NAMESPACE,
        MetricData=[
            {
                "MetricName": "GPUUtilization",
                "Dimensions": [{"Name": "Host", "Value": f"{name}/algo-{n}"}],
                "Timestamp": now - timedelta(seconds=30),
                "Value": script.gpu(minute),
                "Unit": "Percent",
            }
            for n in range(1, script.hosts + 1)
        ],
    )


def _log_line(
    aws: LocalAWS, name: str, minute: int, now: Any, streams: dict[str, bool], log_activity: Any, ports: Any
) -> None:
    stream = f"{name}/algo-1-1764417600"
    logs = aws.client("logs")
    if stream not in streams:
        logs.create_log_stream(logGroupName=TRAINING_LOG_GROUP, logStreamName=stream)
        streams[stream] = True
    event = {
        "timestamp": int((now - timedelta(seconds=20)).timestamp() * 1000),
        "message": f"step {minute * 50} loss {2.5 - minute * 0.01:.3f}",
    }
    logs.put_log_events(logGroupName=TRAINING_LOG_GROUP, logStreamName=stream, logEvents=[event])
    # What the subscription filter delivers to the log-activity function (the fleet side's own format).
    log_activity.handle(LogLine(stream, event).delivery(str(minute)), ports.of(LogActivityPorts))


def _note_crossings(timeline: Timeline, name: str, script: JobScript, minute: int) -> None:
    """When each signal crosses its threshold, from the script itself: the reference the detections are
    measured against. Logs stop after minute hang_at - 1 (written 20 s before that minute ended)."""
    if script.quiet_until and minute == script.quiet_until:
        timeline.add(minute, name, "first log line after a quiet start (within its 20 min grace)")
    if script.hang_at is None:
        return
    if minute == script.hang_at:
        gpu = "GPUs idle" if script.hang_gpu == 0 else "GPUs at 100%"
        timeline.add(minute, name, f"hangs: no more log lines, {gpu}")
    if minute == script.hang_at + STALL_MINUTES:
        timeline.add(minute, name, f"signal: log silence reaches {STALL_MINUTES} min")
    if script.hang_gpu == 0 and minute == script.hang_at + GPU_IDLE_MINUTES - 1:
        timeline.add(minute, name, f"signal: {GPU_IDLE_MINUTES} idle minutes on every host, logs silent as long")


def crossing_minute(script: JobScript) -> int | None:
    """The minute the first signal crosses its threshold (None for a job that never hangs)."""
    if script.hang_at is None:
        return None
    if script.hang_gpu == 0:
        return script.hang_at + GPU_IDLE_MINUTES - 1
    return script.hang_at + STALL_MINUTES
