"""The demos' jobs, described as the trace describes one (simulation/trace.py: a JobSpec with its rhythm, a
Fault), and the words the demos say about them; stand_in/played_launch.py plays each launch. Every figure a
demo prints about a job comes from its description."""

from __future__ import annotations

from trainguard.domain.instance_prices import ON_DEMAND_PRICES
from trainguard.domain.instance_types import gpus_per_host
from trainguard_local.simulation.fault_table import FAULT_TABLE, FaultKind
from trainguard_local.simulation.rhythm import JobRhythm
from trainguard_local.simulation.trace import Fault, JobSpec

DEMO_WORK_HOURS = 10.0  # longer than any act: no demo job finishes its work while it is watched
DEMO_MAX_RUNTIME_HOURS = 120.0  # training_request's MaxRuntimeInSeconds, 432000


def demo_job(name: str, instance_type: str, hosts: int, rhythm: JobRhythm, checkpoint_every_minutes: int) -> JobSpec:
    """A job of a demo act, training from the act's start (hour 0 of its trace)."""
    price, gpus = ON_DEMAND_PRICES[instance_type].per_instance_hour, gpus_per_host(instance_type) or 1
    every, hours = checkpoint_every_minutes, DEMO_MAX_RUNTIME_HOURS
    # submitted at hour 0, no Debugger hook, on-demand, not in a VPC, PyTorch; training as soon as it is launched
    return JobSpec(name, instance_type, hosts, gpus, price, 0.0, DEMO_WORK_HOURS, every, False, False, False, "pytorch",
                   hours, startup_minutes=0.0, rhythm=rhythm)  # fmt: skip


def demo_fault(job: JobSpec, kind: FaultKind, at_minutes: float, silent_minutes: float = 0.0) -> Fault:
    """`kind` strikes `job` `at_minutes` into its training (a silent kind: for good, or `silent_minutes`)."""
    return Fault(job.name, kind, at_minutes / 60, at_minutes / 60, None, silent_minutes=silent_minutes)


def cadence(rhythm: JobRhythm) -> str:
    """How often the job logs, in words: "a line every 10 s", "a line a minute", "a line every 40 min"."""
    seconds = rhythm.log_every_seconds
    if seconds == 60:
        return "a line a minute"
    return f"a line every {seconds:g} s" if seconds < 60 else f"a line every {seconds / 60:g} min"


def gpu_words(kind: FaultKind) -> str:
    """What the fault's row says its hosts' GPUs read while it holds."""
    level = FAULT_TABLE[kind].gpu_per_gpu()
    return "GPUs idle" if level == 0 else f"GPUs at {level:g}%"
