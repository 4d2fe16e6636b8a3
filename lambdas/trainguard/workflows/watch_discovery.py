"""The stall prober's search for opted-in jobs that train unwatched (domain/watch_discovery.py): list the
InProgress jobs, read the tags of a bounded turn of those Training and unwatched, and start the watch of each one
opted in through the job-events path (workflows/stall_watch.py), which describes it again before it acts."""

from __future__ import annotations

from datetime import datetime

from trainguard.domain.outcome import Outcome
from trainguard.domain.policy import read_job_policy
from trainguard.domain.watch_discovery import STARTS_PER_CYCLE, plan_discovery
from trainguard.workflows.function_ports import StallProberPorts
from trainguard.workflows.stall_watch import follow_training_state


def watch_unwatched_jobs(ports: StallProberPorts, watched: set[str], now: datetime) -> list[Outcome]:
    """Start watching the opted-in Training jobs the ledger does not list; the outcome of each start."""
    plan = plan_discovery(ports.jobs.training_now(), watched, now)
    started: list[Outcome] = []
    for job in plan.to_check:
        if len(started) >= STARTS_PER_CYCLE:
            break
        if read_job_policy(ports.jobs.tags_of(job.arn), ports.config.policy_defaults, ports.keys).enabled:
            started.append(follow_training_state(ports, job.name))
    return started
