"""Hand-made jobs and traces for the fleet tests: one job, at most one fault, a person with no spread."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from trainguard_local.fleet.model import JobOutcome, State
from trainguard_local.fleet.person import PersonOnCall
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.trace import Fault, JobSpec, Trace, TraceParameters

# sigma 0: every response takes exactly the median, so the expected times can be written down.
PERSON = PersonOnCall(median_response_hours=4.0, response_sigma=0.0, fix_hours=1.0)
STARTUP = 10 / 60


def job(**changes: Any) -> JobSpec:
    base = JobSpec(
        name="job-a",
        instance_type="ml.p4d.24xlarge",
        instance_count=4,
        gpus_per_instance=8,
        price_per_instance_hour=37.69,
        submitted_at=1.0,
        work_hours=10.0,
        checkpoint_every_minutes=30,
        uses_debugger_hook=True,
        spot=False,
        in_vpc=False,
        framework="pytorch-1.13",
        max_runtime_hours=24.0,
    )
    return replace(base, **changes)


def fault(spec: JobSpec, kind: FaultKind, at: float, **changes: Any) -> Fault:
    return Fault(spec.name, kind, at, spec.submitted_at + STARTUP + at, None, **changes)


def trace_of(spec: JobSpec, *faults: Fault) -> Trace:
    return Trace(seed=1, hours=72.0, parameters=TraceParameters(0.2, 0.2, 0.3, 0.35), jobs=(spec,), faults=faults)


def trace_of_many(*pairs: tuple[JobSpec, Fault]) -> Trace:
    """A trace of several jobs, each with its one fault."""
    return replace(trace_of(pairs[0][0]), jobs=tuple(spec for spec, _ in pairs), faults=tuple(f for _, f in pairs))


def hours_in(outcome: JobOutcome, state: State) -> float:
    return sum(s.hours for s in outcome.segments if s.state is state)


def four_faults() -> Trace:
    """A relaunch, a scheduled relaunch, a quota wall and a hang stopped."""
    relaunched, scheduled, walled, hung = (job(name=f"job-{n}") for n in "abcd")
    quota = "ml.p4d.24xlarge for training job usage"
    return trace_of_many(
        (relaunched, fault(relaunched, FaultKind.INTERNAL_ERROR, 2.2)),
        (scheduled, fault(scheduled, FaultKind.CAPACITY_ERROR, 0.0, repeats=1)),
        (walled, fault(walled, FaultKind.QUOTA_WALL, 2.0, quota_name=quota, quota_approval_hours=6.0)),
        (hung, fault(hung, FaultKind.HANG_IDLE_GPU, 3.0)),
    )
