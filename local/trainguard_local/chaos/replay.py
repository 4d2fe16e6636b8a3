"""One chaos run: a fleet replayed on the stand-in, every event delivered 1-3 times in any order, faults on
every AWS call trainguard makes, processes killed after their side effects, a poison event, then the
dead-letter alarm and the redrive. `run_chaos` returns what happened; audit.py judges it.

Phases, on the simulation's clock and kernel:
1. the fleet: users launch the trace's jobs over `hours`, SageMaker runs them, trainguard reacts, the quota
   check runs every 15 minutes; then `TAIL` more for the last relaunches;
2. the dead letters: the dead-letter queues' alarms are read (before the first dead letter, and now), the
   operator fixes the poison's cause and redrives every queue;
3. `REDRIVE_TAIL` for what the redrive set off, redriving again what ends in a queue.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from infra.settings import Settings
from trainguard_local.chaos.call_faults import FaultInjector, FaultRates, virtual_backoff
from trainguard_local.chaos.dead_letters import QUEUE_OF_FUNCTION, DeadLetterQueues, Redriven, alarm_state, redrive
from trainguard_local.chaos.evidence import Evidence
from trainguard_local.chaos.lambda_runtime import BuiltPorts, Deliveries, Invocation, LambdaRuntime, quiet_handler_logs
from trainguard_local.chaos.replayed_fleet import ReplayedFleet
from trainguard_local.chaos.stack_wiring import StackWiring, finish_synth, known_wiring, start_synth
from trainguard_local.simulation.clock import run_started_at
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.kernel import Kernel
from trainguard_local.simulation.trace import Fault, JobSpec, generate_trace
from trainguard_local.stand_in.local_aws import LocalAWS, local_aws
from trainguard_local.stand_in.stack_resources import ACCOUNT, REGION, SCHEDULE_GROUP

HOUR = timedelta(hours=1)
TAIL = timedelta(hours=6)  # after the last submission: time for relaunches of relaunches to run
REDRIVE_TAIL = timedelta(hours=3)
OPERATOR_RESPONSE = timedelta(minutes=30)
SCHEDULER_POLL = timedelta(minutes=5)  # shorter than the shortest backoff (10 min): no schedule is missed
QUOTA_CHECK = timedelta(minutes=Settings().quota_check_minutes)  # the stack's default schedule
ALARM_LOOK = timedelta(minutes=10)  # when the dead-letter alarms are read: two 5-minute periods after
POISON_REASON = "InternalServerError: We encountered an internal error. Please try again."


@dataclass(frozen=True)
class ChaosSettings:
    seed: int = 1
    jobs: int = 40
    hours: float = 6.0  # the span over which the trace's jobs are submitted and would finish
    fault_share: float = 0.35  # jobs that meet one of the trace's faults (the trace's own default)
    rates: FaultRates = field(default_factory=FaultRates)
    max_delivery_delay: timedelta = timedelta(minutes=10)
    redrive_rounds: int = 3
    # The account-wide relaunch budget (GuardConfig.retry_budget_per_hour, 20 by default), set low enough that
    # a short replay reaches it: the suite checks that it holds, which a budget never reached cannot show.
    retry_budget_per_hour: int = 6


@dataclass
class ChaosRun:
    settings: ChaosSettings
    aws: LocalAWS
    fleet: ReplayedFleet
    evidence: Evidence
    deliveries: Deliveries
    runtime: LambdaRuntime
    injector: FaultInjector
    queues: DeadLetterQueues
    start: datetime
    scheduler: Any = None  # the stand-in's EventBridge Scheduler client
    wiring: StackWiring | None = None
    poison_job: str = ""
    redriven: int = 0
    backoff_sleeps: int = 0
    backoff_seconds: float = 0.0
    notifications: list[dict[str, Any]] = field(default_factory=list)
    schedules_seen: set[str] = field(default_factory=set)
    # construct path of each dead-letter queue -> (messages, alarm state before the first, alarm state after)
    alarms: dict[str, tuple[int, str, str]] = field(default_factory=dict)

    @property
    def timeline(self) -> Kernel:
        return self.fleet.schedule


def fleet_phase_hours(settings: ChaosSettings) -> float:
    """The virtual hours of a run's fleet phase: the submissions and the tail after them."""
    return settings.hours + TAIL / HOUR


def run_chaos(
    settings: ChaosSettings, inspect: Any = None, on_fleet_clock: Callable[[float], None] | None = None
) -> Any:
    """Run one seed; `inspect(run)` is called before the stand-in closes (audit.py reads everything then).
    `on_fleet_clock(hours)` is told the virtual hours into the fleet phase after each of its actions."""
    synth = None if known_wiring() else start_synth()
    try:
        with (
            quiet_handler_logs(),
            local_aws(retry_budget_per_hour=settings.retry_budget_per_hour) as aws,
            virtual_backoff() as backoff,
        ):
            run = _prepare(aws, settings)
            _fleet_phase(run, on_fleet_clock)
            run.wiring = known_wiring() or finish_synth(synth)  # type: ignore[arg-type]
            _dead_letter_phase(run)
            run.notifications = _take(aws, aws.inbox_queue_url)
            run.backoff_sleeps, run.backoff_seconds = backoff.sleeps, backoff.seconds
            return inspect(run) if inspect else run
    finally:
        if synth is not None and synth.poll() is None:  # the run failed before it needed the synth
            synth.kill()
            synth.wait()


def _prepare(aws: LocalAWS, settings: ChaosSettings) -> ChaosRun:
    hours_needed = fleet_phase_hours(settings) + (OPERATOR_RESPONSE + settings.redrive_rounds * REDRIVE_TAIL) / HOUR
    aws.clock.start_at(run_started_at(hours_needed))
    timeline = Kernel(aws.clock)
    queues = DeadLetterQueues.create(aws.client("sqs"))
    injector = FaultInjector(settings.rates, settings.seed)
    runtime = LambdaRuntime(BuiltPorts(injector, aws.clock), aws.clock, aws.client("sqs"), queues.url_of_function())
    fleet = ReplayedFleet(aws, timeline, settings.seed, aws.config)
    evidence = Evidence(aws, fleet, aws.config.stall_defaults, settings.seed)
    fleet.on_training.append(evidence.training_started)
    fleet.on_hang.append(evidence.hung)

    def before_attempt(invocation: Invocation) -> None:
        if invocation.function == "stall-alarms":
            evidence.before_stall_verdict(invocation.payload)

    deliveries = Deliveries(timeline, runtime, settings.seed, settings.max_delivery_delay, before_attempt)
    run = ChaosRun(settings, aws, fleet, evidence, deliveries, runtime, injector, queues, aws.clock())
    run.scheduler = aws.client("scheduler")
    trace = generate_trace(settings.jobs, settings.hours, settings.seed, fault_share=settings.fault_share)
    for spec in trace.jobs:
        fleet.plan_launch(spec, trace.fault_of(spec.name), run.start + timedelta(hours=spec.submitted_at))
    run.poison_job = _plan_poison(run, trace.jobs[0])
    _every(timeline, QUOTA_CHECK, lambda: _quota_check(run))
    _every(timeline, SCHEDULER_POLL, lambda: _poll_schedules(run))
    return run


def _plan_poison(run: ChaosRun, template: JobSpec) -> str:
    """A job whose every DescribeTrainingJob is refused (a permission error no retry fixes) until the
    operator fixes it: its events end in the dead-letter queue."""
    name = f"chaos-poison-{run.settings.seed}"
    spec = replace(template, name=name, submitted_at=0.5, work_hours=3.0, spot=False, owner="", owner_retries=False)
    fault = Fault(name, FaultKind.INTERNAL_ERROR, 1.0, 1.5, POISON_REASON)
    run.injector.poison(name)
    run.fleet.plan_launch(spec, fault, run.start + timedelta(hours=0.5), guarded=True)
    return name


def _every(timeline: Kernel, period: timedelta, action: Callable[[], None]) -> None:
    def tick() -> None:
        action()
        timeline.after(period, tick)

    timeline.after(period, tick)


def _quota_check(run: ChaosRun) -> None:
    run.deliveries.deliver("quota-watch", {"source": "aws.events", "detail-type": "Scheduled Event"}, "quota-check")


def _poll_schedules(run: ChaosRun) -> None:
    """EventBridge Scheduler fires each one-time schedule at its time, at least once, then deletes it."""
    scheduler = run.scheduler
    for summary in scheduler.list_schedules(GroupName=SCHEDULE_GROUP).get("Schedules", []):
        name = summary["Name"]
        if name in run.schedules_seen:
            continue
        run.schedules_seen.add(name)
        schedule = scheduler.get_schedule(Name=name, GroupName=SCHEDULE_GROUP)
        at = datetime.strptime(schedule["ScheduleExpression"], "at(%Y-%m-%dT%H:%M:%S)").replace(tzinfo=UTC)
        payload = json.loads(schedule["Target"]["Input"])

        def fire(name: str = name, payload: dict[str, Any] = payload) -> None:
            run.deliveries.deliver("retry-launcher", payload, f"schedule {name}")
            scheduler.delete_schedule(Name=name, GroupName=SCHEDULE_GROUP)  # ActionAfterCompletion=DELETE

        run.timeline.at(at, fire)


def _take(aws: LocalAWS, queue_url: str) -> list[dict[str, Any]]:
    """What the stack's rules put in one of the stand-in's queues. The replay looks after every step, and
    receiving from an empty queue is an HTTP round trip: moto's state (in this process) is peeked at first."""
    from moto.sqs.models import sqs_backends

    queue = sqs_backends[ACCOUNT][REGION].get_queue(queue_url.rsplit("/", 1)[-1])
    return aws.drain(queue_url) if queue.approximate_number_of_messages else []


def _pump(run: ChaosRun) -> None:
    """After every action: what the stack's rules matched goes to the functions, and the fleet sees it."""
    for event in _take(run.aws, run.aws.rule_queue_url):
        run.fleet.observe(event)
        detail = event["detail"]
        run.deliveries.deliver("job-events", event, f"{detail['TrainingJobName']} {detail['TrainingJobStatus']}")
    for event in _take(run.aws, run.aws.stall_alarms_queue_url):
        run.deliveries.deliver("stall-alarms", event, f"alarm {event['detail']['alarmName']}")
    for event in _take(run.aws, run.aws.launch_failures_queue_url):
        name = event["detail"]["requestParameters"].get("trainingJobName", "?")
        run.deliveries.deliver("failed-launches", event, f"refused launch {name}")


def _fleet_phase(run: ChaosRun, on_clock: Callable[[float], None] | None = None) -> None:
    def after_each() -> None:
        _pump(run)
        if on_clock is not None:
            on_clock((run.timeline.clock() - run.start) / HOUR)

    run.timeline.run(after_each, until=run.timeline.clock.hours_of(run.start) + fleet_phase_hours(run.settings))


def _dead_letter_phase(run: ChaosRun) -> None:
    timeline = run.timeline
    _read_alarms(run, timeline.clock() + ALARM_LOOK)
    timeline.run(lambda: _pump(run), until=timeline.now + OPERATOR_RESPONSE / HOUR)
    run.injector.cure(run.poison_job)  # the operator read the dead letters and granted the permission

    def invoke(target: Redriven) -> None:
        # The record names the invocation (requestId); the replay knows which event that was a delivery of.
        keys = {inv.request_id: inv.event_key for _, _, inv in run.runtime.dead_letters}
        run.deliveries.redeliver(target.function, target.payload, keys.get(target.request_id, "redrive"))

    for _ in range(run.settings.redrive_rounds):
        moved = sum(redrive(run.queues, path, invoke) for path in run.queues.urls)
        run.redriven += moved
        timeline.run(lambda: _pump(run), until=timeline.now + REDRIVE_TAIL / HOUR)
        if not moved and not any(run.queues.depth(path) for path in run.queues.urls):
            break


def _read_alarms(run: ChaosRun, at: datetime) -> None:
    """Each dead-letter queue's alarm, as the template defines it: before its first message, and at `at`."""
    assert run.wiring is not None
    for path in run.queues.urls:
        arrivals = [when for when, function, _ in run.runtime.dead_letters if QUEUE_OF_FUNCTION[function] == path]
        before = (min(arrivals) if arrivals else at) - ALARM_LOOK
        state_before, state_after = (alarm_state(run.wiring, path, arrivals, moment) for moment in (before, at))
        run.alarms[path] = (run.queues.depth(path), state_before, state_after)
