"""The report: every strategy on the same trace, in the same figures. JSON-serialisable.

The figures, defined once (docs/local-tools.md copies these definitions):

- **wasted GPU-hours**: GPU-hours billed that produced no kept progress, that is
  (hung or idle time + the share of a slowed launch's time it made no progress in + the work lost since the last
  checkpoint at each failure or stop, a diverged run's work since its divergence included)
  x instances x GPUs per instance, summed over jobs. `wasted_dollars` is the same hours x instances
  x the on-demand price per instance-hour, split as the hours are (`wasted_dollars_hung_or_idle`,
  `wasted_dollars_lost_since_checkpoint`). The startup of a relaunch is billed too but is not counted
  here; `billed_gpu_hours` holds every billed hour.
- **completion delay**: the extra wall-clock hours until a job's work is done, compared with a
  fault-free run (submission + one startup + the work). p50 and p95 over all jobs (0 for a job
  without a fault), and the total. A job whose work is never done is left out and counted in
  `jobs_never_completed`.
- `completion_delay_hours_not_own_code`: the total completion delay of the jobs that did not fail in their
  own code (every job but those with a user_code_error or out_of_memory fault, which wait for a person's
  fix under every strategy). `completion_delay_hours_of_parents_jobs`: the part of the total of the jobs a
  parent (a pipeline, a Batch queue) owns, which a guard must leave to the parent.
- `jobs_completed`: jobs whose work is done by the end of the trace's window (every job would be,
  fault-free).
- `detect_minutes`: per fault kind, from the moment the fault shows (the job fails or stops, a hang
  starts, a launch is refused) to its first detection, by anyone (a person included). p50 and p95.
  A healthy job's silence is not a fault: a "detection" of it shows up as a wrong stop instead.
- `detect_minutes_by_cadence`: the hangs' (idle GPU, busy GPU, NCCL) `detect_minutes` by the job's cadence
  class (its own median log gap, rhythm.py's CADENCE_CLASSES; the bounds in `definitions`), p50, p95 and
  the number of hangs; `not_parent_owned`, the same without the jobs a parent owns (a guard must leave
  those to their parent: a person stops them).
- `wasted_gpu_hours_hung_or_idle_not_parent_owned`: the hung or idle part of wasted GPU-hours, without the
  jobs a parent owns.
- `wasted_gpu_hours_lost_since_checkpoint_by_fault`: the work lost since the last checkpoint, in GPU-hours,
  by the kind of each job's fault (`none`: jobs without one). `wasted_gpu_hours_by_fault`: all of the wasted
  GPU-hours, by the same kinds (report_findings.py), and `wasted_gpu_hours_by_fault_of_reporting_jobs` the same
  for the jobs that report their progress (the rules for a slowdown and a divergence read their lines only).
- `findings_found`: per finding kind, on the jobs that report progress (a slowdown of 1.5 times or more), how many
  trainguard found, and its minutes to the finding (p50, p95 of those found), with the jobs missed.
- `findings_audit` (top level): the slowdown and divergence rules on every reporting job's healthy lines, judged after
  every line (report_findings.py).
- `false_findings`: a guard's notices of a slowdown or a divergence on a launch without that fault, by kind.
- `recover_minutes`: from the moment a transient fault shows (every kind except the user's own
  errors and the healthy job) to the moment training runs again. p50 and p95.
- `actions_by_actor`: per actor (trainguard, the person on call, SageMaker, a parent), the actions it took
  (succeeded) and those refused (a relaunch refused for capacity or quota), by kind.
- `duplicate_actions`: per job (its lineage), actions that succeeded on a target already acted on the
  same way (a second stop of one launch, a second relaunch of one failure, a second request for one
  quota).
- `wrong_actions`: a stop of a healthy job, or a relaunch of a user's error (code, memory) unfixed.
- `detect_minutes_by_reporting`, `wrong_actions_by_reporting`: the hangs' detection and the wrong actions by how
  each job reports its progress (report_by_reporting.py).
- `guard_cost` (top level, when trainguard ran): trainguard's own AWS cost at list prices, by item, in
  all, per guarded instance-hour and as a share of the guarded compute's dollars (guard_cost.py).

Percentiles are nearest-rank: the smallest value with at least q% of the values at or below it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from trainguard_local.fleet.anchor_rules import StalledTrainingRule
from trainguard_local.fleet.model import TRAINGUARD, JobOutcome, Strategy
from trainguard_local.fleet.percentiles import p50_p95, rounded
from trainguard_local.fleet.report_by_reporting import detect_minutes_by_reporting, wrong_actions_by_reporting
from trainguard_local.fleet.report_findings import finding_figures, findings_audit
from trainguard_local.simulation.fault_table import HUNG_KINDS, TRANSIENT_KINDS, USER_ERROR_KINDS, FaultKind
from trainguard_local.simulation.rhythm import CADENCE_CLASSES
from trainguard_local.simulation.trace import Fault, Trace


@runtime_checkable
class Described(Protocol):
    """A strategy that can say what it is a model of, and from which sources."""

    def describe(self) -> dict[str, Any]: ...


@runtime_checkable
class Costed(Protocol):
    """A strategy whose own AWS cost was counted (trainguard's)."""

    def guard_cost(self) -> dict[str, Any] | None: ...


def run_all(
    trace: Trace, strategies: Sequence[Strategy], on_strategy: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Run every strategy on the trace and build the report; `on_strategy(name)` is told as each one starts."""
    outcomes = {}
    for strategy in strategies:
        if on_strategy is not None:
            on_strategy(strategy.name)
        outcomes[strategy.name] = strategy.run(trace)
    return build_report(trace, strategies, outcomes)


def build_report(
    trace: Trace, strategies: Sequence[Strategy], outcomes: Mapping[str, Sequence[JobOutcome]]
) -> dict[str, Any]:
    report: dict[str, Any] = {
        "trace": trace_summary(trace),
        "strategies": {
            s.name: {**(s.describe() if isinstance(s, Described) else {}), **strategy_figures(trace, outcomes[s.name])}
            for s in strategies
        },
        "faults": [fault_record(fault) for fault in trace.faults],
        "findings_audit": findings_audit(trace),
    }
    costs = [cost for s in strategies if isinstance(s, Costed) and (cost := s.guard_cost()) is not None]
    if costs:
        report["guard_cost"] = costs[0]
    return report


def delay_by_fault(trace: Trace, outcomes: Sequence[JobOutcome]) -> dict[str, float]:
    """Total completion delay per kind of the job's fault ("none" for a job without one); sums to the total."""
    fault_of = {fault.job_name: fault.kind.value for fault in trace.faults}
    totals: dict[str, float] = {}
    for outcome in outcomes:
        if (delay := outcome.completion_delay_hours) is not None:
            kind = fault_of.get(outcome.job.name, "none")
            totals[kind] = totals.get(kind, 0.0) + delay
    return {kind: round(hours, 3) for kind, hours in sorted(totals.items())}


def strategy_figures(trace: Trace, outcomes: Sequence[JobOutcome]) -> dict[str, Any]:
    rule = StalledTrainingRule()
    delays = [d for d in (o.completion_delay_hours for o in outcomes) if d is not None]
    return {
        "wasted_gpu_hours": rounded(sum(o.wasted_gpu_hours for o in outcomes)),
        "wasted_dollars": rounded(sum(o.wasted_dollars for o in outcomes)),
        "wasted_dollars_hung_or_idle": rounded(sum(o.hung_hours * _dollars_per_hour(o) for o in outcomes)),
        "wasted_dollars_lost_since_checkpoint": rounded(
            sum(o.lost_work_hours * _dollars_per_hour(o) for o in outcomes)
        ),
        # The parts of wasted_gpu_hours: billed time that made no progress, work lost since the last checkpoint, and
        # the share of a slowed launch's time it made no progress in.
        "wasted_gpu_hours_hung_or_idle": rounded(sum(o.hung_hours * o.job.gpus for o in outcomes)),
        "wasted_gpu_hours_lost_since_checkpoint": rounded(sum(o.lost_work_hours * o.job.gpus for o in outcomes)),
        "wasted_gpu_hours_slowed": rounded(sum(o.slowed_hours * o.job.gpus for o in outcomes)),
        "wasted_gpu_hours_hung_or_idle_not_parent_owned": rounded(
            sum(o.hung_hours * o.job.gpus for o in outcomes if not o.job.owner)
        ),
        "wasted_gpu_hours_where_debugger_rule_applies": rounded(
            sum(o.wasted_gpu_hours for o in outcomes if rule.can_stop(o.job))
        ),
        "billed_gpu_hours": rounded(sum(o.billed_instance_hours * o.job.gpus_per_instance for o in outcomes)),
        "completion_delay_hours": {**p50_p95(delays), "total": rounded(sum(delays))},
        "completion_delay_hours_by_fault": delay_by_fault(trace, outcomes),
        "completion_delay_hours_of_parents_jobs": rounded(
            sum(o.completion_delay_hours or 0.0 for o in outcomes if o.job.owner)
        ),
        "completion_delay_hours_not_own_code": rounded(
            sum(hours for kind, hours in delay_by_fault(trace, outcomes).items() if kind not in _OWN_CODE)
        ),
        "jobs_completed": sum(1 for o in outcomes if o.completed_at is not None and o.completed_at <= trace.hours),
        "jobs_never_completed": sum(1 for o in outcomes if o.completed_at is None),
        "detect_minutes": detect_minutes(outcomes),
        "detect_minutes_by_cadence": detect_minutes_by_cadence(outcomes),
        "wasted_gpu_hours_lost_since_checkpoint_by_fault": lost_since_checkpoint_by_fault(trace, outcomes),
        **finding_figures(trace, outcomes, TRAINGUARD),
        "recover_minutes": p50_p95(
            r.minutes for o in outcomes for r in o.recoveries if r.fault_kind in TRANSIENT_KINDS
        ),
        "actions": dict(sorted(Counter(a.kind.value for o in outcomes for a in o.actions if a.succeeded).items())),
        "actions_by_actor": actions_by_actor(outcomes),
        "duplicate_actions": duplicate_actions(outcomes),
        "wrong_actions": sum(1 for o in outcomes for a in o.actions if not a.right),
        "detect_minutes_by_reporting": detect_minutes_by_reporting(outcomes),
        "wrong_actions_by_reporting": wrong_actions_by_reporting(outcomes),
    }


_OWN_CODE = frozenset(kind.value for kind in USER_ERROR_KINDS)


def detect_minutes(outcomes: Iterable[JobOutcome]) -> dict[str, dict[str, float | int | None]]:
    """Per fault kind: p50 and p95 of each fault's first detection, and how many faults were detected."""
    by_kind: dict[FaultKind, list[float]] = {}
    for outcome in outcomes:
        first: dict[FaultKind, float] = {}
        for detection in sorted(outcome.detections, key=lambda d: (d.struck_at, d.at)):
            if detection.fault_kind is not FaultKind.SLOW_BUT_HEALTHY:
                first.setdefault(detection.fault_kind, detection.minutes)
        for kind, minutes in first.items():
            by_kind.setdefault(kind, []).append(minutes)
    return {
        kind.value: {**p50_p95(by_kind[kind]), "count": len(by_kind[kind])} for kind in FaultKind if kind in by_kind
    }


HANG_DETECTIONS = HUNG_KINDS


def detect_minutes_by_cadence(outcomes: Iterable[JobOutcome]) -> dict[str, dict[str, Any]]:
    """The hangs' first detection, by the cadence class of the job's log rhythm (see the module's docstring)."""
    found: dict[str, list[tuple[float, bool]]] = {name: [] for name, _, _ in CADENCE_CLASSES}
    for outcome in outcomes:
        hangs = [d for d in outcome.detections if d.fault_kind in HANG_DETECTIONS]
        if hangs:
            first = min(hangs, key=lambda d: (d.struck_at, d.at))
            found[outcome.job.rhythm.cadence_class].append((first.minutes, bool(outcome.job.owner)))
    return {
        name: {
            **p50_p95(m for m, _ in values),
            "hangs": len(values),
            "not_parent_owned": {
                **p50_p95(m for m, owned in values if not owned),
                "hangs": sum(1 for _, owned in values if not owned),
            },
        }
        for name, values in found.items()
    }


def lost_since_checkpoint_by_fault(trace: Trace, outcomes: Iterable[JobOutcome]) -> dict[str, float | None]:
    totals: dict[str, float] = {}
    for outcome in outcomes:
        fault = trace.fault_of(outcome.job.name)
        kind = fault.kind.value if fault else "none"
        totals[kind] = totals.get(kind, 0.0) + outcome.lost_work_hours * outcome.job.gpus
    return {kind: rounded(hours) for kind, hours in sorted(totals.items())}


def _dollars_per_hour(outcome: JobOutcome) -> float:
    return outcome.job.instance_count * outcome.job.price_per_instance_hour


def actions_by_actor(outcomes: Iterable[JobOutcome]) -> dict[str, dict[str, dict[str, int]]]:
    """Per actor: its actions that succeeded ("taken") and those refused, each counted by kind."""
    counted: dict[str, dict[str, Counter[str]]] = {}
    for action in (a for o in outcomes for a in o.actions):
        mine = counted.setdefault(action.actor, {"taken": Counter(), "refused": Counter()})
        mine["taken" if action.succeeded else "refused"][action.kind.value] += 1
    return {actor: {k: dict(sorted(c.items())) for k, c in mine.items()} for actor, mine in sorted(counted.items())}


def duplicate_actions(outcomes: Iterable[JobOutcome]) -> int:
    """Per job (its lineage): successful actions of a kind on a target already acted on that way."""
    total = 0
    for outcome in outcomes:
        seen = Counter((action.kind.value, action.target) for action in outcome.actions if action.succeeded)
        total += sum(count - 1 for count in seen.values())
    return total


def trace_summary(trace: Trace) -> dict[str, Any]:
    rule = StalledTrainingRule()
    return {
        "seed": trace.seed,
        "jobs": len(trace.jobs),
        "hours": trace.hours,
        "gpus": sum(job.gpus for job in trace.jobs),
        "debugger_share": trace.parameters.debugger_share,
        "spot_share": trace.parameters.spot_share,
        "vpc_share": trace.parameters.vpc_share,
        "fault_share": trace.parameters.fault_share,
        "jobs_with_debugger_hook": sum(1 for job in trace.jobs if job.uses_debugger_hook),
        "jobs_where_debugger_rule_applies": sum(1 for job in trace.jobs if rule.can_stop(job)),
        "faults_by_kind": {kind.value: sum(1 for f in trace.faults if f.kind is kind) for kind in FaultKind},
    }


def fault_record(fault: Fault) -> dict[str, Any]:
    record: dict[str, Any] = {
        "job": fault.job_name,
        "kind": fault.kind.value,
        "at_work_hours": fault.at_work_hours,
        "strikes_at_hours": rounded(fault.strikes_at),
        "failure_reason": fault.failure_reason,
    }
    extras = {
        "repeats": fault.repeats,
        "hung_minutes": fault.hung_minutes,
        "spot_wait_hours": fault.spot_wait_hours,
        "quota_name": fault.quota_name,
        "quota_approval_hours": fault.quota_approval_hours,
        "silent_minutes": fault.silent_minutes,
        "slowdown_factor": fault.slowdown_factor if fault.slowdown_factor != 1.0 else None,
        "slow_host": fault.slow_host,
    }
    return record | {key: value for key, value in extras.items() if value}
