"""A degraded host or a diverged run under trainguard (issue 28): the launch trains on, slower or with a NaN loss, in a
finding window. Each minute of it the job's lines reach the guard, its hosts' GPUUtilization is written, and the
prober judges its pace and its loss (workflows/findings.py): what trainguard does is what the prober does, a notice
or, with the owner's leave, a stop. A window that ends with neither leaves the job as no guard would (fleet/life.py).

The person, told, acts a response time after the notice (drawn at the strike, as in the anchors): stops a slow job
and relaunches it from its newest checkpoint, on new instances; stops a diverged one, fixes it and relaunches it from
the newest checkpoint written before it diverged. Untold, they notice a divergence a response time after it, and
never a slowdown (anchor_life.py).
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from trainguard.domain.message_kinds import MessageKind
from trainguard.domain.progress_settings import ProgressSettings
from trainguard.domain.step_pace import BASELINE_INTERVALS, RECENT_INTERVALS, WARMUP_INTERVALS
from trainguard_local.fleet.model import TRAINGUARD, State
from trainguard_local.fleet.trainguard_run.endings import after_end, person_relaunches, person_stops
from trainguard_local.fleet.trainguard_run.life_state import LifeState
from trainguard_local.fleet.trainguard_run.schedules import StallWindow, StopNews, minute_index
from trainguard_local.simulation.activity import SECOND
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.kernel import Park, Sleep
from trainguard_local.simulation.reporting import LineKind
from trainguard_local.simulation.trace import Fault

MARGIN_MINUTES = 15  # past the latest moment the rules could find it
# The notices of a finding, by the fault that is right for them (finding_messages.py).
NOTICES = {
    MessageKind.SLOWDOWN_FOUND.value: FaultKind.DEGRADED_HOST,
    MessageKind.SLOWDOWN_STOPPED.value: FaultKind.DEGRADED_HOST,
    MessageKind.DIVERGENCE_FOUND.value: FaultKind.DIVERGED,
    MessageKind.DIVERGENCE_STOPPED.value: FaultKind.DIVERGED,
}
Steps = Generator[Sleep | Park, Any, bool]


@dataclass(frozen=True)
class FoundNews:
    """trainguard told of a finding on the job, without stopping it."""

    notice: str


def watch_finding(life: LifeState, fault: Fault) -> Steps:
    """The fault strikes the running launch; True when the launch ended (stopped by trainguard or the person)."""
    tl = life.tl
    struck = tl.now
    life.logs.deliver_until(struck)  # the lines before it: the pace and the loss as they were
    life.write_checkpoint()  # the newest before it, in S3 (a notice of a divergence names it)
    life.logs.activity.strike(fault.kind, struck, factor=fault.slowdown_factor, slow_host=fault.slow_host)
    life.wasting[life.name] = fault.kind
    response = life.settings.person.response_hours(life.rng)
    window = _open_window(life, fault)
    shown = _shown_at(life, fault, struck)
    news = yield Park(min(window.closes_at, _launch_end(life)))
    life.ticker.close(window.job_name)
    tl.train_for(life.kernel.now - tl.now)
    if isinstance(news, StopNews):
        tl.detect(fault.kind, shown, TRAINGUARD)
        yield from _stopped_by_trainguard(life, fault, struck, news, response)
        return True
    if isinstance(news, FoundNews):
        tl.detect(fault.kind, shown, TRAINGUARD)
        return (yield from _left_to_the_person(life, fault, struck, life.kernel.now + response, told=True))
    if fault.kind is FaultKind.DIVERGED:
        return (yield from _left_to_the_person(life, fault, struck, struck + response, told=False))
    return False  # nobody notices a slowdown: the launch trains on, slower, to its end


def window_minutes(life: LifeState, fault: Fault) -> float:
    """How long the rules may take at most to find the fault, from its strike: a slowdown its newest intervals at
    the slowed pace twice over (a silent phase may fall among them) and the slowdown minutes; a divergence its
    reports in a row twice over; a first baseline still to learn, and the margin."""
    settings, plan, rhythm = ProgressSettings(), life.job.step_plan, life.job.rhythm
    interval = plan.every_seconds * max(plan.batch_change_ratio, 1.0) / 60 * fault.slowdown_factor
    phase = rhythm.checkpoint_write_minutes + rhythm.eval_minutes
    learning = (WARMUP_INTERVALS + BASELINE_INTERVALS) * interval
    if fault.kind is FaultKind.DEGRADED_HOST:
        finding = 2 * (RECENT_INTERVALS + 1) * interval + settings.slowdown_minutes
    else:
        finding = 2 * (settings.divergence_reports + 1) * interval
    return learning + finding + phase + MARGIN_MINUTES


def _shown_at(life: LifeState, fault: Fault, struck: float) -> float:
    """When the fault shows in the job's lines, what the minutes to trainguard's finding count from: a divergence at
    its first step line from the strike (its loss NaN: the issue's "first NaN line"), a slowdown at its strike."""
    if fault.kind is not FaultKind.DIVERGED:
        return struck
    ahead = struck + window_minutes(life, fault) / 60
    lines = life.logs.activity.lines(struck - SECOND, ahead)
    return next((at for at, token in lines if token.kind is LineKind.STEP and at >= struck), struck)


def _open_window(life: LifeState, fault: Fault) -> StallWindow:
    world, clock, name = life.world, life.world.clock, life.name
    opened = clock.now
    last = minute_index(world, opened + timedelta(minutes=window_minutes(life, fault)))
    seen = len(world.usage.notifications)

    def probe_news() -> object | None:
        nonlocal seen
        status = world.plane.describe(name)["TrainingJobStatus"]
        if status in ("Stopping", "Stopped"):
            if status == "Stopping":
                world.plane.settle(name)  # the stop takes effect within the minute
            world.pump()
            return StopNews()
        published, seen = world.usage.notifications[seen:], len(world.usage.notifications)
        for notice in published:
            if notice.attributes.get("job_name") == name and notice.attributes.get("outcome") in NOTICES:
                return FoundNews(notice.attributes["outcome"])
        return None

    window = StallWindow(
        job_name=name,
        last_tick=last,
        life=life.process,
        evaluator=None,  # its alarms are judged in the stall windows; a finding comes from the prober
        deliver=lambda moment: life.logs.deliver_until(clock.hours_of(moment)),
        probe_news=probe_news,
    )
    life.logs.write_gpus(minute_index(world, opened), last)
    life.ticker.open(window)
    return window


def _launch_end(life: LifeState) -> float:
    """When the launch's work or its MaxRuntime runs out, whichever first (kernel hours)."""
    tl = life.tl
    return tl.now + min(tl.hours_to(life.job.work_hours), max(tl.runtime_left, 0.0))


def _stopped_by_trainguard(life: LifeState, fault: Fault, struck: float, news: StopNews, response: float) -> Steps:
    """trainguard stopped the job with the owner's leave: a slow one is relaunched by trainguard (its end, job_end.py),
    a diverged one is left to the person, who fixes it and relaunches it a response time after the notice."""
    tl, diverged = life.tl, fault.kind is FaultKind.DIVERGED
    life.end_kind[life.name] = fault.kind
    life.flush_guard_calls()
    kept_before = fault.at_work_hours if diverged else math.inf
    life.write_checkpoint(no_checkpoint_after=kept_before)
    tl.lose_work_since_checkpoint(no_checkpoint_after=kept_before)
    outcome = life.answer_to_end()
    if not diverged:
        yield from after_end(life, outcome, None, struck, State.STOPPED)
        return True
    life.flush_guard_calls()
    if outcome is not None and outcome.new_job_name:  # a relaunch of a diverged run: counted wrong (guard_actions.py)
        life.next_name = outcome.new_job_name
        return True
    yield from person_relaunches(life, None, life.kernel.now, struck_at=struck, fix=True, response=response)
    return True


def _left_to_the_person(life: LifeState, fault: Fault, struck: float, noticed: float, *, told: bool) -> Steps:
    """The person acts at `noticed`, if the launch is still running then: stops a slow job and relaunches it, stops
    a diverged one, fixes it and relaunches it. A diverged run whose work or MaxRuntime runs out first has ended
    by itself, worthless: the person fixes and relaunches it all the same."""
    tl, world, diverged = life.tl, life.world, fault.kind is FaultKind.DIVERGED
    end = _launch_end(life)
    if not diverged and noticed >= end:
        return False  # the slow launch ends first: its life goes on as without a notice
    yield Sleep(min(noticed, end))
    tl.train_for(life.kernel.now - tl.now)
    if noticed < end:
        person_stops(life, note="its loss is NaN" if diverged else "told of a slowdown")
    elif tl.progress >= life.job.work_hours - 1e-9:
        life.drive(world.plane.complete)  # its work is done, on a NaN loss
    else:
        life.drive(world.plane.exceed_max_runtime)
    life.flush_guard_calls()
    kept_before = fault.at_work_hours if diverged else math.inf
    life.write_checkpoint(no_checkpoint_after=kept_before)
    tl.lose_work_since_checkpoint(no_checkpoint_after=kept_before)
    since = life.kernel.now
    yield from person_relaunches(
        life,
        None if told else fault.kind,
        since,
        struck_at=struck,
        fix=diverged,
        response=max(noticed - since, 0.0),
    )
    return True
