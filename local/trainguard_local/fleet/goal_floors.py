"""How far issue 14's three figure goals can go on a trace, whatever a guard does within the issue's own rules.

Each floor comes from the trace (and, for the first, from the `none` strategy's figures), not from trainguard's
run. So it holds for any guard that follows the same rules:
- **the owners' hangs**: trainguard never acts on a job that a pipeline or an AWS Batch queue owns. It tells the
  owner, and the person on call stops the job a response time later, as under no guard. So its hung or idle
  GPU-hours are at least the part of no guard's that belongs to those jobs.
- **the busy silence that nothing tells apart**: a healthy job of the fastest cadence class (median log gap
  under a minute) that falls silent mid-run with busy GPUs (a slow_but_healthy fault) shows the guard exactly
  what a busy hang shows: no line, busy GPUs, no new checkpoint. That lasts until its silence ends or its next
  checkpoint reaches S3, whichever comes first. (The simulator writes no checkpoint while a job is silent, so
  there it lasts the whole silence; taking the sooner keeps the floor true where a silent job does write one.) A rule with no wrong stop leaves a busy hang of such a job
  running at least that long, and an NCCL hang until its watchdog fails the job, if that is sooner. Idle-GPU
  hangs get a floor of 0 here, which is generous. The p95 over those per-hang floors is then a floor for the
  p95 of hang to stop.
- **a warning at the very minute the sync stopped**: the issue asks for a warning only, with the person acting
  a response time later (person.py). Even a warning the minute the sync stopped leaves every minute until the
  person acts or the failure strikes, whichever is sooner, plus the work since the last checkpoint that reached S3.
  It is averaged over the person's response-time distribution, by numerical integration (no random draws).
  Training makes progress at the clock's rate through its silences (rhythm.py, model.py), so work is hours.

Run it: `python -m trainguard_local.fleet.goal_floors --jobs 200 --hours 72 --seed 7` (the standard trace).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trainguard_local.fleet.model import newest_checkpoint
from trainguard_local.fleet.person import PersonOnCall
from trainguard_local.fleet.report import percentile
from trainguard_local.fleet.rhythm import CADENCE_CLASSES
from trainguard_local.fleet.trace import Fault, FaultKind, JobSpec, Trace

CHATTY = CADENCE_CLASSES[0][0]  # "under 1 min"
_INTEGRATION_STEPS = 4000


def owners_hung_share(none_figures: Mapping[str, Any]) -> float | None:
    """The share of no guard's hung or idle GPU-hours on jobs a parent owns: the least share of no guard's
    that trainguard can reach (None when no guard had none)."""
    total = float(none_figures["wasted_gpu_hours_hung_or_idle"])
    if total <= 0:
        return None
    return (total - float(none_figures["wasted_gpu_hours_hung_or_idle_not_parent_owned"])) / total


@dataclass(frozen=True)
class BusySilence:
    """A healthy chatty job's mid-run silence with busy GPUs, and how long it looks like a busy hang."""

    job_name: str
    silent_minutes: float
    minutes_to_next_checkpoint: float

    @property
    def looks_hung_minutes(self) -> float:
        return min(self.silent_minutes, self.minutes_to_next_checkpoint)


@dataclass(frozen=True)
class ChattyHangFloor:
    """The least p95 of hang to stop for the chatty hangs no parent owns, and the silence that sets it."""

    p95_minutes: float | None
    hangs: int
    longest_lookalike: BusySilence | None


def chatty_hang_floor(trace: Trace) -> ChattyHangFloor:
    jobs = {job.name: job for job in trace.jobs}
    chatty = [(f, jobs[f.job_name]) for f in trace.faults if _is_chatty_and_ours(jobs[f.job_name])]
    mid_run = [(f, job) for f, job in chatty if f.kind is FaultKind.SLOW_BUT_HEALTHY and f.at_work_hours > 0]
    lookalikes = [_busy_silence(f, job) for f, job in mid_run]
    longest = max(lookalikes, key=lambda s: s.looks_hung_minutes, default=None)
    floor = longest.looks_hung_minutes if longest is not None else 0.0
    per_hang = [_hang_floor(fault, floor) for fault, _ in chatty if fault.kind in _HANGS]
    return ChattyHangFloor(percentile(per_hang, 95), len(per_hang), longest)


_HANGS = frozenset({FaultKind.HANG_IDLE_GPU, FaultKind.HANG_BUSY_GPU, FaultKind.NCCL_TIMEOUT})


def _is_chatty_and_ours(job: JobSpec) -> bool:
    return job.rhythm.cadence_class == CHATTY and not job.owner


def _busy_silence(fault: Fault, job: JobSpec) -> BusySilence:
    every = job.checkpoint_every_minutes
    started = fault.at_work_hours * 60
    next_checkpoint = newest_checkpoint(fault.at_work_hours, every) * 60 + every
    return BusySilence(job.name, fault.silent_minutes, next_checkpoint - started)


def _hang_floor(fault: Fault, lookalike_minutes: float) -> float:
    if fault.kind is FaultKind.HANG_BUSY_GPU:
        return lookalike_minutes
    if fault.kind is FaultKind.NCCL_TIMEOUT:
        return min(fault.hung_minutes, lookalike_minutes)
    return 0.0  # idle GPUs tell a hang apart from a healthy silence


@dataclass(frozen=True)
class SyncLossFloor:
    """Work lost to checkpoint_sync_stopped, in GPU-hours: no guard's, and a warning-only guard's least."""

    none_gpu_hours: float
    warning_at_once_gpu_hours: float
    jobs: int

    @property
    def share(self) -> float | None:
        return self.warning_at_once_gpu_hours / self.none_gpu_hours if self.none_gpu_hours else None


def sync_loss_floor(trace: Trace, person: PersonOnCall | None = None) -> SyncLossFloor:
    person = person or PersonOnCall()
    jobs = {job.name: job for job in trace.jobs}
    none = at_once = 0.0
    faults = [f for f in trace.faults if f.kind is FaultKind.CHECKPOINT_SYNC_STOPPED]
    for fault in faults:
        job = jobs[fault.job_name]
        already_lost = fault.at_work_hours - newest_checkpoint(fault.at_work_hours, job.checkpoint_every_minutes)
        until_failure = fault.fails_at_work_hours - fault.at_work_hours
        none += (already_lost + until_failure) * job.gpus
        at_once += (already_lost + expected_min_with_response(until_failure, person)) * job.gpus
    return SyncLossFloor(none, at_once, len(faults))


def expected_min_with_response(hours: float, person: PersonOnCall) -> float:
    """E[min(hours, the person's response time)]: the integral of P(response > t) for t from 0 to `hours`."""
    if hours <= 0:
        return 0.0
    step = hours / _INTEGRATION_STEPS
    return sum(_response_exceeds((n + 0.5) * step, person) for n in range(_INTEGRATION_STEPS)) * step


def _response_exceeds(hours: float, person: PersonOnCall) -> float:
    """P(response > hours) for person.py's lognormal response, cut at its longest response."""
    if hours >= person.longest_response_hours:
        return 0.0
    if person.response_sigma <= 0:  # every response takes the median
        return 1.0 if hours < person.median_response_hours else 0.0
    z = (math.log(hours) - math.log(person.median_response_hours)) / person.response_sigma
    return 0.5 * math.erfc(z / math.sqrt(2))


def floors(trace: Trace, none_figures: Mapping[str, Any]) -> dict[str, Any]:
    """The three floors, JSON-serialisable."""
    chatty, sync = chatty_hang_floor(trace), sync_loss_floor(trace)
    lookalike = chatty.longest_lookalike
    return {
        "hung_or_idle_share_of_none_at_least": _round(owners_hung_share(none_figures)),
        "chatty_hang_to_stop_p95_minutes_at_least": _round(chatty.p95_minutes),
        "chatty_hangs_not_parent_owned": chatty.hangs,
        "longest_busy_lookalike": None
        if lookalike is None
        else {
            "job": lookalike.job_name,
            "silent_minutes": _round(lookalike.silent_minutes),
            "minutes_to_next_checkpoint": _round(lookalike.minutes_to_next_checkpoint),
        },
        "sync_loss_share_of_none_at_least": _round(sync.share),
        "sync_loss_gpu_hours": {
            "none": _round(sync.none_gpu_hours),
            "warning_at_once": _round(sync.warning_at_once_gpu_hours),
        },
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def main(argv: list[str] | None = None) -> int:
    from trainguard_local.fleet.anchors import no_guard
    from trainguard_local.fleet.report import run_all
    from trainguard_local.fleet.trace import generate_trace

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--hours", type=float, default=72.0)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    trace = generate_trace(args.jobs, args.hours, args.seed)
    anchor: list[Any] = [no_guard()]
    none = run_all(trace, anchor)["strategies"]["none"]
    found = floors(trace, none)
    lookalike = found["longest_busy_lookalike"] or {}
    print(f"trace: {args.jobs} jobs, {args.hours:g} h, seed {args.seed}")
    print(
        f"- hung or idle GPU-hours: at least {_percent(found['hung_or_idle_share_of_none_at_least'])} of no guard's "
        "(the jobs a parent owns; goal: at most 10%)"
    )
    print(
        f"- hang to stop, chatty jobs no parent owns: p95 at least {found['chatty_hang_to_stop_p95_minutes_at_least']} "
        f"min over {found['chatty_hangs_not_parent_owned']} hangs (goal: at most 10 min); the longest healthy "
        f"lookalike: {lookalike.get('job', 'none')}, silent {lookalike.get('silent_minutes')} min with busy GPUs, "
        f"its next checkpoint {lookalike.get('minutes_to_next_checkpoint')} min away"
    )
    print(
        f"- work lost to checkpoint_sync_stopped: at least {_percent(found['sync_loss_share_of_none_at_least'])} of "
        f"no guard's with a warning the minute the sync stops ({found['sync_loss_gpu_hours']['warning_at_once']:,.1f} "
        f"of {found['sync_loss_gpu_hours']['none']:,.1f} GPU-h; goal: at most 50%)"
    )
    return 0


def _percent(share: float | None) -> str:
    return "n/a" if share is None else f"{share:.1%}"


if __name__ == "__main__":
    raise SystemExit(main())
