"""Before a deferred launch acts: is it still wanted? One re-check for every launch made later than its decision.

The launches made later than their decision: the quota watch's waiting launches, and the scheduled relaunch
(a capacity backoff).

Between the decision and the launch, minutes or days pass, and any kill switch may have been thrown: the
deployer's global `dry_run` (the setting, as this function has it now), the job's opt-in tag, its `dry-run` tag or
its `actions` tag (domain/policy.py). The launch is made only when all of them still allow it; otherwise the
caller gives it up, says why, and launches nothing.

What is read again depends on what exists. A relaunch acts for a failed job: that job is described again and its
tags read as they are now (its owner can still tag an ended job). A user's launch that a quota refused has no job
(its CreateTrainingJob failed): the tags read are those of the stored request, the very request that would be
sent; they cannot change while it waits, so for it the global `dry_run` is the switch that can still stop it.
A launch made in the invocation that decided it (a fallback while a quota is short) is not deferred: the job
was described moments before.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Protocol

from trainguard.config import GuardConfig
from trainguard.domain.policy import TagKeys, read_job_policy, why_not_launch_now
from trainguard.workflows.ports import JobReader, fresh

# The actions a deferred launch needs, by what it is (domain/policy.py KNOWN_ACTIONS): a relaunch needs `retry`;
# one that waited for a quota also needed `quota` to wait, and still does to launch.
RELAUNCH = ("retry",)
WAITING_RELAUNCH = ("retry", "quota")
WAITING_USER_LAUNCH = ("quota",)


class Rechecking(Protocol):
    @property
    def jobs(self) -> JobReader: ...

    @property
    def config(self) -> GuardConfig: ...

    @property
    def keys(self) -> TagKeys: ...


def why_not_relaunch(ports: Rechecking, failed_job: str, actions: Collection[str]) -> str:
    """Why the relaunch of `failed_job` is no longer wanted, after describing the job again ("" when it is)."""
    job = fresh(ports.jobs.describe(failed_job))
    if job is None:
        return f"{failed_job} no longer exists (DescribeTrainingJob: not found)"
    return why_not_launch(ports, job.tags, actions)


def why_not_launch(ports: Rechecking, tags: Mapping[str, str], actions: Collection[str]) -> str:
    """Why a launch for a job with these tags (read just now) is no longer wanted ("" when it is)."""
    policy = read_job_policy(tags, ports.config.policy_defaults, ports.keys)
    return why_not_launch_now(policy, ports.keys, actions, global_dry_run=ports.config.dry_run)
