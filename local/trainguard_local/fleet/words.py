"""The fleet report's identifiers in words, for the pages and pictures a person reads: each strategy's short name
and what it is, and each fault kind's name. The report's JSON keeps the identifiers; a page shows these.

What each strategy does is modelled in fleet/anchors.py (the anchors, each with its sources) and
fleet/trainguard_strategy.py (trainguard itself); the sentences here say the same in a few words.
"""

from __future__ import annotations

from typing import Any

from trainguard_local.simulation.fault_table import FaultKind

STRATEGY_NAMES: dict[str, str] = {
    "none": "no guard",
    "sagemaker_retry": "SageMaker RetryStrategy",
    "debugger_rule": "Debugger stall rule",
    "aws_batch": "AWS Batch",
    "trainguard": "trainguard",
    "trainguard_with_leave": "trainguard, with leave to act on findings",
}

STRATEGY_WORDS: dict[str, str] = {
    "none": "Nothing acts on its own. A person on call notices a failure, a stop or a hang after a response time "
    "and relaunches the job from its last checkpoint (asking for a quota increase first where a quota blocks it). "
    "A hung job is billed until that person stops it, or until MaxRuntimeInSeconds (1 day by default) does.",
    "sagemaker_retry": "SageMaker's own RetryStrategy on each job: it retries a job that fails with "
    "InternalServerError, and nothing else, up to MaximumRetryAttempts times ({maximum_retry_attempts} here). "
    "A person on call handles every other fault, as with no guard.",
    "debugger_rule": "SageMaker Debugger's StalledTrainingRule with the StopTraining action: it stops a job "
    "whose Debugger hook has saved nothing for {threshold_minutes:g} minutes, and never relaunches it. It works "
    "only on jobs with the hook (not PyTorch 2.0 and later), not in a VPC and not on spot instances. A person on "
    "call relaunches after its stop and handles everything else.",
    "aws_batch": "Every job submitted through an AWS Batch queue for SageMaker Training, what a team might pick "
    "instead of a guard today: Batch retries a launch refused for capacity until capacity comes, and retries "
    "InternalServerError by an evaluateOnExit rule ({retry_attempts} attempts). It has no stall detection and "
    "asks for no quota increase: a person on call handles the rest.",
    "trainguard": "trainguard's own code (its Lambda handlers and adapters, unmodified) on a local stand-in for "
    "AWS, on a virtual clock: it relaunches transient failures from the last checkpoint, stops hung jobs, asks "
    "for quota increases and tells a person, through SNS, what it did and what it left to them.",
    "trainguard_with_leave": "trainguard's own code as above, on jobs whose owners gave it leave to act on what their "
    "step lines show (relaunch-if-slow=true, stop-if-diverged=true): it stops and relaunches a slow job, and stops a "
    "diverged one for its owner to fix.",
}

FAULT_NAMES: dict[str, str] = {
    FaultKind.HANG_IDLE_GPU: "hang, GPUs idle",
    FaultKind.HANG_BUSY_GPU: "hang, GPUs busy",
    FaultKind.INTERNAL_ERROR: "internal error",
    FaultKind.CAPACITY_ERROR: "no capacity at launch",
    FaultKind.HARDWARE_FAULT: "hardware fault",
    FaultKind.NCCL_TIMEOUT: "NCCL timeout",
    FaultKind.SPOT_INTERRUPTION: "spot interruption",
    FaultKind.QUOTA_WALL: "quota wall",
    FaultKind.USER_CODE_ERROR: "error in the user's code",
    FaultKind.OUT_OF_MEMORY: "out of memory",
    FaultKind.SLOW_BUT_HEALTHY: "slow but healthy (no fault)",
    FaultKind.CHECKPOINT_SYNC_STOPPED: "checkpoint sync stopped",
    FaultKind.LIVELOCK: "wedged loop that keeps logging without progress",
    FaultKind.HANG_IN_PHASE: "hang in an announced phase",
    FaultKind.DEGRADED_HOST: "degraded host, every step slower",
    FaultKind.DIVERGED: "a run whose loss turned NaN",
}


def strategy_words(name: str, parameters: dict[str, Any]) -> str:
    """What a strategy is, with its parameters as the run used them (the report's `parameters`)."""
    threshold = parameters.get("threshold_seconds")
    known = {**parameters, "threshold_minutes": threshold / 60 if threshold else None}
    return STRATEGY_WORDS[name].format(**known) if name in STRATEGY_WORDS else name


def strategy_name(name: str) -> str:
    """A strategy's name in words; an unknown strategy keeps its identifier."""
    return STRATEGY_NAMES.get(name, name)


def fault_name(kind: str) -> str:
    """A fault kind in words ("none": no fault); an unknown kind keeps its identifier."""
    return "no fault" if kind == "none" else FAULT_NAMES.get(kind, kind)


ACTION_NAMES: dict[str, tuple[str, str]] = {  # an action kind: its name, one and many
    "relaunch": ("relaunch", "relaunches"),
    "stop": ("stop", "stops"),
    "quota_request": ("quota request", "quota requests"),
    "notify": ("notification", "notifications"),
}


def action_count_words(counts: dict[str, int]) -> str:
    """Counted actions in words, the most frequent first: "11 relaunches, 2 stops, 1 quota request"."""
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{n} {ACTION_NAMES.get(kind, (kind, kind))[n != 1]}" for kind, n in ordered if n)
