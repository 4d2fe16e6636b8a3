"""One chaos run: the fleet's world (fleet/trainguard_run/, the benchmark's) under chaos's delivery faults
(fleet_deliveries.py: every event delivered 1-3 times in any order, faults on every AWS call trainguard makes,
processes killed after their side effects, Lambda's retries and dead-letter queues, false alarms, a poisoned job
and the operator's redrive), on a trace whose users tag their jobs as users do (user_tags.py). `run_chaos` returns
what happened (`ChaosRecord`, read inside the world before it closes); audit.py judges it against the world's own
record (fleet_truth.py). The run lasts until every job has completed, as the benchmark's does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from infra.settings import Settings
from trainguard.config import GuardConfig
from trainguard_local.chaos.call_faults import FaultRates
from trainguard_local.chaos.dead_letters import QUEUE_OF_FUNCTION, alarm_state
from trainguard_local.chaos.fleet_deliveries import REDRIVE_ROUNDS, ChaosDelivery, ChaosOnTheFleet
from trainguard_local.chaos.fleet_truth import JobTruth, fleet_rows, quota_walls, trainguard_acts
from trainguard_local.chaos.stack_wiring import StackWiring, finish_synth, known_wiring, start_synth
from trainguard_local.chaos.user_tags import with_user_tags, with_walls_at_first_launch
from trainguard_local.fleet.trainguard_run.guard_actions import GuardCall
from trainguard_local.fleet.trainguard_run.life_state import LifeState
from trainguard_local.fleet.trainguard_run.world import FleetWorld
from trainguard_local.fleet.trainguard_strategy import CONFIG_OVERRIDES, TrainguardStrategy
from trainguard_local.simulation.clock import SimClock
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.trace import Fault, Trace, generate_trace

Ledger = dict[tuple[str, str], dict[str, Any]]
ALARM_LOOK = timedelta(minutes=10)  # when a dead-letter queue's alarm is read: two 5-minute periods after
POISON_REASON = "InternalServerError: We encountered an internal error. Please try again."
QUOTA_CHECK_HOURS = Settings().quota_check_minutes / 60  # the stack's schedule of the quota check
SPAN_AFTER_SUBMISSIONS_HOURS = 6.0  # the progress line's estimate of the run past the last submission


@dataclass(frozen=True)
class ChaosSettings:
    seed: int = 1
    jobs: int = 40
    hours: float = 6.0  # the span over which the trace's jobs are submitted and would finish
    fault_share: float = 0.35  # jobs that meet one of the trace's faults (the trace's own default)
    rates: FaultRates = field(default_factory=FaultRates)
    max_delivery_delay: timedelta = timedelta(minutes=10)
    redrive_rounds: int = REDRIVE_ROUNDS
    # The account-wide relaunch budget (GuardConfig.retry_budget_per_hour, 20 by default), set low enough that
    # a short run reaches it: the suite checks that it holds, which a budget never reached cannot show.
    retry_budget_per_hour: int = 6

    @property
    def poison_job(self) -> str:
        return f"chaos-poison-{self.seed}"


@dataclass
class ChaosRecord:
    """What one chaos run did, as the world, its lives and chaos's delivery recorded it."""

    settings: ChaosSettings
    jobs: dict[str, JobTruth]  # every SageMaker job, by name (fleet_truth.py)
    walls: dict[str, float]  # the trace's walled lineages (their root job) -> the hours their increase takes
    # walled root -> (hours, error) of its user's refused first launch, and whether trainguard may act on it
    refused_user_launches: dict[str, tuple[float, str, bool]]
    ledger: Ledger  # trainguard's DynamoDB table, scanned at the end
    delivery: ChaosDelivery  # the deliveries, the Lambda runtime, the injector, the operator, the false alarms
    guard_log: list[GuardCall]  # trainguard's calls that act (creates, stops, quota requests)
    quota_requests: list[dict[str, Any]]
    notifications: list[tuple[str, str]]  # trainguard's SNS messages: (subject, message)
    clock: SimClock
    problems: list[str]  # what a handler raised with no fault injected into it
    config: GuardConfig  # the deployment's settings the run had (the launch budget, the quota wait)
    wiring: StackWiring | None = None
    # construct path of each dead-letter queue -> (messages, alarm state before the first, alarm state after it)
    alarms: dict[str, tuple[int, str, str]] = field(default_factory=dict)

    @property
    def poison_job(self) -> str:
        return self.settings.poison_job

    def quota_too_late(self, root: str) -> bool:
        """The walled lineage's increase came after its wait, or too near its end for the quota check to launch it."""
        return self.walls.get(root, 0.0) + QUOTA_CHECK_HOURS > self.config.quota_wait_hours


def fleet_phase_hours(settings: ChaosSettings) -> float:
    """The virtual hours the progress line counts to: the submissions and an estimate of the run after them."""
    return settings.hours + SPAN_AFTER_SUBMISSIONS_HOURS


def chaos_trace(settings: ChaosSettings) -> Trace:
    """The seed's trace with its users' tags and half its walls before a first launch (user_tags.py), and a poisoned
    job: one whose every SageMaker call of trainguard's is refused (a permission no retry fixes) until the operator
    grants it, opted in, failing once with an internal error (so that trainguard's relaunch after the redrive is
    due)."""
    trace = with_walls_at_first_launch(
        with_user_tags(generate_trace(settings.jobs, settings.hours, settings.seed, fault_share=settings.fault_share))
    )
    name = settings.poison_job
    poison = replace(
        trace.jobs[0],
        name=name,
        submitted_at=0.5,
        work_hours=3.0,
        spot=False,
        owner="",
        owner_retries=False,
        owner_tags=(("trainguard:enabled", "true"),),
    )
    fault = Fault(name, FaultKind.INTERNAL_ERROR, 1.0, 1.5, POISON_REASON)
    return replace(trace, jobs=(*trace.jobs, poison), faults=(*trace.faults, fault))


def run_chaos(
    settings: ChaosSettings, inspect: Any = None, on_fleet_clock: Callable[[float], None] | None = None
) -> Any:
    """Run one seed; returns `inspect(record)` (audit.py's `audit_run`), or the record. `on_fleet_clock(hours)` is
    told the run's virtual hours as it goes."""
    synth = None if known_wiring() else start_synth()
    try:
        trace = chaos_trace(settings)
        chaos = ChaosOnTheFleet(
            settings.rates, settings.max_delivery_delay, settings.poison_job, redrive_rounds=settings.redrive_rounds
        )
        strategy = TrainguardStrategy(
            config_overrides={**CONFIG_OVERRIDES, "retry_budget_per_hour": settings.retry_budget_per_hour},
            delivery=chaos,
            on_progress=on_fleet_clock,
            inspect=lambda world, lives: _record(settings, trace, world, lives, chaos),
        )
        strategy.run(trace)  # the fleet's world quietens the handlers' logs
        assert strategy.last_run is not None
        record: ChaosRecord = strategy.last_run.inspected
        record.wiring = known_wiring() or finish_synth(synth)  # type: ignore[arg-type]
        record.alarms = _dead_letter_alarms(record)
        return inspect(record) if inspect else record
    finally:
        if synth is not None and synth.poll() is None:  # the run failed before it needed the synth
            synth.kill()
            synth.wait()


def _record(
    settings: ChaosSettings, trace: Trace, world: FleetWorld, lives: Mapping[str, LifeState], chaos: ChaosOnTheFleet
) -> ChaosRecord:
    """Read inside the world, before moto closes."""
    assert chaos.last is not None
    pages = world.world["dynamodb"].get_paginator("scan").paginate(TableName=world.config.ledger_table_name)
    ledger = {(item["pk"]["S"], item["sk"]["S"]): item for page in pages for item in page["Items"]}
    return ChaosRecord(
        settings=settings,
        jobs=fleet_rows(world, lives),
        walls=quota_walls(trace),
        refused_user_launches={
            root: (at, error, trainguard_acts(world.fleet.launch_tags(life.job, root), life.job))
            for root, life in lives.items()
            for at, _, error in life.refused[:1]
        },
        ledger=ledger,
        delivery=chaos.last,
        guard_log=list(world.guard_log),
        quota_requests=list(world.quotas.requests()),
        notifications=[(n.subject, n.message) for n in world.usage.notifications],
        clock=world.clock,
        problems=list(world.problems),
        config=world.config,
    )


def _dead_letter_alarms(record: ChaosRecord) -> dict[str, tuple[int, str, str]]:
    """Each dead-letter queue's alarm, as the template defines it: before its first message, and ALARM_LOOK after
    it (the operator redrives later: OPERATOR_RESPONSE)."""
    assert record.wiring is not None
    alarms: dict[str, tuple[int, str, str]] = {}
    runtime = record.delivery.runtime
    end = record.clock()
    for path in record.delivery.queues.urls:
        arrivals = [when for when, function, _ in runtime.dead_letters if QUEUE_OF_FUNCTION[function] == path]
        first = min(arrivals) if arrivals else end
        before, after = (
            alarm_state(record.wiring, path, arrivals, at) for at in (first - ALARM_LOOK, first + ALARM_LOOK)
        )
        alarms[path] = (len(arrivals), before, after)
    return alarms
