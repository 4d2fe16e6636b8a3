"""What follows the end of a launch in a job's life: trainguard's answer (a relaunch now, one it
scheduled, one that waits for a quota, or a notification), and the person on call where trainguard
leaves the job to a person (the same draws as in the anchors, person.py). Each function is a step of
the job's process (job_life.py): it yields to the kernel and returns the next launch's name ('' when
there is none)."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard_local.fleet.anchor_rules import PARENT_RETRY_MINUTES, parent_retries
from trainguard_local.fleet.model import ActionKind, State
from trainguard_local.fleet.person import PERSON
from trainguard_local.fleet.trainguard_run.guard_actions import TRAINGUARD
from trainguard_local.fleet.trainguard_run.life_state import LifeState
from trainguard_local.simulation.fault_table import USER_ERROR_KINDS, FaultKind
from trainguard_local.simulation.kernel import Park, Sleep

QUOTA_WAIT_MARGIN_HOURS = 1.0
Step = Generator[Sleep | Park, Any, str]
TOLD = (  # trainguard's outcomes of a launch's end that tell someone
    OutcomeKind.RELAUNCHED,
    OutcomeKind.RELAUNCH_SCHEDULED,
    OutcomeKind.QUOTA_WALL,
    OutcomeKind.NOTIFIED,
    OutcomeKind.NOT_RELAUNCHED,
)


def after_end(life: LifeState, end: Outcome | None, kind: FaultKind | None, struck: float, waiting: State) -> Step:
    """trainguard's answer to the launch's end, then what follows it."""
    tl = life.tl
    told = end is not None and end.kind in TOLD
    if told and kind is not None:
        tl.detect(kind, struck, TRAINGUARD)
    life.flush_guard_calls()
    if end is not None and end.kind is OutcomeKind.RELAUNCHED:
        return end.new_job_name
    if end is not None and end.kind is OutcomeKind.RELAUNCH_SCHEDULED:
        launched = yield from scheduled_relaunch(life, waiting)
        if launched:
            return launched
    elif end is not None and end.kind is OutcomeKind.QUOTA_WALL:
        launched = yield from wait_for_quota(life)
        if launched:
            return launched
    elif told:
        assert end is not None
        tl.act(ActionKind.NOTIFY, TRAINGUARD, target=life.name, note=end.kind.value)
    if kind is not None and parent_retries(life.job, kind):
        return (yield from parent_relaunches(life, kind, struck))
    fix = kind in USER_ERROR_KINDS
    return (yield from person_relaunches(life, None if told else kind, life.kernel.now, struck_at=struck, fix=fix))


def parent_relaunches(life: LifeState, kind: FaultKind, struck: float) -> Step:
    """The job's parent (a pipeline's retry policy, a Batch queue) starts a new job by itself, as in the anchors;
    trainguard left the job to it."""
    tl, owner = life.tl, life.job.owner
    yield Sleep(life.kernel.now + PARENT_RETRY_MINUTES / 60)
    tl.wait_until(State.FAILED, life.kernel.now)
    tl.detect(kind, struck, owner)
    life.modelled.append(f"{owner} retries its own job (its retry rules), as in the anchors")
    life.person_launches += 1
    tl.act(ActionKind.RELAUNCH, owner, note="a new job, by its own retry rules")
    return life.launch(f"{life.job.name}-o{life.person_launches}", owner)


def scheduled_relaunch(life: LifeState, waiting: State) -> Step:
    """The one-time schedule trainguard created fires: the retry launcher's relaunch."""
    from trainguard.handlers import retry_launcher

    world, failed = life.world, life.name
    schedule = world.schedule_of(failed)
    if schedule is None:
        life.notes.append(f"{failed}: relaunch scheduled, but no schedule found")
        return ""
    at, payload = schedule
    yield Sleep(world.clock.hours_of(at))
    life.tl.wait_until(waiting, life.kernel.now)
    fired = world.call("retry_launcher", failed, retry_launcher.handle, payload)
    world.schedule_fired(failed)
    world.pump()
    life.flush_guard_calls()
    if isinstance(fired, Outcome) and fired.kind is OutcomeKind.RELAUNCHED:
        return fired.new_job_name
    life.tl.act(ActionKind.NOTIFY, TRAINGUARD, target=failed, note=fired.kind.value if fired else "error")
    return ""


def wait_for_quota(life: LifeState) -> Step:
    """The launch waits in trainguard's ledger until the quota check launches it or gives it up."""
    failed = life.name
    life.quota_checks.wait(failed, life.process)
    news = yield Park(life.kernel.now + life.settings.quota_wait_hours + QUOTA_WAIT_MARGIN_HOURS)
    life.quota_checks.forget(failed)
    life.tl.wait_until(State.WAITING_FOR_QUOTA, life.kernel.now)
    life.flush_guard_calls()
    if news is not None and news[0].get("kind") == OutcomeKind.RELAUNCHED.value:
        life.quota_wall = None
        return str(news[0]["new_job_name"])
    life.tl.act(ActionKind.NOTIFY, TRAINGUARD, target=failed, note=str(news[0]["kind"]) if news else "no answer")
    return ""


def hang_left_to_the_person(life: LifeState, kind: FaultKind, struck: float, runtime_end: float) -> Step:
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
    return (yield from person_relaunches(life, kind, struck, struck_at=struck, response=response))


def person_stops(life: LifeState, note: str = "") -> None:
    """The person stops the running launch (StopTrainingJob), and the stop takes effect."""
    world = life.world
    world.world["sagemaker"].stop_training_job(TrainingJobName=life.name)
    world.plane.settle(life.name)
    world.pump()
    life.tl.act(ActionKind.STOP, PERSON, note=note)


def person_relaunches(
    life: LifeState,
    kind: FaultKind | None,
    since: float,
    *,
    struck_at: float,
    fix: bool = False,
    response: float | None = None,
) -> Step:
    """The person acts a response time after `since` (and the fix of a user's error), then relaunches
    from the newest checkpoint. `kind`: what the person detects then (None: trainguard told them)."""
    tl, person = life.tl, life.settings.person
    response = person.response_hours(life.rng) if response is None else response
    yield Sleep(max(since + response, life.kernel.now))
    tl.wait_until(State.WAITING_FOR_PERSON, life.kernel.now)
    if kind is not None:
        tl.detect(kind, struck_at, PERSON)
    if fix:
        yield Sleep(tl.now + person.fix_hours)
        tl.wait_until(State.WAITING_FOR_PERSON, life.kernel.now)
    if life.quota_wall is not None:
        yield from person_meets_the_quota_wall(life)
    life.person_launches += 1
    tl.act(ActionKind.RELAUNCH, PERSON, note="after a fix" if fix else "from the newest checkpoint")
    return life.launch(f"{life.job.name}-p{life.person_launches}", PERSON)


def person_meets_the_quota_wall(life: LifeState) -> Generator[Sleep | Park, Any, None]:
    """Modelled, as in the anchors (trainguard did not take the quota path): the person's launch is
    refused, they request the quota, wait for it, and come back a response time later."""
    assert life.quota_wall is not None
    quota, approval = life.quota_wall
    life.modelled.append("the person meets the quota wall (refused, request, approval), as in the anchors")
    tl, person = life.tl, life.settings.person
    tl.act(ActionKind.RELAUNCH, PERSON, succeeded=False, note="ResourceLimitExceeded")
    tl.act(ActionKind.QUOTA_REQUEST, PERSON, target=quota)
    yield Sleep(tl.now + approval)
    tl.wait_until(State.WAITING_FOR_QUOTA, life.kernel.now)
    yield Sleep(tl.now + person.response_hours(life.rng))
    tl.wait_until(State.WAITING_FOR_PERSON, life.kernel.now)
    life.world.plane.walls.pop(life.job.name, None)
    life.quota_wall = None
