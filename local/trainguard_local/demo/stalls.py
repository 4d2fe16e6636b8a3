"""The demo's stalls, minute by minute on the virtual clock. A hung NCCL collective (GPUs at 100%, no logs)
in a job that logs every minute, 30 minutes in, before its rhythm is known: the fixed threshold stops it.
A chatty job (a line every 10 s, which announced a checkpoint save) whose data loader deadlocks 85 minutes
in (idle GPUs, no logs), when its rhythm is known: stopped 5 minutes into the silence, not 20 or 30. A
slow-epoch job (one line per 40-minute epoch) is silent for longer than the fixed 30 minutes and is left
alone, by its own rhythm. A fourth is quiet through its startup grace, then healthy. The production
handlers run on what the stand-in delivers; the local alarm evaluator plays CloudWatch (moto never
evaluates alarms)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from trainguard.handlers.wiring import boto3_ports
from trainguard_local.stand_in.alarm_evaluator import LocalAlarmEvaluator
from trainguard_local.stand_in.fleet_side import LogLine, training_request
from trainguard_local.stand_in.local_aws import LocalAWS
from trainguard_local.stand_in.stack_resources import TRAINING_LOG_GROUP

GPU_NAMESPACE = "/aws/sagemaker/TrainingJobs"
MINUTES = 100
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
    log_every_seconds: int = 60
    epoch_minutes: tuple[int, ...] = ()  # a slow job: its only lines, one per epoch end
    announce_at: int | None = None  # the minute whose last line announces a checkpoint save

    def gpu(self, minute: int) -> float:
        if minute < self.quiet_until:
            return 0.0
        return self.hang_gpu if self.hang_at is not None and minute >= self.hang_at else self.healthy_gpu

    def logs(self, minute: int) -> bool:
        return minute >= self.quiet_until and (self.hang_at is None or minute < self.hang_at)

    def line_seconds(self, minute: int) -> list[int]:
        """The seconds into the minute ending at `minute` at which the job writes a line."""
        if not self.logs(minute):
            return []
        if self.epoch_minutes:
            return [40] if minute in self.epoch_minutes else []
        return list(range(0, 60, self.log_every_seconds)) if self.log_every_seconds < 60 else [40]


SCRIPTS = {
    "nccl-hang": JobScript("ml.p5.48xlarge", 2, healthy_gpu=720.0, hang_at=30, hang_gpu=800.0),
    "loader-deadlock": JobScript(
        "ml.g5.12xlarge", 2, healthy_gpu=310.0, hang_at=85, hang_gpu=0.0, log_every_seconds=10, announce_at=40
    ),
    "slow-epochs": JobScript("ml.g5.12xlarge", 1, healthy_gpu=330.0, epoch_minutes=(2, 42)),
    "slow-starter": JobScript("ml.g5.xlarge", 1, healthy_gpu=85.0, quiet_until=18),
}
SAVE_LINE = "Saving model checkpoint to /opt/ml/checkpoints/step-4000"
LEARNED_LIMIT_MINUTES = 5  # the chatty job's limit once its rhythm is known (the floor of domain/log_rhythm.py)


@dataclass
class Timeline:
    events: list[tuple[int, str, str]] = field(default_factory=list)  # (minute, job, what)

    def add(self, minute: int, job: str, what: str) -> None:
        self.events.append((minute, job, what))


def act_stalls(aws: LocalAWS, say: Any) -> dict[str, Any]:
    from trainguard.handlers import job_events, log_activity, stall_alarms, stall_prober
    from trainguard.handlers.observability import metrics

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
        job_events.handle(event, ports.of(job_events.build_ports))
    streams: dict[str, bool] = {}
    running = dict(SCRIPTS)  # and each relaunch, which trains healthily from its checkpoint
    for minute in range(1, MINUTES + 1):
        aws.clock.skip(timedelta(minutes=1))
        now = aws.clock()
        for name, script in list(running.items()):
            if aws.plane.describe(name)["TrainingJobStatus"] != "InProgress":
                continue
            _publish_gpu(aws, name, script, minute, now)
            if seconds := script.line_seconds(minute):
                _log_lines(aws, name, script, minute, seconds, now, streams, log_activity, ports)
            _note_crossings(timeline, name, script, minute)
            if script.epoch_minutes and minute == script.epoch_minutes[-1] + STALL_MINUTES:
                [watched] = ports.of(stall_alarms.build_ports).stall_ledger.watched_job(name)
                timeline.add(
                    minute,
                    name,
                    f"silent for {STALL_MINUTES} min, past the fixed threshold; not a stall for this job: "
                    f"its limit is {watched.silence_limit().describe()}",
                )
        stall_prober.handle({}, ports.of(stall_prober.build_ports))
        metrics.clear_metrics()  # what the Lambda decorator would flush after each run (its 100-metric limit)
        evaluator.evaluate_all()
        for event in aws.receive_stall_alarms():
            outcome = stall_alarms.handle(event, ports.of(stall_alarms.build_ports))
            timeline.add(
                minute,
                outcome.job_name or event["detail"]["alarmName"],
                f"alarm {event['detail']['alarmName']} -> ALARM; trainguard: {outcome.kind.value}"
                + ("" if outcome.kind.value == "stall-stopped" else f" ({outcome.reason})"),
            )
        for stopped in aws.plane.settle_all():
            timeline.add(minute, stopped, "Stopped (the stop took effect)")
        for event in aws.receive_rule_events():
            outcome = job_events.handle(event, ports.of(job_events.build_ports))
            if outcome.kind.value == "relaunched":
                timeline.add(minute, outcome.job_name, f"relaunched from its checkpoint as {outcome.new_job_name}")
                aws.plane.start_training(outcome.new_job_name)
                running[outcome.new_job_name] = replace(running[outcome.job_name], hang_at=None)
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


def _log_lines(
    aws: LocalAWS,
    name: str,
    script: JobScript,
    minute: int,
    seconds: list[int],
    now: Any,
    streams: dict[str, bool],
    log_activity: Any,
    ports: Any,
) -> None:
    stream = f"{name}/algo-1-1764417600"
    logs = aws.client("logs")
    if stream not in streams:
        logs.create_log_stream(logGroupName=TRAINING_LOG_GROUP, logStreamName=stream)
        streams[stream] = True
    events = [
        {
            "timestamp": int((now - timedelta(seconds=60 - second)).timestamp() * 1000),
            "message": SAVE_LINE
            if script.announce_at == minute and i == len(seconds) - 1
            else f"step {minute * 50 + i} loss {2.5 - minute * 0.01:.3f}",
        }
        for i, second in enumerate(seconds)
    ]
    logs.put_log_events(logGroupName=TRAINING_LOG_GROUP, logStreamName=stream, logEvents=events)
    # What the subscription filter delivers to the log-activity function (the fleet side's own format): one
    # delivery per line, as a batch of one stream's lines would give the same gaps.
    for i, event in enumerate(events):
        log_activity.handle(LogLine(stream, event).delivery(f"{minute}-{i}"), ports.of(log_activity.build_ports))


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
    if minute == script.hang_at + silence_limit_of(script):
        timeline.add(minute, name, f"signal: log silence reaches its limit, {silence_limit_of(script)} min")
    if script.hang_gpu == 0 and script.log_every_seconds >= 60 and minute == script.hang_at + GPU_IDLE_MINUTES - 1:
        timeline.add(minute, name, f"signal: {GPU_IDLE_MINUTES} idle minutes on every host, logs silent as long")


def crossing_minute(script: JobScript) -> int | None:
    """The minute the first signal crosses its threshold (None for a job that never hangs)."""
    if script.hang_at is None:
        return None
    if script.hang_gpu == 0 and script.log_every_seconds >= 60:
        return script.hang_at + GPU_IDLE_MINUTES - 1
    return script.hang_at + silence_limit_of(script)


def silence_limit_of(script: JobScript) -> int:
    """The log-silence limit the script's job has when it hangs: learned for the chatty job, whose rhythm is
    known by then (it announced a phase, and logged for over 30 minutes after its grace; its GPUs go idle
    with its logs, so the learned limit stops it); the fixed threshold for the others."""
    return LEARNED_LIMIT_MINUTES if script.log_every_seconds < 60 else STALL_MINUTES
