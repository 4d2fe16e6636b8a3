"""One chaos run: a fleet replayed on the stand-in, every event delivered 1-3 times in any order, faults on
every AWS call trainguard makes, processes killed after their side effects, a poison event, then the
dead-letter alarm and the redrive. `run_chaos` returns what happened; audit.py judges it.

Phases, on one virtual clock (timeline.py):
1. the fleet: users launch the trace's jobs over `hours`, SageMaker runs them, trainguard reacts; the
   quota check runs every `quota_check_minutes`; then `TAIL` more for the last relaunches to run;
2. the dead letters: the alarms of the dead-letter queues are evaluated (before the first dead letter,
   and now), the operator fixes the poison's cause (grants the permission) and redrives every queue;
3. `TAIL` again for what the redrive set off; dead letters of that phase are redriven too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from trainguard_local.chaos.dead_letters import QUEUE_OF_FUNCTION, DeadLetterQueues, Redriven, alarm_state, redrive
from trainguard_local.chaos.deliveries import Deliveries
from trainguard_local.chaos.evidence import Evidence
from trainguard_local.chaos.faults import FaultInjector, FaultRates, virtual_backoff
from trainguard_local.chaos.lambda_runtime import Invocation, LambdaRuntime, quiet_handler_logs
from trainguard_local.chaos.rule_queues import RuleQueues
from trainguard_local.chaos.stack_wiring import StackWiring, finish_synth, known_wiring, start_synth
from trainguard_local.chaos.world import World
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.kernel import Kernel
from trainguard_local.simulation.trace import Fault, JobSpec, generate_trace
from trainguard_local.stand_in.local_aws import LocalAWS, local_aws
from trainguard_local.stand_in.stack_resources import SCHEDULE_GROUP

TAIL = timedelta(hours=6)  # after the last submission: time for relaunches of relaunches to run
REDRIVE_TAIL = timedelta(hours=3)
OPERATOR_RESPONSE = timedelta(minutes=30)
SCHEDULER_POLL = timedelta(minutes=5)  # shorter than the shortest backoff (10 min): no schedule is missed
QUOTA_CHECK = timedelta(minutes=15)  # the stack's default quota_check_minutes (infra/settings.py)
ALARM_LOOK = timedelta(minutes=10)  # when the dead-letter alarms are read: two 5-minute periods after
_NOT_YET = datetime(1970, 1, 1, tzinfo=UTC)
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
    world: World
    evidence: Evidence
    deliveries: Deliveries
    runtime: LambdaRuntime
    injector: FaultInjector
    queues: DeadLetterQueues
    wiring: StackWiring | None = None
    poison_job: str = ""
    start: datetime = _NOT_YET
    dead_letter_phase: datetime = _NOT_YET
    redriven: int = 0
    backoff_sleeps: int = 0
    backoff_seconds: float = 0.0
    queues_of_rules: RuleQueues | None = None
    scheduler: Any = None
    notifications: list[dict[str, Any]] = field(default_factory=list)
    schedules_fired: int = 0
    quota_checks: int = 0
    schedules_seen: set[str] = field(default_factory=set)
    # construct path of each dead-letter queue -> (messages, alarm state before the first, alarm state after)
    alarms: dict[str, tuple[int, str, str]] = field(default_factory=dict)


def fleet_phase_hours(settings: ChaosSettings) -> float:
    """The virtual hours of a run's fleet phase: the submissions and the tail after them."""
    return settings.hours + TAIL / timedelta(hours=1)


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
            assert run.queues_of_rules is not None
            run.notifications = run.queues_of_rules.take(run.queues_of_rules.inbox)
            run.backoff_sleeps, run.backoff_seconds = backoff.sleeps, backoff.seconds
            return inspect(run) if inspect else run
    finally:
        if synth is not None and synth.poll() is None:  # the run failed before it needed the synth
            synth.kill()
            synth.wait()


def _prepare(aws: LocalAWS, settings: ChaosSettings) -> ChaosRun:
    # Logs and metrics must be within CloudWatch's accepted window (14 days old at most): the replay runs in
    # the recent past, from the top of an hour.
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    start = now - timedelta(hours=settings.hours) - 4 * TAIL
    clock = aws.clock
    clock.start_at(start)
    timeline = Kernel(clock)
    queues = DeadLetterQueues.create(aws)
    injector = FaultInjector(settings.rates, settings.seed)
    runtime = LambdaRuntime(injector, clock, aws.client("sqs"), queues.url_of_function())
    world = World(aws, timeline, settings.seed, aws.config)
    evidence = Evidence(aws, timeline, world, aws.config.stall_defaults, settings.seed)
    world.on_training.append(evidence.training_started)
    world.on_hang.append(evidence.hung)

    def before_attempt(invocation: Invocation) -> None:
        if invocation.function == "stall-alarms":
            evidence.before_stall_verdict(invocation.payload)

    deliveries = Deliveries(timeline, runtime, settings.seed, settings.max_delivery_delay, before_attempt)
    run = ChaosRun(settings, aws, world, evidence, deliveries, runtime, injector, queues, start=start)
    run.queues_of_rules = RuleQueues(aws)
    run.scheduler = aws.client("scheduler")
    trace = generate_trace(settings.jobs, settings.hours, settings.seed, fault_share=settings.fault_share)
    for spec in trace.jobs:
        world.plan_launch(spec, trace.fault_of(spec.name), start + timedelta(hours=spec.submitted_at))
    run.poison_job = _plan_poison(run, trace.jobs[0], start)
    _every(run, QUOTA_CHECK, lambda: _quota_check(run))
    _every(run, SCHEDULER_POLL, lambda: _poll_schedules(run))
    return run


def _plan_poison(run: ChaosRun, template: JobSpec, start: datetime) -> str:
    """A job whose every DescribeTrainingJob is refused (a permission error no retry fixes) until the
    operator fixes it: its events end in the dead-letter queue."""
    name = f"chaos-poison-{run.settings.seed}"
    spec = replace(template, name=name, submitted_at=0.5, work_hours=3.0, spot=False, owner="", owner_retries=False)
    fault = Fault(name, FaultKind.INTERNAL_ERROR, 1.0, 1.5, POISON_REASON)
    run.injector.poison(name)
    run.world.plan_launch(spec, fault, start + timedelta(hours=0.5), guarded=True)
    return name


def _every(run: ChaosRun, period: timedelta, action: Any) -> None:
    timeline = run.world.schedule

    def tick() -> None:
        action()
        timeline.after(period, tick)

    timeline.after(period, tick)


def _quota_check(run: ChaosRun) -> None:
    run.quota_checks += 1
    run.deliveries.deliver("quota-watch", {"source": "aws.events", "detail-type": "Scheduled Event"}, "quota-check")


def _poll_schedules(run: ChaosRun) -> None:
    """EventBridge Scheduler fires each one-time schedule at its time, at least once, then deletes it."""
    scheduler = run.scheduler
    for summary in scheduler.list_schedules(GroupName=SCHEDULE_GROUP).get("Schedules", []):
        if summary["Name"] in run.schedules_seen:
            continue
        run.schedules_seen.add(summary["Name"])
        schedule = scheduler.get_schedule(Name=summary["Name"], GroupName=SCHEDULE_GROUP)
        at = datetime.strptime(schedule["ScheduleExpression"], "at(%Y-%m-%dT%H:%M:%S)").replace(tzinfo=UTC)
        run.world.schedule.at(at, _firing(run, summary["Name"], json.loads(schedule["Target"]["Input"])))


def _firing(run: ChaosRun, name: str, payload: dict[str, Any]) -> Callable[[], None]:
    def fire() -> None:
        run.schedules_fired += 1
        run.deliveries.deliver("retry-launcher", payload, f"schedule {name}")
        run.scheduler.delete_schedule(Name=name, GroupName=SCHEDULE_GROUP)  # ActionAfterCompletion=DELETE

    return fire


def _pump(run: ChaosRun) -> None:
    """After every action: what the stack's rules matched goes to the functions, and the world sees it."""
    queues = run.queues_of_rules
    assert queues is not None
    for event in queues.take(queues.job_events):
        run.world.observe(event)
        detail = event["detail"]
        run.deliveries.deliver("job-events", event, f"{detail['TrainingJobName']} {detail['TrainingJobStatus']}")
    for event in queues.take(queues.stall_alarms):
        run.deliveries.deliver("stall-alarms", event, f"alarm {event['detail']['alarmName']}")
    for event in queues.take(queues.failed_launches):
        name = event["detail"]["requestParameters"].get("trainingJobName", "?")
        run.deliveries.deliver("failed-launches", event, f"refused launch {name}")


def _fleet_phase(run: ChaosRun, on_clock: Callable[[float], None] | None = None) -> None:
    timeline = run.world.schedule
    end = run.start + timedelta(hours=fleet_phase_hours(run.settings))

    def after_each() -> None:
        _pump(run)
        if on_clock is not None:
            on_clock((timeline.clock() - run.start) / timedelta(hours=1))

    timeline.run(after_each, until=timeline.clock.hours_of(end))


def _dead_letter_phase(run: ChaosRun) -> None:
    timeline = run.world.schedule
    run.dead_letter_phase = timeline.clock()
    _read_alarms(run, run.dead_letter_phase + ALARM_LOOK)
    timeline.run(lambda: _pump(run), until=timeline.now + OPERATOR_RESPONSE / timedelta(hours=1))
    run.injector.cure(run.poison_job)  # the operator read the dead letters and granted the permission

    def invoke(target: Redriven) -> None:
        # The record names the invocation (requestId); the replay knows which event that was a delivery of.
        keys = {inv.request_id: inv.event_key for _, _, inv in run.runtime.dead_letters}
        run.deliveries.redeliver(target.function, target.payload, keys.get(target.request_id, "redrive"))

    for _ in range(run.settings.redrive_rounds):
        moved = sum(redrive(run.queues, path, invoke) for path in run.queues.urls)
        run.redriven += moved
        timeline.run(lambda: _pump(run), until=timeline.now + REDRIVE_TAIL / timedelta(hours=1))
        if not moved and not any(run.queues.depth(path) for path in run.queues.urls):
            break


def _read_alarms(run: ChaosRun, at: datetime) -> None:
    """Each dead-letter queue's alarm, as the template defines it: before its first message, and at `at`."""
    assert run.wiring is not None
    for path in run.queues.urls:
        arrivals = [when for when, function, _ in run.runtime.dead_letters if QUEUE_OF_FUNCTION[function] == path]
        before = (min(arrivals) if arrivals else at) - ALARM_LOOK
        state_before, _ = alarm_state(run.queues, run.wiring, path, arrivals, before)
        state_after, _ = alarm_state(run.queues, run.wiring, path, arrivals, at)
        run.alarms[path] = (run.queues.depth(path), state_before, state_after)
