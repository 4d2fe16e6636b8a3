"""What each fault kind does to a launch, in one table: its log lines, its GPUs, its checkpoints, how the
launch ends, the FailureReason it gives and the statuses SageMaker shows. Every harness plays a fault from
its row (activity.py says what a launch writes minute by minute), and every audit reads the truth from it
(`hung`: billed, no progress). A new fault kind is a member of `FaultKind`, its row here, and its draw in
the trace (trace.py).

GPU levels, per GPU (GPUUtilization runs from 0 to 100 x the GPUs of a host, docs/aws-facts.md):
- a kernel waiting on the GPU, as a collective waiting for a dead peer does, reads 100%, as training does
  (measured on an H200 with torch 2.11, issue 27: 100% and 99.5%); a blocked host thread reads 0%;
- a training loop reads `WORKING_PER_GPU`, 90 (an assumption: a little under a saturated loop, for the
  data loading between steps);
- a degraded host (issue 28): a slow GPU reads as busy as the others (measured on an H200: a loop slowed 2.2 times
  by a competing process read 100% at the same power); a host that waits on its own input computes 1/factor of the
  time and reads `WORKING_PER_GPU / factor` (the same measurement read 21% for a loop waiting on its data loader
  half the time: the model reads higher, so naming the host is harder here than there), while the other hosts wait
  for it in a collective and read `SPINNING_PER_GPU` (activity.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class FaultKind(StrEnum):
    HANG_IDLE_GPU = "hang_idle_gpu"
    HANG_BUSY_GPU = "hang_busy_gpu"  # an NCCL hang at 100% GPU, logs silent
    INTERNAL_ERROR = "internal_error"
    CAPACITY_ERROR = "capacity_error"
    HARDWARE_FAULT = "hardware_fault"
    NCCL_TIMEOUT = "nccl_timeout"
    SPOT_INTERRUPTION = "spot_interruption"  # and no capacity before MaxWait
    QUOTA_WALL = "quota_wall"
    USER_CODE_ERROR = "user_code_error"
    OUT_OF_MEMORY = "out_of_memory"
    SLOW_BUT_HEALTHY = "slow_but_healthy"  # must not be stopped
    # The job's checkpoints stop reaching S3 while it trains on (aws/sagemaker-python-sdk issue 3062); a hardware
    # failure strikes later. Drawn from a stream of its own (later_faults.SYNC_STOPPED_SHARE), after the kinds above.
    CHECKPOINT_SYNC_STOPPED = "checkpoint_sync_stopped"
    # Issue 27's kinds, drawn from a stream of their own (later_faults.PROGRESS_FAULT_SHARE) among the jobs without
    # another fault: a wedged loop whose background thread keeps logging (marin-community/marin#7344: "phase=training"
    # through a 33.5-minute wedge of 512 GPUs), its GPUs spinning in the collective it waits on; and a hang inside
    # an announced phase (a save that never ends: all ranks wait in the barrier after it, the writer's GPU idle, as a
    # torch.save's is, issue 27's measurement).
    LIVELOCK = "livelock"
    HANG_IN_PHASE = "hang_in_phase"
    # Issue 28's kinds, drawn from a stream of their own (later_faults.FINDING_FAULT_SHARES) among the jobs without
    # another fault: a degraded host that slows every step of its launch by a drawn factor until the launch ends (in
    # synchronous training one slow rank slows them all), and a run whose loss turns NaN from a drawn step and stays
    # so: it trains on, busy, and nothing it does after is worth keeping.
    DEGRADED_HOST = "degraded_host"
    DIVERGED = "diverged"


WORKING_PER_GPU = 90.0
SPINNING_PER_GPU = 100.0
IDLE_PER_GPU = 0.0


class Logs(StrEnum):
    GO_ON = "go on"
    SILENT = "silent until the launch ends"
    SILENT_FOR_A_WHILE = "silent for the fault's minutes, then logging again"
    HEARTBEAT = "a heartbeat line at the job's cadence, the step never advancing"


class Gpus(StrEnum):
    WORKING = "working"
    IDLE = "idle"
    SPINNING = "spinning"  # busy, no progress
    IDLE_WHILE_LOADING = "idle during a first checkpoint load, working later on"


class Ending(StrEnum):
    TRAINS_ON = "trains on"
    FAILS = "fails at once"
    FAILS_AFTER_HANG = "hangs for the fault's minutes, then fails"  # PyTorch's NCCL watchdog
    INTERRUPTED = "Interrupted until MaxWait, then Stopped"  # spot
    REFUSED_AT_LAUNCH = "fails in Starting, without instances"
    HANGS = "hangs until someone stops it or MaxRuntime does"
    SLOWS = "trains on at 1/factor of its pace until the launch ends"  # a degraded host
    DIVERGES = "trains on, its loss NaN: the work from then on is lost"


@dataclass(frozen=True)
class FaultRow:
    logs: Logs
    gpus: Gpus
    ending: Ending
    failure_texts: (
        str | None
    )  # its words' entry in catalogue.FAILURE_TEXTS: the FailureReason (spot: the status message)
    relaunch_recovers: bool  # a relaunch from the checkpoint gets the work done (what a guard should do)

    @property
    def silent(self) -> bool:
        return self.logs is not Logs.GO_ON

    @property
    def hung(self) -> bool:
        """The truth, from the strike on: billed, no progress."""
        return self.ending in (Ending.HANGS, Ending.FAILS_AFTER_HANG)

    @property
    def statuses(self) -> tuple[str, ...]:
        """TrainingJobStatus/SecondaryStatus from the strike on."""
        return _STATUSES[self.ending]

    def gpu_per_gpu(self, *, first_load: bool = False) -> float:
        """GPUUtilization per GPU while the fault holds."""
        if self.gpus is Gpus.IDLE_WHILE_LOADING:
            return IDLE_PER_GPU if first_load else WORKING_PER_GPU
        return {Gpus.WORKING: WORKING_PER_GPU, Gpus.IDLE: IDLE_PER_GPU, Gpus.SPINNING: SPINNING_PER_GPU}[self.gpus]


_TRAINING, _FAILED = "InProgress/Training", "Failed/Failed"
_STATUSES = {
    Ending.TRAINS_ON: (_TRAINING,),
    Ending.FAILS: (_FAILED,),
    Ending.FAILS_AFTER_HANG: (_TRAINING, _FAILED),
    Ending.INTERRUPTED: ("InProgress/Interrupted", "Stopped/MaxWaitTimeExceeded"),
    Ending.REFUSED_AT_LAUNCH: ("InProgress/Starting", _FAILED),
    Ending.HANGS: (_TRAINING,),
    Ending.SLOWS: (_TRAINING,),
    Ending.DIVERGES: (_TRAINING,),
}
# No checkpoint reaches S3 after a strike: a hang and a healthy silence write none, a failure ends the launch, and
# a stopped sync is the fault itself. A quota wall's job first fails on a hardware fault; its relaunch is then
# refused with ResourceLimitExceeded (trace.py).
FAULT_TABLE: dict[FaultKind, FaultRow] = {
    FaultKind.HANG_IDLE_GPU: FaultRow(Logs.SILENT, Gpus.IDLE, Ending.HANGS, None, True),
    FaultKind.HANG_BUSY_GPU: FaultRow(Logs.SILENT, Gpus.SPINNING, Ending.HANGS, None, True),
    FaultKind.NCCL_TIMEOUT: FaultRow(Logs.SILENT, Gpus.SPINNING, Ending.FAILS_AFTER_HANG, "nccl_timeout", True),
    FaultKind.INTERNAL_ERROR: FaultRow(Logs.GO_ON, Gpus.WORKING, Ending.FAILS, "internal_error", True),
    FaultKind.HARDWARE_FAULT: FaultRow(Logs.GO_ON, Gpus.WORKING, Ending.FAILS, "hardware_fault", True),
    FaultKind.CAPACITY_ERROR: FaultRow(Logs.GO_ON, Gpus.IDLE, Ending.REFUSED_AT_LAUNCH, "capacity_error", True),
    FaultKind.SPOT_INTERRUPTION: FaultRow(Logs.SILENT, Gpus.IDLE, Ending.INTERRUPTED, "spot_interruption", True),
    FaultKind.QUOTA_WALL: FaultRow(Logs.GO_ON, Gpus.WORKING, Ending.FAILS, "hardware_fault", True),
    FaultKind.USER_CODE_ERROR: FaultRow(Logs.GO_ON, Gpus.WORKING, Ending.FAILS, "user_code_error", False),
    FaultKind.OUT_OF_MEMORY: FaultRow(Logs.GO_ON, Gpus.WORKING, Ending.FAILS, "out_of_memory", False),
    FaultKind.SLOW_BUT_HEALTHY: FaultRow(
        Logs.SILENT_FOR_A_WHILE, Gpus.IDLE_WHILE_LOADING, Ending.TRAINS_ON, None, False
    ),
    FaultKind.CHECKPOINT_SYNC_STOPPED: FaultRow(Logs.GO_ON, Gpus.WORKING, Ending.TRAINS_ON, None, True),
    FaultKind.LIVELOCK: FaultRow(Logs.HEARTBEAT, Gpus.SPINNING, Ending.HANGS, None, True),
    FaultKind.HANG_IN_PHASE: FaultRow(Logs.SILENT, Gpus.IDLE, Ending.HANGS, None, True),
    # A relaunch puts a slow job on new instances (an assumption: SageMaker does not say which hosts it gives); a
    # diverged run relaunched as it was would diverge again (same data, same seed): its owner fixes it first.
    FaultKind.DEGRADED_HOST: FaultRow(Logs.GO_ON, Gpus.WORKING, Ending.SLOWS, None, True),
    FaultKind.DIVERGED: FaultRow(Logs.GO_ON, Gpus.WORKING, Ending.DIVERGES, None, False),
}

HANG_KINDS = frozenset(kind for kind, row in FAULT_TABLE.items() if row.ending is Ending.HANGS)
HUNG_KINDS = frozenset(kind for kind, row in FAULT_TABLE.items() if row.hung)  # an NCCL timeout's hang too
# The kinds that silence a launch that still holds its instances (a spot job Interrupted holds none), a livelock's
# heartbeat included: its lines say nothing of progress.
SILENT_KINDS = frozenset(
    kind for kind, row in FAULT_TABLE.items() if row.silent and row.ending is not Ending.INTERRUPTED
)
USER_ERROR_KINDS = frozenset(
    kind for kind, row in FAULT_TABLE.items() if row.ending is Ending.FAILS and not row.relaunch_recovers
)
# What the owner fixes before a relaunch: their own error, and a diverged run (it would diverge again).
FIX_FIRST_KINDS = USER_ERROR_KINDS | {FaultKind.DIVERGED}
# What a run's own step lines show while it trains on (issue 28): a finding, not a hang or a failure.
FINDING_KINDS = frozenset(kind for kind, row in FAULT_TABLE.items() if row.ending in (Ending.SLOWS, Ending.DIVERGES))
# What a guard should recover by relaunching: every fault but the user's own and the healthy job.
TRANSIENT_KINDS = frozenset(kind for kind, row in FAULT_TABLE.items() if row.relaunch_recovers)
