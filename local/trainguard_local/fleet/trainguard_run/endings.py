"""What follows the end of a launch in a job's life: trainguard's answer (a relaunch now, one it
scheduled, one that waits for a quota, or a notification), and the job's parent or the person on call where
trainguard leaves the job to them (their steps are the ones every strategy shares, fleet/life.py, with the
same draws as in the anchors; here they also launch on the stand-in). Each function is a step of the job's
process: it yields to the kernel, and whoever relaunches sets the state's `next_name`."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from trainguard.domain.outcome import OutcomeKind
from trainguard_local.fleet.anchor_rules import parent_retries
from trainguard_local.fleet.life import Steps
from trainguard_local.fleet.model import TRAINGUARD, ActionKind, State
from trainguard_local.fleet.person import PERSON
from trainguard_local.fleet.trainguard_run.guard_actions import relaunch_of
from trainguard_local.fleet.trainguard_run.life_state import GuardAnswer, LifeState
from trainguard_local.fleet.trainguard_run.schedules import fire_schedule, one_time_schedule, waiting_launches
from trainguard_local.simulation.fault_table import USER_ERROR_KINDS, FaultKind
from trainguard_local.simulation.kernel import Park, Sleep

QUOTA_WAIT_MARGIN_HOURS = 1.0
LATE_ANSWER_HOURS = 1.0  # how long a life waits for an answer whose event is known to be on its way


def after_end(life: LifeState, end: GuardAnswer | None, kind: FaultKind | None, struck: float, waiting: State) -> Steps:
    """trainguard's answer to the launch's end (as the world shows it: life_state.answer_to_end), then what follows."""
    tl = life.tl
    told = end is not None  # answer_to_end: only what told the job's owner
    if told and kind is not None:
        tl.detect(kind, struck, TRAINGUARD)
    life.flush_guard_calls()
    if end is not None and end.kind is OutcomeKind.RELAUNCHED:
        life.next_name = end.new_job_name
        return
    if end is not None and end.kind is OutcomeKind.RELAUNCH_SCHEDULED:
        if (yield from scheduled_relaunch(life, waiting)):
            return
    elif end is not None and end.kind is OutcomeKind.QUOTA_WALL:
        if (yield from wait_for_quota(life)):
            return
    elif told:
        assert end is not None
        tl.act(ActionKind.NOTIFY, TRAINGUARD, target=life.name, note=end.kind.value)
    if kind is not None and parent_retries(life.job, kind):
        yield from parent_relaunches(life, kind, struck)
        return
    fix, since = kind in USER_ERROR_KINDS, life.kernel.now
    if told:
        yield from person_relaunches(life, None, since, struck_at=struck, fix=fix)
        return
    response = life.settings.person.response_hours(life.rng)
    late = yield from answered_late(life, since + response, waiting)
    if late is not None:
        yield from after_end(life, late, kind, struck, waiting)
        return
    yield from person_relaunches(life, kind, since, struck_at=struck, fix=fix, response=response)


def answered_late(life: LifeState, deadline: float, waiting: State) -> Generator[Sleep | Park, Any, GuardAnswer | None]:
    """trainguard has told nothing of the launch's end yet: its answer may still come (a delivery late, chaos/), and
    the life waits for it, in `waiting`, until the person acts at `deadline` (None: it did not come by then)."""
    ended, process = life.name, life.process
    while life.kernel.now < deadline:
        life.world.awaiting[ended] = lambda: life.kernel.wake(process, True)
        if (yield Park(deadline)) is None:
            break
        if (answer := life.answer_to_end()) is not None:
            life.world.awaiting.pop(ended, None)
            life.tl.wait_until(waiting, life.kernel.now)
            return answer
    life.world.awaiting.pop(ended, None)
    return None


def parent_relaunches(life: LifeState, kind: FaultKind, struck: float) -> Steps:
    """The job's parent (a pipeline's retry policy, a Batch queue) starts a new job by itself, as in the anchors;
    trainguard left the job to it. Its minute runs from the kernel's now, which a hang's end reaches exactly
    (the timeline's sum to it may be a float step off)."""
    owner = life.job.owner
    yield from life.job_life.parent_relaunches(kind, struck, owner, since=life.kernel.now)
    life.modelled.append(f"{owner} retries its own job (its retry rules), as in the anchors")
    life.person_launches += 1
    life.launch(f"{life.job.name}-o{life.person_launches}", owner)


def scheduled_relaunch(life: LifeState, waiting: State) -> Generator[Sleep | Park, Any, bool]:
    """The one-time schedule trainguard created fires (EventBridge Scheduler invokes the retry launcher): True when
    trainguard relaunched the job then, as its CreateTrainingJob shows. A firing delivered later than
    LATE_ANSWER_HOURS finds the job left to the person, who relaunches it too."""
    world, failed = life.world, life.name
    schedule = one_time_schedule(world, failed)
    if schedule is None:
        life.notes.append(f"{failed}: relaunch scheduled, but no schedule found")
        return False
    yield Sleep(world.clock.hours_of(schedule[0]))
    life.tl.wait_until(waiting, life.kernel.now)
    fire_schedule(world, failed, schedule[1])
    answer = life.answer_to_end()  # the retry launcher's message
    if answer is None and world.on_its_way(failed):  # its invocation is late
        answer = yield from answered_late(life, life.kernel.now + LATE_ANSWER_HOURS, waiting)
    life.flush_guard_calls()
    if relaunch := relaunch_of(world.guard_log, failed):
        life.next_name = relaunch
        return True
    life.tl.act(ActionKind.NOTIFY, TRAINGUARD, target=failed, note=answer.kind.value if answer else "nothing told")
    return False


def wait_for_quota(life: LifeState) -> Generator[Sleep | Park, Any, bool]:
    """The launch waits in trainguard's ledger until the quota check launches it (True) or gives it up. A user's
    launch SageMaker refused (no job) waits only if the ledger holds it: trainguard may have launched it at once on
    an alternative with room, or kept nothing (a dry run, a request it could not rebuild)."""
    failed, refused = life.name, life.refused_launch == life.name
    if refused and (placed := relaunch_of(life.world.guard_log, failed, refused=True)):  # on an alternative
        life.job_life.quota_wall = None
        life.next_name = placed
        return True
    if refused and failed not in waiting_launches(life.world):  # nothing kept waiting
        life.tl.act(ActionKind.NOTIFY, TRAINGUARD, target=failed, note=OutcomeKind.QUOTA_WALL.value)
        return False
    life.quota_checks.wait(failed, life.process, refused=refused)
    relaunch = yield Park(life.kernel.now + life.settings.quota_wait_hours + QUOTA_WAIT_MARGIN_HOURS)
    life.quota_checks.forget(failed)
    life.tl.wait_until(State.WAITING_FOR_QUOTA, life.kernel.now)
    life.flush_guard_calls()
    if relaunch:  # the quota check's CreateTrainingJob
        life.job_life.quota_wall = None
        life.next_name = relaunch
        return True
    given_up = OutcomeKind.NOT_RELAUNCHED.value if relaunch == "" else "no answer"  # None: woken by the deadline
    life.tl.act(ActionKind.NOTIFY, TRAINGUARD, target=failed, note=given_up)
    return False


def hang_left_to_the_person(life: LifeState, kind: FaultKind, struck: float, runtime_end: float) -> Steps:
    """trainguard did not stop the hang within its window: it bills until the person stops it, or until
    MaxRuntime does if sooner (as in the anchors)."""
    tl, world = life.tl, life.world
    if life.kernel.now < runtime_end - 1e-9:
        life.notes.append(f"{life.name}: hang not stopped by trainguard within its window")
    response = life.settings.person.response_hours(life.rng)
    if struck + response < runtime_end:
        yield Sleep(struck + response)
        tl.hang_until(life.kernel.now)
        person_stops(life)
    else:
        yield Sleep(runtime_end)
        tl.hang_until(life.kernel.now)
        world.plane.exceed_max_runtime(life.name)
        world.pump()
    life.flush_guard_calls()
    tl.lose_work_since_checkpoint()
    yield from person_relaunches(life, kind, struck, struck_at=struck, response=response)


def person_stops(life: LifeState, note: str = "") -> None:
    """The person stops the running launch (StopTrainingJob), and the stop takes effect. One trainguard stopped after
    the life stopped waiting for it (a stop delivered late) is left as it is, and noted."""
    world = life.world
    status = world.plane.describe(life.name)["TrainingJobStatus"]
    if status == "InProgress":
        world.world["sagemaker"].stop_training_job(TrainingJobName=life.name)
    else:
        life.notes.append(f"{life.name}: {status} when the person came to stop it")
    if status != "Stopped":
        world.plane.settle(life.name)
    world.pump()
    if status == "InProgress":
        life.person_stopped.add(life.name)
        life.tl.act(ActionKind.STOP, PERSON, note=note)


def person_relaunches(
    life: LifeState,
    kind: FaultKind | None,
    since: float,
    *,
    struck_at: float,
    fix: bool = False,
    response: float | None = None,
) -> Steps:
    """The person acts a response time after `since` (fleet/life.py: the fix of a user's error, a quota wall
    that stands), then relaunches from the newest checkpoint on the stand-in. `kind`: what the person detects
    then (None: trainguard told them)."""
    walled = life.job_life.quota_wall is not None
    yield from life.job_life.person_relaunches(kind, since, struck_at=struck_at, fix=fix, response=response)
    if walled:  # trainguard did not take the quota path
        life.modelled.append("the person meets the quota wall (refused, request, approval), as in the anchors")
        life.world.plane.walls.pop(life.job.name, None)
    life.person_launches += 1
    life.launch(f"{life.job.name}-p{life.person_launches}", PERSON)
