"""Where an organization-wide hub acts in another account: the names both sides agree on.

A hub (one trainguard stack, `enrolled_accounts` set) receives the training-job, CloudTrail and alarm events of
the spoke accounts and regions on its own event bus, and acts on a job in the account and region the job's ARN
names, through that spoke's role for the function that acts: `trainguard-spoke-<function>-<region>`, trusting
only the hub's role of the same function, `trainguard-hub-<function>`. A spoke's events reach the hub's bus through
its forwarding role, `trainguard-spoke-forward-to-hub-<region>`, the only principal of a spoke account the hub's bus
takes events from. The stacks (infra/stack.py,
infra/spoke_stack.py) and the functions read these names from here, so they cannot drift apart.

Only the ports whose calls land in the job's own account go through a spoke role (IN_JOB_ACCOUNT_PORTS); the
ledger, the topic and the retry schedules are the hub's own.
"""

from __future__ import annotations

HUB_EVENT_BUS_NAME = "trainguard-hub"
# The ports (trainguard.workflows.function_ports) whose adapters call the job's account and region: SageMaker,
# Service Quotas, the checkpoint buckets, the per-job alarms and metrics, the training logs.
IN_JOB_ACCOUNT_PORTS = frozenset({"jobs", "quotas", "checkpoints", "alarms", "job_logs", "gpu_metrics"})
HANDLER_PREFIX, HANDLER_SUFFIX = "trainguard.handlers.", ".handler"
# The spoke's forwarding role (EventBridge puts the spoke's events on the hub's bus with it): not a function's key.
FORWARDING_KEY = "forward-to-hub"


def function_key(handler: str) -> str:
    """A function's short name from its handler: "trainguard.handlers.job_events.handler" -> "job-events"."""
    if not (handler.startswith(HANDLER_PREFIX) and handler.endswith(HANDLER_SUFFIX)):
        raise ValueError(f"not a trainguard handler: {handler!r}")
    return handler[len(HANDLER_PREFIX) : -len(HANDLER_SUFFIX)].replace("_", "-")


def hub_role_name(key: str) -> str:
    """The hub's role of one function; a spoke role trusts exactly this name in the hub's account."""
    return f"trainguard-hub-{key}"


def spoke_role_name(key: str, region: str) -> str:
    """The spoke's role for one function in one region (IAM names are account-wide: a spoke per region has its own)."""
    return f"trainguard-spoke-{key}-{region}"


def spoke_role_arn(account: str, region: str, key: str, partition: str = "aws") -> str:
    return f"arn:{partition}:iam::{account}:role/{spoke_role_name(key, region)}"


def forwarding_role_name(region: str) -> str:
    """The role a spoke's forwarding rules put events on the hub's bus with, in one region."""
    return spoke_role_name(FORWARDING_KEY, region)


def hub_event_bus_arn(account: str, region: str, partition: str = "aws") -> str:
    return f"arn:{partition}:events:{region}:{account}:event-bus/{HUB_EVENT_BUS_NAME}"
