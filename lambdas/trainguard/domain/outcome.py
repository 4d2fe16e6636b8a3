"""What a handler did with one event: the record written to the ledger and returned to Lambda."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from trainguard.domain.model import Category, Decision


class OutcomeKind(StrEnum):
    RELAUNCHED = "relaunched"
    RELAUNCH_SCHEDULED = "relaunch-scheduled"
    QUOTA_WALL = "quota-wall"  # a quota blocks the launch: an increase is requested, the launch waits
    NOT_RELAUNCHED = "not-relaunched"  # a retry was called for, but a limit or a check said no
    NOTIFIED = "notified"  # the failure is not one a relaunch fixes: a person is told
    WATCHING = "watching"  # the job is watched for stalls (its alarms exist while it trains)
    PARTLY_WATCHED = "partly-watched"  # watched on log silence, but its GPUs cannot be: told once
    WATCHED_WITH_DEFAULTS = "watched-with-defaults"  # stall or progress tags it could not read: told once
    STALL_STOPPED = "stall-stopped"  # a verified stall: the job was stopped; its end relaunches it
    STALL_FOUND = "stall-found"  # a verified stall in a dry-run job: told, not stopped
    STUCK_STOPPING = "stuck-stopping"  # a stop that has not finished in 30 minutes: told
    CHECKPOINT_STALE = "checkpoint-stale"  # checkpoints stopped reaching S3 while the job trains: told
    SLOWDOWN_FOUND = "slowdown-found"  # the job's steps take longer than its baseline: told
    DIVERGENCE_FOUND = "divergence-found"  # the job's loss is NaN, infinite or jumped: told
    SLOWDOWN_STOPPED = "slowdown-stopped"  # with the owner's leave: stopped, its end relaunches it
    DIVERGENCE_STOPPED = "divergence-stopped"  # with the owner's leave: stopped, never relaunched
    SKIPPED = "skipped"  # not ours, or nothing to do: logged and counted, nobody is told
    ALREADY_HANDLED = "already-handled"  # a duplicate or late delivery of an event already acted on


@dataclass(frozen=True)
class Outcome:
    kind: OutcomeKind
    job_name: str
    reason: str
    decision: Decision | None = None
    category: Category | None = None
    new_job_name: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def notifies(self) -> bool:
        return self.kind in (
            OutcomeKind.RELAUNCHED,
            OutcomeKind.RELAUNCH_SCHEDULED,
            OutcomeKind.QUOTA_WALL,
            OutcomeKind.NOT_RELAUNCHED,
            OutcomeKind.NOTIFIED,
            OutcomeKind.STALL_STOPPED,
            OutcomeKind.STALL_FOUND,
            OutcomeKind.STUCK_STOPPING,
            OutcomeKind.CHECKPOINT_STALE,
            OutcomeKind.SLOWDOWN_FOUND,
            OutcomeKind.DIVERGENCE_FOUND,
            OutcomeKind.SLOWDOWN_STOPPED,
            OutcomeKind.DIVERGENCE_STOPPED,
            OutcomeKind.PARTLY_WATCHED,
            OutcomeKind.WATCHED_WITH_DEFAULTS,
        )

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["kind"] = self.kind.value
        return data


def skipped(job_name: str, reason: str) -> Outcome:
    return Outcome(OutcomeKind.SKIPPED, job_name, reason)
