"""A seeded trace: the fleet's jobs and the faults that strike them. Same seed, same trace.

Every draw comes from one `random.Random(seed)`, in a fixed order (today's SageMaker, todays_sagemaker.py,
and the log rhythms, rhythm.py, from streams of their own, so that the draws before them give the same trace as
before). Each job has at most one fault; a fault strikes when the job's progress reaches
`at_work_hours` (a capacity error strikes at launch). Every fault kind appears once before the rest are
drawn by weight, so a trace with enough faulty jobs covers them all. The numbers below are named, with
their source or marked as assumptions.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace
from functools import cached_property

from trainguard.domain.instance_types import gpus_per_host
from trainguard_local.simulation.catalogue import (
    FAILURE_TEXTS,
    INSTANCE_OFFERS,
    resource_limit_exceeded,
    training_quota_name,
)
from trainguard_local.simulation.fault_table import FAULT_TABLE, FaultKind
from trainguard_local.simulation.job_spec import STARTUP_MINUTES, Fault, JobSpec
from trainguard_local.simulation.later_faults import (
    FAULT_PROGRESS_SPAN,
    FINDING_FAULT_SHARES,
    PROGRESS_FAULT_KINDS,
    draw_finding_faults,
    draw_progress_faults,
    draw_sync_stops,
)
from trainguard_local.simulation.reporting import draw_reporting
from trainguard_local.simulation.rhythm import draw_rhythm
from trainguard_local.simulation.steps import draw_step_plan
from trainguard_local.simulation.todays_sagemaker import draw_alternatives, draw_parent_and_fallbacks

LATER_KINDS = (FaultKind.CHECKPOINT_SYNC_STOPPED, *PROGRESS_FAULT_KINDS, *FINDING_FAULT_SHARES)  # later_faults.py
DRAWN_KINDS = tuple(kind for kind in FaultKind if kind not in LATER_KINDS)
# Assumptions: there are no public failure statistics for SageMaker fleets. Meta's Llama 3 report
# (arXiv 2407.21783, table 5) put most interruptions of a large run down to GPU and host hardware,
# so hardware weighs most; the rest are even-handed guesses.
FAULT_KIND_WEIGHTS: dict[FaultKind, float] = {
    FaultKind.HANG_IDLE_GPU: 8.0,
    FaultKind.HANG_BUSY_GPU: 8.0,
    FaultKind.INTERNAL_ERROR: 10.0,
    FaultKind.CAPACITY_ERROR: 10.0,
    FaultKind.HARDWARE_FAULT: 14.0,
    FaultKind.NCCL_TIMEOUT: 10.0,
    FaultKind.SPOT_INTERRUPTION: 25.0,  # drawn only for spot jobs
    FaultKind.QUOTA_WALL: 5.0,
    FaultKind.USER_CODE_ERROR: 10.0,
    FaultKind.OUT_OF_MEMORY: 6.0,
    FaultKind.SLOW_BUT_HEALTHY: 9.0,
}
WORK_HOURS_MEDIAN, WORK_HOURS_SIGMA = 6.0, 0.9  # fault-free training time, lognormal (assumption)
MIN_WORK_HOURS, MAX_WORK_HOURS = 0.5, 48.0  # assumption
CHECKPOINT_EVERY_MINUTES = (15, 20, 30, 45, 60)  # the brief's 15-60 minutes
DEFAULT_MAX_RUNTIME_HOURS = 24.0  # MaxRuntimeInSeconds' default, 1 day (docs/aws-facts.md)
MAX_RUNTIME_HEADROOM = 1.25  # a job that needs more than a day gets MaxRuntime 25% above its need (assumption)
HOOK_FRAMEWORKS = ("pytorch-1.13", "tensorflow-2.13")  # Debugger's hook; not PyTorch >= 2.0 (docs/aws-facts.md)
OTHER_FRAMEWORKS = ("pytorch-2.3", "pytorch-2.5")
JOB_FAMILIES = ("llama-pretrain", "bert-finetune", "vit-pretrain", "gpt-finetune", "t5-distill", "resnet-sweep")
CAPACITY_REPEAT_CHANCE, CAPACITY_MAX_REPEATS = 0.5, 3  # how often, and how often at most, a relaunch is refused too
QUOTA_APPROVAL_HOURS = (2.0, 24.0)  # "hours to days" (docs/aws-facts.md); uniform (assumption)
SPOT_WAIT_HOURS = (0.5, 4.0)  # Interrupted until MaxWait passes; uniform (assumption)
NCCL_TIMEOUT_MINUTES = (10.0, 30.0)  # init_process_group's default: 10 min for NCCL, 30 in older PyTorch (torch docs)
# Slow but healthy: silences a guard with trainguard's defaults must accept (startup grace 20 min +
# stall 30 min for a first load; under 30 min later on). Ranges are assumptions.
FIRST_LOAD_SILENT_MINUTES, MID_RUN_SILENT_MINUTES = (20.0, 48.0), (10.0, 28.0)
FIRST_LOAD_SHARE = 0.5  # of slow-but-healthy jobs, those silent while they load (assumption)


@dataclass(frozen=True)
class TraceParameters:
    debugger_share: float
    spot_share: float
    vpc_share: float
    fault_share: float


@dataclass(frozen=True)
class Trace:
    seed: int
    hours: float
    parameters: TraceParameters
    jobs: tuple[JobSpec, ...]
    faults: tuple[Fault, ...] = field(default=())

    @cached_property
    def _faults_by_job(self) -> dict[str, Fault]:
        return {fault.job_name: fault for fault in self.faults}

    def fault_of(self, job_name: str) -> Fault | None:
        return self._faults_by_job.get(job_name)


def generate_trace(
    jobs: int,
    hours: float,
    seed: int,
    *,
    debugger_share: float = 0.2,
    spot_share: float = 0.2,
    vpc_share: float = 0.3,  # assumption
    fault_share: float = 0.35,  # share of jobs with one fault (assumption)
) -> Trace:
    """`jobs` jobs submitted over `hours` hours, each of which would finish within them without faults."""
    if hours <= STARTUP_MINUTES / 60 + MIN_WORK_HOURS:
        raise ValueError(f"a trace needs more than {STARTUP_MINUTES / 60 + MIN_WORK_HOURS:.2f} hours")
    rng = random.Random(seed)
    specs = tuple(_draw_job(rng, index, hours, debugger_share, spot_share, vpc_share) for index in range(jobs))
    faulty = rng.sample(range(jobs), round(fault_share * jobs))
    faults = tuple(_draw_fault(rng, specs[index], kind) for index, kind in _assign_kinds(rng, specs, faulty))
    specs, faults = _todays_sagemaker(random.Random(f"{seed}/today's SageMaker"), specs, faults)
    rhythms = random.Random(f"{seed}/rhythm")
    specs = tuple(replace(spec, rhythm=draw_rhythm(rhythms)) for spec in specs)
    faults += draw_sync_stops(random.Random(f"{seed}/checkpoint sync"), specs, {f.job_name for f in faults})
    reporting = random.Random(f"{seed}/reporting")
    specs = tuple(replace(spec, reporting=draw_reporting(reporting)) for spec in specs)
    faults += draw_progress_faults(random.Random(f"{seed}/progress faults"), specs, {f.job_name for f in faults})
    faults += draw_finding_faults(random.Random(f"{seed}/finding faults"), specs, {f.job_name for f in faults})
    steps = random.Random(f"{seed}/steps")
    specs = tuple(
        replace(
            spec,
            steps=draw_step_plan(
                steps,
                spec.rhythm.log_every_seconds,
                spec.reporting.dialect.batch,
                spec.work_hours,
                f"{seed}/{spec.name}",
            ),
        )
        for spec in specs
    )
    parameters = TraceParameters(debugger_share, spot_share, vpc_share, fault_share)
    return Trace(seed, hours, parameters, specs, tuple(sorted(faults, key=lambda f: (f.strikes_at, f.job_name))))


def _draw_job(rng: random.Random, index: int, hours: float, debugger: float, spot: float, vpc: float) -> JobSpec:
    offer = rng.choices(INSTANCE_OFFERS, weights=[o.share_of_jobs for o in INSTANCE_OFFERS])[0]
    counts, weights = zip(*offer.instance_counts, strict=True)
    count = rng.choices(counts, weights=weights)[0]
    startup_hours = STARTUP_MINUTES / 60
    longest = min(MAX_WORK_HOURS, hours - startup_hours)
    work = min(max(rng.lognormvariate(math.log(WORK_HOURS_MEDIAN), WORK_HOURS_SIGMA), MIN_WORK_HOURS), longest)
    submitted = rng.uniform(0.0, hours - startup_hours - work)
    uses_hook = rng.random() < debugger
    framework = rng.choice(HOOK_FRAMEWORKS if uses_hook else OTHER_FRAMEWORKS)
    needed = startup_hours + work
    max_runtime = DEFAULT_MAX_RUNTIME_HOURS if needed <= DEFAULT_MAX_RUNTIME_HOURS else needed * MAX_RUNTIME_HEADROOM
    return JobSpec(
        name=f"fleet-{index:04d}-{rng.choice(JOB_FAMILIES)}",
        instance_type=offer.instance_type,
        instance_count=count,
        gpus_per_instance=gpus_per_host(offer.instance_type) or 1,
        price_per_instance_hour=offer.price_per_instance_hour,
        submitted_at=round(submitted, 4),
        work_hours=round(work, 4),
        checkpoint_every_minutes=rng.choice(CHECKPOINT_EVERY_MINUTES),
        uses_debugger_hook=uses_hook,
        spot=rng.random() < spot,
        in_vpc=rng.random() < vpc,
        framework=framework,
        max_runtime_hours=round(max_runtime, 4),
    )


def _todays_sagemaker(
    rng: random.Random, specs: tuple[JobSpec, ...], faults: tuple[Fault, ...]
) -> tuple[tuple[JobSpec, ...], tuple[Fault, ...]]:
    """Each job's parent and fallback tags, then at each fault which listed alternatives have room
    (todays_sagemaker.py)."""
    drawn = {job.name: replace(job, **draw_parent_and_fallbacks(rng, job)) for job in specs}
    with_room = []
    for fault in faults:
        job = drawn[fault.job_name]
        with_room.append(replace(fault, job_name=job.name, **draw_alternatives(rng, fault.kind, job.fallback_types)))
    return tuple(drawn.values()), tuple(with_room)


def _eligible(kind: FaultKind, job: JobSpec) -> bool:
    return job.spot or kind is not FaultKind.SPOT_INTERRUPTION


def _assign_kinds(rng: random.Random, specs: tuple[JobSpec, ...], faulty: list[int]) -> list[tuple[int, FaultKind]]:
    """Each kind once first (on an eligible faulty job, or any eligible job), then by weight."""
    remaining = list(faulty)
    assigned: list[tuple[int, FaultKind]] = []
    for kind in DRAWN_KINDS:
        taken = {index for index, _ in assigned}
        pool = [i for i in remaining if _eligible(kind, specs[i])] or [
            i for i in range(len(specs)) if i not in taken and _eligible(kind, specs[i])
        ]
        if not remaining or not pool:
            continue
        index = pool[0]
        assigned.append((index, kind))
        if index in remaining:
            remaining.remove(index)
    for index in remaining:
        kinds = [kind for kind in DRAWN_KINDS if _eligible(kind, specs[index])]
        assigned.append((index, rng.choices(kinds, weights=[FAULT_KIND_WEIGHTS[k] for k in kinds])[0]))
    return assigned


def _draw_fault(rng: random.Random, job: JobSpec, kind: FaultKind) -> Fault:
    at = round(rng.uniform(*FAULT_PROGRESS_SPAN) * job.work_hours, 4)
    startup_hours = job.startup_minutes / 60
    base = Fault(job.name, kind, at, job.submitted_at + startup_hours + at, _failure_reason(rng, kind))
    if kind is FaultKind.CAPACITY_ERROR:
        repeats = rng.randint(1, CAPACITY_MAX_REPEATS) if rng.random() < CAPACITY_REPEAT_CHANCE else 0
        return replace(base, at_work_hours=0.0, strikes_at=job.submitted_at, repeats=repeats)
    if kind is FaultKind.NCCL_TIMEOUT:
        return replace(base, hung_minutes=rng.choice(NCCL_TIMEOUT_MINUTES))
    if kind is FaultKind.SPOT_INTERRUPTION:
        return replace(base, spot_wait_hours=round(rng.uniform(*SPOT_WAIT_HOURS), 4))
    if kind is FaultKind.QUOTA_WALL:
        return replace(
            base,
            quota_name=training_quota_name(job.instance_type),
            # the quota fitted this job alone, and others use it now: the relaunch needs twice as much
            launch_refusal=resource_limit_exceeded(
                job.instance_type, limit=job.instance_count, in_use=job.instance_count, delta=job.instance_count
            ),
            quota_approval_hours=round(rng.uniform(*QUOTA_APPROVAL_HOURS), 4),
        )
    if kind is FaultKind.SLOW_BUT_HEALTHY:
        first_load = rng.random() < FIRST_LOAD_SHARE
        silent = rng.uniform(*(FIRST_LOAD_SILENT_MINUTES if first_load else MID_RUN_SILENT_MINUTES))
        at = 0.0 if first_load else at
        silent = min(silent, (job.work_hours - at) * 60 * FAULT_PROGRESS_SPAN[1])  # the silence ends before the work
        strikes_at = job.submitted_at + startup_hours + at
        return replace(base, at_work_hours=at, strikes_at=strikes_at, silent_minutes=round(silent, 2))
    return base


def _failure_reason(rng: random.Random, kind: FaultKind) -> str | None:
    texts = FAULT_TABLE[kind].failure_texts
    return rng.choice(FAILURE_TEXTS[texts][1]) if texts else None
