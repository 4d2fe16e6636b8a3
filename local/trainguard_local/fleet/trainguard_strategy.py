"""trainguard itself, as a fleet strategy: the real code, driven on the stand-in, on a virtual clock.

Not a model. The production handlers (`lambdas/trainguard/handlers`, each through `handle(event,
ports)`) and adapters decide and act; only the endpoints and the clock differ (trainguard_run/world.py).
The fleet's side (jobs train, fail, hang, fall silent; SageMaker, CloudWatch, the scheduler and
Service Quotas answer) is driven event by event (trainguard_run/schedules.py; each job's life is the one every
strategy plays, fleet/life.py, with trainguard's answers in trainguard_run/answers.py),
and what happened is written into the fleet model's records, as the anchors' are.

What is modelled rather than run:
- the job's own side: startup, training, checkpoints, the faults, from the trace and model.py's rules
  (as for the anchors);
- the person on call, where trainguard leaves the job to a person (person.py, the same draws);
- CloudWatch's evaluation of the alarms (LocalAlarmEvaluator, CloudWatch's documented semantics), and
  only during stall windows (see trainguard_run/schedules.py); the prober and the quota check run on their
  schedules only while something can come of them. Their calls in the rest of the time are estimated
  in `guard_calls.schedules`, not run, and priced in `guard_cost` (guard_cost.py);
- the delivery of events: in order, at once, some twice (`duplicate_delivery_share`); or as `delivery` chooses
  (up to some minutes late, `LateBy`; the chaos suite's copies, retries and faults, chaos/fleet_deliveries.py).

The fleet's jobs opt in with `trainguard:enabled=true` and `trainguard:restart-without-checkpoint=true`
(their scripts resume from the newest checkpoint, or start afresh when there is none); the deployment's
settings are the defaults, except the roles it may pass and a quota ceiling that fits 64-instance jobs.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from infra.settings import Settings
from trainguard.domain.outcome import Outcome
from trainguard.domain.progress_findings import FindingKind
from trainguard_local.fleet.guard_cost import Deployment, UsageSummary, guard_cost
from trainguard_local.fleet.model import TRAINGUARD_WITH_LEAVE, JobOutcome
from trainguard_local.fleet.person import PersonOnCall, person_rng
from trainguard_local.fleet.trainguard_run.answers import TrainguardAnswers
from trainguard_local.fleet.trainguard_run.event_delivery import Delivery, LateDelivery
from trainguard_local.fleet.trainguard_run.finding_windows import NOTICES
from trainguard_local.fleet.trainguard_run.guard_actions import GuardCall
from trainguard_local.fleet.trainguard_run.life_state import LifeSettings
from trainguard_local.fleet.trainguard_run.schedules import QuotaChecks, Ticker
from trainguard_local.fleet.trainguard_run.usage import Notification
from trainguard_local.fleet.trainguard_run.world import FleetWorld, fleet_world
from trainguard_local.simulation.catalogue import training_quota_name
from trainguard_local.simulation.clock import run_started_at
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.kernel import Kernel
from trainguard_local.simulation.trace import Trace

# The owners' leave to act on what their jobs' step lines show (docs/pace.md), in the strategy that gives it.
LEAVE_TAGS = {"trainguard:relaunch-if-slow": "true", "trainguard:stop-if-diverged": "true"}
# The deployment's settings that differ from the defaults (docs/deploying.md).
CONFIG_OVERRIDES: dict[str, Any] = {
    # The trace's jobs have up to 64 instances; a quota wall asks for usage + delta, up to twice that.
    "default_quota_ceiling": 256,
}
DEPLOYMENT = Deployment()  # how often the deployed stack runs the prober and the quota check (guard_cost.py)
# How events reach trainguard in a run, given the world, its kernel and the trace's seed (event_delivery.py).
DeliveryChoice = Callable[[FleetWorld, Kernel, int], AbstractContextManager[Delivery]]


@dataclass(frozen=True)
class LateBy:
    """Every job event, alarm and schedule firing up to `minutes` late, uniformly (a delivery fault, issue 25)."""

    minutes: float

    @contextmanager
    def __call__(self, world: FleetWorld, kernel: Kernel, seed: int) -> Iterator[Delivery]:
        yield LateDelivery(world.run_once, kernel, self.minutes, seed)


@dataclass
class RunRecord:
    """What one run did besides the outcomes: trainguard's calls, the handler outcomes, the problems."""

    seconds: float = 0.0
    calls: Counter[str] = field(default_factory=Counter)
    guard_log: list[GuardCall] = field(default_factory=list)
    outcome_kinds: Counter[str] = field(default_factory=Counter)
    handler_outcomes: list[tuple[float, str, Outcome]] = field(default_factory=list)  # (hours, handler, outcome)
    problems: list[str] = field(default_factory=list)
    notes: dict[str, list[str]] = field(default_factory=dict)  # by trace job: what went unexpectedly
    modelled: dict[str, list[str]] = field(default_factory=dict)  # by trace job: where a model stood in
    ticks: int = 0
    repeated_refusals: int = 0  # trainguard's launches refused again the same way (not counted as actions)
    quota_checks: int = 0
    span_hours: float = 0.0
    guarded_instance_hours: float = 0.0
    guarded_compute_dollars: float = 0.0
    usage: UsageSummary | None = None  # what trainguard used, for guard_cost
    notifications: list[Notification] = field(default_factory=list)  # trainguard's SNS messages, in order
    inspected: Any = None  # what `inspect` read inside the run's world


@dataclass
class TrainguardStrategy:
    person: PersonOnCall = field(default_factory=PersonOnCall)
    duplicate_delivery_share: float = 0.1  # events delivered twice (EventBridge: at least once)
    config_overrides: dict[str, Any] = field(default_factory=lambda: dict(CONFIG_OVERRIDES))
    name: str = "trainguard"
    owner_tags: dict[str, str] = field(default_factory=dict)  # what every owner adds to the trace's tags
    delivery: DeliveryChoice | None = field(default=None, repr=False)  # None: at once, as the benchmark measures
    last_run: RunRecord | None = None
    on_progress: Callable[[float], None] | None = field(default=None, repr=False, compare=False)  # trace hours
    # Reads the world and the lives before the stand-in closes (the chaos audit's record); kept in `last_run.inspected`.
    inspect: Callable[[FleetWorld, dict[str, TrainguardAnswers]], Any] | None = field(
        default=None, repr=False, compare=False
    )

    def run(self, trace: Trace) -> list[JobOutcome]:
        started = time.perf_counter()
        record = RunRecord()
        with ExitStack() as run_lasts:
            world = run_lasts.enter_context(
                fleet_world(
                    run_started_at(trace.hours),
                    self.config_overrides,
                    self.duplicate_delivery_share,
                    trace.seed,
                    initial_quota_values(trace),
                )
            )
            world.fleet.owner_tags = dict(self.owner_tags)
            kernel = Kernel(world.clock, on_resume=world.act_for)
            if self.delivery is not None:
                world.delivery = run_lasts.enter_context(self.delivery(world, kernel, trace.seed))
            config = world.config
            ticker = Ticker(
                kernel, world, look_back_minutes=2 * max(config.stall_minutes, config.gpu_idle_minutes) + 30
            )
            checks = QuotaChecks(kernel, world, Settings().quota_check_minutes)  # the stack's schedule
            settings = LifeSettings(self.person, config.stall_defaults, config.quota_wait_hours)
            lives = {
                job.name: TrainguardAnswers(
                    job, person_rng(trace.seed, job.name), world, kernel, ticker, checks, settings
                ).with_fault(trace.fault_of(job.name))
                for job in trace.jobs
            }
            world.on_guard_call = lambda call: _route(lives, call)
            for life in lives.values():
                kernel.spawn(life.process, life.job.submitted_at, acting=life.job.name)
            on_progress = self.on_progress
            kernel.run(None if on_progress is None else lambda: on_progress(kernel.now))
            judge_findings(world, lives)
            outcomes = [lives[job.name].tl.outcome() for job in trace.jobs]
            self._record(record, world, lives, outcomes)
            record.ticks, record.quota_checks = ticker.ticks, checks.checks
            record.inspected = self.inspect(world, lives) if self.inspect is not None else None
        record.seconds = time.perf_counter() - started
        self.last_run = record
        return outcomes

    def _record(
        self, record: RunRecord, world: FleetWorld, lives: dict[str, TrainguardAnswers], outcomes: list[JobOutcome]
    ) -> None:
        record.calls = Counter(world.calls)
        record.guard_log = list(world.guard_log)
        record.outcome_kinds = Counter(f"{handler}:{o.kind.value}" for _, handler, o in world.outcomes)
        record.handler_outcomes = list(world.outcomes)
        record.problems = list(world.problems)
        record.notes = {name: life.notes for name, life in lives.items() if life.notes}
        record.modelled = {name: life.modelled for name, life in lives.items() if life.modelled}
        record.repeated_refusals = sum(life.guard_actions.repeated_refusals for life in lives.values())
        record.span_hours = max((o.completed_at or o.job.submitted_at) for o in outcomes) if outcomes else 0.0
        record.guarded_instance_hours = sum(o.billed_instance_hours for o in outcomes)
        record.guarded_compute_dollars = sum(o.billed_instance_hours * o.job.price_per_instance_hour for o in outcomes)
        record.usage = world.usage.summary(record.span_hours)
        record.notifications = list(world.usage.notifications)

    def guard_cost(self) -> dict[str, Any] | None:
        """trainguard's own AWS cost in the last run (guard_cost.py), or None before a run."""
        if self.last_run is None or self.last_run.usage is None:
            return None
        return guard_cost(
            self.last_run.usage,
            guarded_instance_hours=self.last_run.guarded_instance_hours,
            guarded_compute_dollars=self.last_run.guarded_compute_dollars,
            deployment=DEPLOYMENT,
        )

    def describe(self) -> dict[str, Any]:
        """What the report says: the real code, how it was driven, and trainguard's calls."""
        described: dict[str, Any] = {
            "model": False,
            "model_of": "trainguard itself: the production handlers and adapters on the local stand-in",
            "sources": ["lambdas/trainguard (the code under test)", "local/trainguard_local/fleet/trainguard_run/"],
            "parameters": {
                **self.person.parameters(),
                "duplicate_delivery_share": self.duplicate_delivery_share,
                "delivery": "at once, in order" if self.delivery is None else repr(self.delivery),
                # a healthy silence reads idle GPUs only as a first checkpoint load (simulation/fault_table.py)
                "healthy_silence_idle_gpu": "first_load",
                "config_overrides": self.config_overrides,
                "job_tags": [
                    "trainguard:enabled=true",
                    "trainguard:restart-without-checkpoint=true",
                    *(f"{key}={value}" for key, value in self.owner_tags.items()),
                ],
            },
        }
        if self.last_run is not None:
            described["guard_calls"] = guard_calls(self.last_run)
            described["run"] = {
                "seconds": round(self.last_run.seconds, 2),
                "handler_outcomes": dict(sorted(self.last_run.outcome_kinds.items())),
                "problems": self.last_run.problems,
                "launches_refused_again": self.last_run.repeated_refusals,
                "notes": self.last_run.notes,
                "fell_back_to_a_model": self.last_run.modelled,
            }
        return described


def initial_quota_values(trace: Trace) -> dict[str, float]:
    """The account's training quota of each type the trace walls: as many instances as its smallest walled
    job has, so that its wall reads as the trace's (limit = in use = the job's count, delta = the count)."""
    values: dict[str, float] = {}
    for fault in trace.faults:
        if fault.kind is FaultKind.QUOTA_WALL:
            job = next(j for j in trace.jobs if j.name == fault.job_name)
            quota = training_quota_name(job.instance_type)
            values[quota] = min(values.get(quota, float(job.instance_count)), float(job.instance_count))
    for fault in trace.faults:  # the walled jobs' alternatives: a quota of their size (the usage decides room)
        if fault.kind is FaultKind.QUOTA_WALL:
            job = next(j for j in trace.jobs if j.name == fault.job_name)
            for kind, count in job.fallback_types:
                values.setdefault(training_quota_name(kind), float(count))
                if job.spot:  # a spot job's launch meets the type's spot quota (domain/preflight.py)
                    values.setdefault(f"{kind} for spot training job usage", float(count))
    return values


def with_leave_to_act(on_progress: Callable[[float], None] | None = None) -> TrainguardStrategy:
    """trainguard where every owner gave it leave to act on a slowdown and a divergence (issue 28)."""
    return TrainguardStrategy(name=TRAINGUARD_WITH_LEAVE, owner_tags=dict(LEAVE_TAGS), on_progress=on_progress)


def judge_findings(world: FleetWorld, lives: dict[str, TrainguardAnswers]) -> None:
    """Each notice of a finding trainguard published, right or false, in its job's timeline: right when the launch it
    names had that fault (a degraded host for a slowdown, a divergence for a divergence)."""
    for notice in world.usage.notifications:
        fault = NOTICES.get(notice.attributes.get("outcome", ""))
        name = notice.attributes.get("job_name", "")
        life = lives.get(world.roots.get(name, ""))
        if fault is None or life is None:
            continue
        kind = FindingKind.SLOWDOWN if fault is FaultKind.DEGRADED_HOST else FindingKind.DIVERGED
        life.tl.found(kind.value, right=life.wasting.get(name) is fault)


def _route(lives: dict[str, TrainguardAnswers], call: GuardCall) -> None:
    life = lives.get(call.root)
    if life is not None:
        life.take(call)


def guard_calls(record: RunRecord) -> dict[str, Any]:
    """trainguard's AWS calls by operation, made in the run, and per guarded instance-hour. The prober and
    the quota check run here only while they matter; a deployment runs them on their schedules all the
    time: `schedules` gives those cycles over the run's span (their calls per cycle are in `made`)."""
    hours = record.guarded_instance_hours or 1.0
    return {
        "made": dict(sorted(record.calls.items())),
        "total_made": sum(record.calls.values()),
        "guarded_instance_hours": round(record.guarded_instance_hours, 3),
        "made_per_guarded_instance_hour": round(sum(record.calls.values()) / hours, 4),
        "schedules": {
            "span_hours": round(record.span_hours, 3),
            "stall_prober_cycles_run": record.ticks,
            "stall_prober_cycles_deployed": round(record.span_hours * DEPLOYMENT.prober_runs_per_hour),
            "quota_checks_run": record.quota_checks,
            "quota_checks_deployed": round(record.span_hours * DEPLOYMENT.quota_checks_per_hour),
        },
    }
