"""What each fault kind does to a launch, in one table: its log lines, its GPUs, its checkpoints, how the
launch ends, the FailureReason it gives and the statuses SageMaker shows. Every harness plays a fault from
its row (activity.py says what a launch writes minute by minute), and every audit reads the truth from it
(`hung`: billed, no progress). A new fault kind is a member of `FaultKind`, its row here, and its draw in
the trace (trace.py).

GPU levels, per GPU (GPUUtilization runs from 0 to 100 x the GPUs of a host, docs/aws-facts.md):
- a kernel waiting on the GPU, as a collective waiting for a dead peer does, reads 100%, as training does
  (measured on an H200 with torch 2.11, issue 27: 100% and 99.5%); a blocked host thread reads 0%;
- a training loop reads `WORKING_PER_GPU`, 90 (an assumption: a little under a saturated loop, for the
  data loading between steps).
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
    # failure strikes later. Drawn from a stream of its own (trace.SYNC_STOPPED_SHARE), after the kinds above.
    CHECKPOINT_SYNC_STOPPED = "checkpoint_sync_stopped"


WORKING_PER_GPU = 90.0
SPINNING_PER_GPU = 100.0
IDLE_PER_GPU = 0.0


class Logs(StrEnum):
    GO_ON = "go on"
    SILENT = "silent until the launch ends"
    SILENT_FOR_A_WHILE = "silent for the fault's minutes, then logging again"


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


@dataclass(frozen=True)
class FaultRow:
    logs: Logs
    gpus: Gpus
    ending: Ending
    hung: bool  # the truth: billed, no progress, from the strike
    checkpoints_reach_s3: bool  # after the strike
    failure_texts: str | None  # its FailureReason's kind in catalogue.FAILURE_TEXTS
    statuses: tuple[str, ...]  # TrainingJobStatus/SecondaryStatus from the strike on
    relaunch_recovers: bool  # a relaunch from the checkpoint gets the work done (the guard should make it)

    @property
    def silent(self) -> bool:
        return self.logs is not Logs.GO_ON

    def gpu_per_gpu(self, *, first_load: bool = False) -> float:
        """GPUUtilization per GPU while the fault holds."""
        if self.gpus is Gpus.IDLE_WHILE_LOADING:
            return IDLE_PER_GPU if first_load else WORKING_PER_GPU
        return {Gpus.WORKING: WORKING_PER_GPU, Gpus.IDLE: IDLE_PER_GPU, Gpus.SPINNING: SPINNING_PER_GPU}[self.gpus]


_TRAINING, _FAILED = "InProgress/Training", "Failed/Failed"
FAULT_TABLE: dict[FaultKind, FaultRow] = {
    FaultKind.HANG_IDLE_GPU: FaultRow(
        Logs.SILENT, Gpus.IDLE, Ending.HANGS, True, False, None, (_TRAINING,), relaunch_recovers=True
    ),
    FaultKind.HANG_BUSY_GPU: FaultRow(
        Logs.SILENT, Gpus.SPINNING, Ending.HANGS, True, False, None, (_TRAINING,), relaunch_recovers=True
    ),
    FaultKind.NCCL_TIMEOUT: FaultRow(
        Logs.SILENT, Gpus.SPINNING, Ending.FAILS_AFTER_HANG, True, False, "nccl_timeout", (_TRAINING, _FAILED), True
    ),
    FaultKind.INTERNAL_ERROR: FaultRow(
        Logs.GO_ON, Gpus.WORKING, Ending.FAILS, False, False, "internal_error", (_FAILED,), relaunch_recovers=True
    ),
    FaultKind.HARDWARE_FAULT: FaultRow(
        Logs.GO_ON, Gpus.WORKING, Ending.FAILS, False, False, "hardware_fault", (_FAILED,), relaunch_recovers=True
    ),
    FaultKind.CAPACITY_ERROR: FaultRow(
        Logs.GO_ON,
        Gpus.IDLE,
        Ending.REFUSED_AT_LAUNCH,
        False,
        False,
        "capacity_error",
        ("InProgress/Starting", _FAILED),
        relaunch_recovers=True,
    ),
    FaultKind.SPOT_INTERRUPTION: FaultRow(
        Logs.SILENT,
        Gpus.IDLE,
        Ending.INTERRUPTED,
        False,  # Interrupted: no instances, not billed
        False,
        "spot_interruption",
        ("InProgress/Interrupted", "Stopped/MaxWaitTimeExceeded"),
        relaunch_recovers=True,
    ),
    # The first failure is a hardware fault; the relaunch is refused with ResourceLimitExceeded (trace.py).
    FaultKind.QUOTA_WALL: FaultRow(
        Logs.GO_ON, Gpus.WORKING, Ending.FAILS, False, False, "hardware_fault", (_FAILED,), relaunch_recovers=True
    ),
    FaultKind.USER_CODE_ERROR: FaultRow(
        Logs.GO_ON, Gpus.WORKING, Ending.FAILS, False, False, "user_code_error", (_FAILED,), relaunch_recovers=False
    ),
    FaultKind.OUT_OF_MEMORY: FaultRow(
        Logs.GO_ON, Gpus.WORKING, Ending.FAILS, False, False, "out_of_memory", (_FAILED,), relaunch_recovers=False
    ),
    FaultKind.SLOW_BUT_HEALTHY: FaultRow(
        Logs.SILENT_FOR_A_WHILE,
        Gpus.IDLE_WHILE_LOADING,
        Ending.TRAINS_ON,
        False,
        False,  # a silent phase writes no checkpoint
        None,
        (_TRAINING,),
        relaunch_recovers=False,
    ),
    FaultKind.CHECKPOINT_SYNC_STOPPED: FaultRow(
        Logs.GO_ON, Gpus.WORKING, Ending.TRAINS_ON, False, False, None, (_TRAINING,), relaunch_recovers=True
    ),
}

HANG_KINDS = frozenset(kind for kind, row in FAULT_TABLE.items() if row.ending is Ending.HANGS)
SILENT_KINDS = frozenset(
    kind for kind, row in FAULT_TABLE.items() if row.silent and row.ending is not Ending.INTERRUPTED
)
USER_ERROR_KINDS = frozenset(
    kind for kind, row in FAULT_TABLE.items() if row.ending is Ending.FAILS and not row.relaunch_recovers
)
# What a guard should recover by relaunching: every fault but the user's own and the healthy job.
TRANSIENT_KINDS = frozenset(kind for kind, row in FAULT_TABLE.items() if row.relaunch_recovers)
