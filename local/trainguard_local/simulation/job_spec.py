"""A trace job and its fault, as the trace draws them (trace.py): every harness plays them, every audit reads them."""

from __future__ import annotations

from dataclasses import dataclass, field

from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.reporting import JobReporting
from trainguard_local.simulation.rhythm import JobRhythm
from trainguard_local.simulation.steps import StepPlan

STARTUP_MINUTES = 10.0  # Starting + Downloading per launch, billed (assumption)


@dataclass(frozen=True)
class JobSpec:
    name: str
    instance_type: str
    instance_count: int
    gpus_per_instance: int
    price_per_instance_hour: float
    submitted_at: float  # hours on the trace clock
    work_hours: float  # fault-free training time
    checkpoint_every_minutes: int  # of progress
    uses_debugger_hook: bool
    spot: bool
    in_vpc: bool
    framework: str
    max_runtime_hours: float
    startup_minutes: float = STARTUP_MINUTES
    owner: str = ""  # "pipelines" or "aws_batch": a parent launched it and runs its retries
    owner_retries: bool = False  # the parent's retry of internal and capacity errors is configured
    fallback_types: tuple[tuple[str, int], ...] = ()  # the alternatives its owner lists, with their counts
    launched_with_preferences: bool = False  # InstancePreferences = its own type, then the alternatives
    on_demand_after: int | None = None  # spot jobs: trainguard:on-demand-after
    rhythm: JobRhythm = field(default_factory=JobRhythm)  # how often it logs, its silent phases (rhythm.py)
    reporting: JobReporting = field(default_factory=JobReporting)  # how its lines report progress (reporting.py)
    steps: StepPlan | None = None  # how long its steps take (steps.py); None: exact, at its rhythm's cadence
    owner_tags: tuple[tuple[str, str], ...] = ()  # tags its owner adds (the demo's leave to act on a divergence)

    @property
    def step_plan(self) -> StepPlan:
        """Its steps' times, at its rhythm's cadence (a plan drawn for another cadence is refused)."""
        if self.steps is None:
            return StepPlan(self.rhythm.log_every_seconds)
        if self.steps.every_seconds != self.rhythm.log_every_seconds:
            raise ValueError(f"{self.name}: its step plan is for a step every {self.steps.every_seconds:g} s")
        return self.steps

    @property
    def gpus(self) -> int:
        return self.instance_count * self.gpus_per_instance

    @property
    def fault_free_completion_at(self) -> float:
        return self.submitted_at + self.startup_minutes / 60 + self.work_hours


@dataclass(frozen=True)
class Fault:
    job_name: str
    kind: FaultKind
    at_work_hours: float  # the progress at which it strikes; 0 for a capacity error (at launch)
    strikes_at: float  # hours on the trace clock: nothing happens to a job before its one fault
    failure_reason: str | None  # FailureReason of the failed job; None for hangs and healthy jobs
    repeats: int = 0  # capacity_error: relaunches refused the same way after the first refusal
    hung_minutes: float = 0.0  # nccl_timeout: the collective hangs this long before the watchdog fails the job
    spot_wait_hours: float = 0.0  # spot_interruption: Interrupted, unbilled, until MaxWait passes
    quota_name: str | None = None  # quota_wall: the quota that refuses the relaunch
    launch_refusal: str | None = None  # quota_wall: CreateTrainingJob's error for the relaunch
    quota_approval_hours: float = 0.0  # quota_wall: from the increase request to its approval
    silent_minutes: float = 0.0  # slow_but_healthy: no output for this long, while training goes on
    alternatives_with_capacity: tuple[str, ...] = ()  # capacity_error: listed alternatives that have capacity
    alternatives_with_quota_room: tuple[str, ...] = ()  # quota_wall: listed alternatives whose quota has room
    fails_at_work_hours: float = 0.0  # checkpoint_sync_stopped: the progress at which the hardware failure strikes
    slowdown_factor: float = 1.0  # degraded_host: the launch's steps take this many times as long
    slow_host: int | None = None  # degraded_host: the host it waits on, when its GPU shows it (None: a slow GPU)
