"""The demo's stalls, on the simulation core's kernel and the stand-in's virtual clock. A hung NCCL collective
(GPUs at 100%, no logs) in a job that logs every minute, 30 minutes in, before its rhythm is known: the fixed
threshold stops it. A chatty job (a line every 10 s, which announces its checkpoint saves) whose data loader
deadlocks 85 minutes in (idle GPUs, no logs), when its rhythm is known: stopped minutes into the silence, not
30. A slow-epoch job (one line per 40-minute epoch) is silent for longer than the fixed 30 minutes and is left
alone, by its own rhythm. A fourth is quiet through its first checkpoint load, within its startup grace, then
healthy. Each job is a trace job with its fault (played_launch.py); the production handlers run on what the
stand-in delivers, every minute; the local alarm evaluator plays CloudWatch (moto never evaluates alarms)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from trainguard.domain.stalls import silence_clock_start
from trainguard.handlers import stall_alarms
from trainguard.handlers.wiring import boto3_ports
from trainguard_local.demo.demo_jobs import (
    cadence,
    demo_fault,
    demo_job,
    gpu_words,
)
from trainguard_local.simulation.activity import LaunchActivity
from trainguard_local.simulation.fault_table import FAULT_TABLE, FaultKind, Logs
from trainguard_local.simulation.kernel import Kernel, Process, Sleep
from trainguard_local.simulation.rhythm import JobRhythm
from trainguard_local.simulation.trace import Fault, JobSpec
from trainguard_local.stand_in.alarm_evaluator import LocalAlarmEvaluator
from trainguard_local.stand_in.fleet_side import FleetSide, training_request
from trainguard_local.stand_in.local_aws import LocalAWS
from trainguard_local.stand_in.played_launch import MINUTE, PlayedLaunch

MINUTES = 115  # the slow-epoch job's third epoch line (t+80), and its silence past the fixed threshold after it
_JOBS = (
    demo_job("nccl-hang", "ml.p5.48xlarge", 2, JobRhythm(log_every_seconds=60.0), checkpoint_every_minutes=20),
    demo_job(
        "loader-deadlock",
        "ml.g5.12xlarge",
        2,
        JobRhythm(log_every_seconds=10.0, checkpoint_write_minutes=1.0, announces_phases=True),
        checkpoint_every_minutes=40,
    ),
    demo_job("slow-epochs", "ml.g5.12xlarge", 1, JobRhythm(log_every_seconds=2400.0), checkpoint_every_minutes=40),
    demo_job("slow-starter", "ml.g5.xlarge", 1, JobRhythm(log_every_seconds=60.0), checkpoint_every_minutes=30),
)
JOBS: dict[str, JobSpec] = {job.name: job for job in _JOBS}
FAULTS: dict[str, Fault] = {
    "nccl-hang": demo_fault(JOBS["nccl-hang"], FaultKind.HANG_BUSY_GPU, at_minutes=30),
    "loader-deadlock": demo_fault(JOBS["loader-deadlock"], FaultKind.HANG_IDLE_GPU, at_minutes=85),
    "slow-starter": demo_fault(JOBS["slow-starter"], FaultKind.SLOW_BUT_HEALTHY, at_minutes=0, silent_minutes=18),
}


@dataclass
class StallStory:
    """What happened in the act, minute by minute (minutes since its start), and when each hung job's signal
    crossed its limit: the reference its detection delay is measured against."""

    events: list[tuple[int, str, str]] = field(default_factory=list)  # (minute, job, what)
    crossed: dict[str, int] = field(default_factory=dict)

    def add(self, minute: int, job: str, what: str) -> None:
        self.events.append((minute, job, what))

    def first(self, job: str, word: str) -> int | None:
        return next((minute for minute, name, what in self.events if name == job and word in what), None)


class StallAct:
    """The act's jobs on the stand-in, the production handlers, and the kernel that moves the virtual clock."""

    def __init__(self, aws: LocalAWS) -> None:
        self.aws, self.ports = aws, boto3_ports(clock=aws.clock)
        self.side = FleetSide(aws.client)
        self.evaluator = LocalAlarmEvaluator(aws.client("cloudwatch"), aws.client("events"), aws.clock)
        self.kernel = Kernel(aws.clock)
        self.origin = self.kernel.now  # the act's hour 0
        self.story = StallStory()
        self.launches: dict[str, PlayedLaunch] = {}

    def minute_of(self, at: float) -> int:
        return math.ceil(round((at - self.origin) * 60, 6))

    def note(self, job: str, what: str) -> None:
        self.story.add(self.minute_of(self.kernel.now), job, what)

    def launch(self, job: JobSpec, tags: dict[str, str] | None = None, fault: Fault | None = None) -> None:
        """`tags`: the job's own beside the opt-in (a parent's markers, for tests/integration/test_parent_stalls.py);
        `fault`: the job's fault, when it is not one of the act's (tests/integration/test_progress_stalls.py)."""
        from trainguard.handlers import job_events

        tags = {"trainguard:enabled": "true", "team": "stalls-demo", **(tags or {})}
        request = training_request(job.name, job.instance_type, job.instance_count, tags)
        self.aws.client("sagemaker").create_training_job(**request)
        uri = request["CheckpointConfig"]["S3Uri"]
        self.side.write_checkpoint(uri, "step-000000/model.pt", stamped_at=self.aws.clock())
        self.aws.plane.start_training(job.name)
        self.launches[job.name] = launch = PlayedLaunch.of_job(
            job.name, job, self.side, self.aws.clock, uri, since=self.origin
        )
        self.note(job.name, f"training starts ({job.instance_count} x {job.instance_type}; {cadence(job.rhythm)})")
        if (fault := fault or FAULTS.get(job.name)) is not None:
            struck = fault
            self.kernel.at(self.aws.clock.at_hours(launch.strike(struck, self.origin)), lambda: self.struck(struck))
        elif job.rhythm.log_every_seconds / 60 > self.aws.config.stall_minutes:
            self._note_long_silence(launch)
        for event in self.aws.receive_rule_events():
            job_events.handle(event, self.ports)

    def struck(self, fault: Fault) -> None:
        """The fault strikes: what it does, from its row; for a hang, when its log silence reaches the limit
        trainguard holds for the job now (its stall ledger's), the signal its detection is measured from."""
        launch, row = self.launches[fault.job_name], FAULT_TABLE[fault.kind]
        if not row.hung:
            grace = self.aws.config.startup_grace_minutes
            self.kernel.at(
                self.aws.clock.at_hours(self.kernel.now + fault.silent_minutes * MINUTE),
                lambda: self.note(fault.job_name, f"first log line after a quiet start (within its {grace} min grace)"),
            )
            return
        lines = "a heartbeat line goes on, the step stuck" if row.logs is Logs.HEARTBEAT else "no more log lines"
        self.note(fault.job_name, f"hangs: {lines}, {gpu_words(fault.kind)}")
        [watched] = self.ports.of(stall_alarms.build_ports).stall_ledger.watched_job(fault.job_name)
        limit = watched.silence_limit().minutes
        clock, newest = self.aws.clock, launch.activity.newest_line(self.kernel.now) or self.kernel.now
        counted_from = silence_clock_start(
            clock.at_hours(launch.activity.training_since), clock.at_hours(newest), watched.thresholds
        )
        crossing = clock.hours_of(counted_from) + limit * MINUTE  # where the product counts the silence from
        self.story.crossed[fault.job_name] = self.minute_of(crossing)
        self.kernel.at(
            self.aws.clock.at_hours(crossing),
            lambda: self.note(fault.job_name, f"signal: log silence reaches its limit, {limit:g} min"),
        )

    def _note_long_silence(self, launch: PlayedLaunch) -> None:
        """A healthy job whose epochs are longer than the fixed threshold: at its last silence in the act that
        reaches the threshold, what trainguard holds as its limit (its own gaps by then)."""
        fixed, end = self.aws.config.stall_minutes * MINUTE, self.origin + MINUTES * MINUTE
        lines = [at for at, _ in launch.activity.lines(launch.played_until, end)]
        silent = [at + fixed for at, after in zip(lines, [*lines[1:], math.inf], strict=True) if after - at > fixed]
        if moments := [moment for moment in silent if moment <= end]:
            self.kernel.at(self.aws.clock.at_hours(moments[-1]), lambda: self._judge_silence(launch.name))

    def _judge_silence(self, name: str) -> None:
        [watched] = self.ports.of(stall_alarms.build_ports).stall_ledger.watched_job(name)
        self.note(
            name,
            f"silent for {watched.thresholds.stall_minutes} min, past the fixed threshold; not a stall for this "
            f"job: its limit is {watched.silence_limit().describe()}",
        )

    def every_minute(self) -> Process:
        """The minute's work, as each minute ends: what the jobs wrote, then trainguard's scheduled prober,
        CloudWatch's alarm evaluation and what the stack's rules deliver to the handlers."""
        for minute in range(1, MINUTES + 1):
            yield Sleep(self.origin + minute * MINUTE)
            self.play_jobs()
            self.run_trainguard()

    def play_jobs(self) -> None:
        from trainguard.handlers import log_activity

        for name, launch in self.launches.items():
            training = self.aws.plane.describe(name)["TrainingJobStatus"] == "InProgress"
            if training and (delivery := launch.play_until(self.kernel.now)) is not None:
                log_activity.handle(delivery, self.ports)

    def run_trainguard(self) -> None:
        from trainguard.handlers import job_events, stall_prober
        from trainguard.handlers.observability import metrics

        stall_prober.handle({}, self.ports)
        metrics.clear_metrics()  # what the Lambda decorator would flush after each run (its 100-metric limit)
        self.evaluator.evaluate_all()
        for event in self.aws.receive_stall_alarms():
            outcome, alarm = stall_alarms.handle(event, self.ports), event["detail"]["alarmName"]
            why = "" if outcome.kind.value == "stall-stopped" else f" ({outcome.reason})"
            self.note(outcome.job_name or alarm, f"alarm {alarm} -> ALARM; trainguard: {outcome.kind.value}{why}")
        for stopped in self.aws.plane.settle_all():
            self.note(stopped, "Stopped (the stop took effect)")
        for event in self.aws.receive_rule_events():
            outcome = job_events.handle(event, self.ports)
            if outcome.kind.value == "relaunched":
                self.relaunched(outcome.job_name, outcome.new_job_name)

    def relaunched(self, old: str, new: str) -> None:
        """The relaunch trains from the newest checkpoint of the launch it replaces, without its fault."""
        self.note(old, f"relaunched from its checkpoint as {new}")
        self.aws.plane.start_training(new)
        was = self.launches[old]
        activity = was.activity
        resumed = LaunchActivity(
            activity.rhythm,
            activity.checkpoint_every_minutes,
            activity.gpus_per_host,
            self.kernel.now,
            was.checkpointed,
        )
        self.launches[new] = PlayedLaunch(
            new, was.hosts, resumed, self.side, self.aws.clock, was.checkpoint_uri, job=was.job
        )


def act_stalls(aws: LocalAWS, say: Any) -> dict[str, Any]:
    say("\n=== Stalls (minutes of simulated time) ===\n")
    act = StallAct(aws)
    start = aws.clock()
    for spec in JOBS.values():
        act.launch(spec)
    act.kernel.spawn(act.every_minute(), act.origin)
    act.kernel.run()
    story = act.story
    for minute, job, what in sorted(story.events, key=lambda event: event[0]):
        say(f"  t+{minute:>3} min  {job:<16} {what}")
    alarms = aws.client("cloudwatch").describe_alarms(AlarmNamePrefix="trainguard-")["MetricAlarms"]
    say(f"\n  alarms now: {len(alarms)} ({', '.join(a['AlarmName'] for a in alarms[:6])})")
    detections = {
        name: {
            "signal_crossed": story.crossed.get(name),
            "stopped": story.first(name, "stall-stopped"),
            "relaunched": story.first(name, "relaunched"),
        }
        for name in JOBS
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
    return {"timeline": story.events, "start": start.isoformat(), "detections": detections}
