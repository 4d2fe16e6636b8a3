"""What one trace job's life under trainguard holds that its steps share: the job, the stand-in, the kernel, the
timeline, the running launch and what the person did. The job's life itself is the one every strategy plays
(fleet/life.py); trainguard's answers to it (answers.py), the steps from a hang's or a silence's strike
(strikes.py), the steps after a launch's end (endings.py) and the stall windows (stall_windows.py) take this
state, so that none imports the answers.

A life learns what trainguard did from the world, never from a handler's return value, as the job's owner would:
its messages (SNS), its CreateTrainingJob and StopTrainingJob calls (the job's status), its ledger (a launch
waiting for a quota); so that a delivery that comes late, twice or never (the chaos suite's faults, issue 25)
changes what trainguard does, not what the life believes it did."""

from __future__ import annotations

import math
import random
from collections.abc import Generator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from trainguard.domain.outcome import OutcomeKind
from trainguard.domain.stalls import StallThresholds
from trainguard.domain.watched_job import WatchedJob, stall_over_limit, verdict_look_back
from trainguard_local.fleet.life import JobLife
from trainguard_local.fleet.model import TRAINGUARD, JobTimeline, newest_checkpoint
from trainguard_local.fleet.person import PersonOnCall
from trainguard_local.fleet.trainguard_run.guard_actions import GuardActions, GuardCall, relaunch_of
from trainguard_local.fleet.trainguard_run.job_logs import JobLogs
from trainguard_local.fleet.trainguard_run.schedules import QuotaChecks, Ticker
from trainguard_local.fleet.trainguard_run.world import FleetWorld
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.kernel import Kernel, Park, Sleep
from trainguard_local.simulation.trace import JobSpec
from trainguard_local.stand_in.sagemaker_control_plane import InvalidTransition

Life = Generator[Sleep | Park, Any, None]


# trainguard's outcomes of a launch's end that tell the job's owner (an SNS message whose `outcome` attribute names it)
TOLD_OF_AN_END = frozenset(
    kind.value
    for kind in (
        OutcomeKind.RELAUNCHED,
        OutcomeKind.RELAUNCH_SCHEDULED,
        OutcomeKind.QUOTA_WALL,
        OutcomeKind.NOTIFIED,
        OutcomeKind.NOT_RELAUNCHED,
    )
)


@dataclass(frozen=True)
class GuardAnswer:
    """trainguard's answer to a launch's end: what it told, and the launch it created (a relaunch)."""

    kind: OutcomeKind
    new_job_name: str = ""


@dataclass(frozen=True)
class LifeSettings:
    person: PersonOnCall
    thresholds: StallThresholds
    quota_wait_hours: float


class LifeState:
    job_life: JobLife  # the job's life on the kernel (fleet/life.py), whose questions this state answers
    process: Life  # its process on the kernel, the one the ticker and the quota checks wake

    def __init__(
        self,
        job: JobSpec,
        rng: random.Random,
        world: FleetWorld,
        kernel: Kernel,
        ticker: Ticker,
        quota_checks: QuotaChecks,
        settings: LifeSettings,
    ) -> None:
        self.job, self.rng, self.world, self.kernel = job, rng, world, kernel
        self.ticker, self.quota_checks, self.settings = ticker, quota_checks, settings
        self.tl = JobTimeline(job, TRAINGUARD)
        self.guard_actions = GuardActions(self.tl, world.quotas, owned=bool(job.owner))
        self.name = ""  # the SageMaker job of the running launch
        self.next_name = ""  # the SageMaker job of the next launch, once someone launched it
        self.training_since = 0.0
        self.end_kind: dict[str, FaultKind | None] = {}  # SageMaker job -> the fault its end came from
        self.hung: set[str] = set()  # SageMaker jobs hung when stopped
        self.person_stopped: set[str] = set()  # SageMaker jobs the person stopped
        self.wasting: dict[str, FaultKind] = {}  # SageMaker jobs a degraded host slowed or whose loss diverged
        self.person_launches = 0
        self.told_upto = 0  # the world's notifications up to which trainguard's answers have been taken
        self.notes: list[str] = []  # what did not go as the drive expects (a refused launch, a stray state)
        self.refused: list[tuple[float, str, str]] = []  # (hours, name, error) of its user's launches a wall refused
        self.refused_launch = ""  # the running launch's name when SageMaker refused it: no job was created
        self.modelled: list[str] = []  # where the drive fell back to a model, and why
        self.logs = JobLogs(
            job, world, lambda: self.name
        )  # the running launch's log lines, delivered to the guard (job_logs.py)

    def launch(self, name: str, actor: str) -> None:
        """A launch of the job named `name`, by the user or the person (trainguard's are its own)."""
        error = self.world.fleet.launch_spec(self.job, name, root=self.job.name)
        walled = self.job_life.quota_wall is not None and error.startswith("ResourceLimitExceeded")
        if walled and actor == "user":  # the trace's wall stands before the job's first launch
            self.refused.append((self.world.hours, name, error))
            self.refused_launch = name
        elif error:
            self.notes.append(f"{actor}'s launch of {name} refused: {error}")
        self.world.pump()
        self.next_name = name

    def show_evidence(self, launch: str) -> None:
        """Before a verdict on `launch` outside its stall window (a false alarm; an alarm that comes late), what it
        logged and ran up to now, as CloudWatch would hold it (job_logs.py); a window writes its own every minute,
        and a launch that no longer runs shows nothing new."""
        if launch == self.name and launch not in self.ticker.windows:
            self.logs.show_until(self.world.hours, look_back_minutes=self.verdict_look_back_minutes())

    def guard_minutes_left(self, at: float) -> float | None:
        """The minutes from `at` (trace hours) until the prober's stall metric for the running launch reaches 0 if
        no new line comes, read from its ledger the way the prober reads it (domain/watched_job.py: a job that
        reports progress is judged by its steps and phases, one that reports nothing by its log silence); None:
        trainguard does not watch it."""
        watched = self.watched()
        return -stall_over_limit(watched, self.world.clock.at_hours(at)) if watched else None

    def verdict_look_back_minutes(self) -> float:
        """How far back a stall verdict on the running launch would read its newest line now: the product's own
        window (domain/watched_job.py), from its ledger entry."""
        return verdict_look_back(self.settings.thresholds, self.watched()) / timedelta(minutes=1)

    def watched(self) -> WatchedJob | None:
        """The running launch's entry in trainguard's stall ledger (None: trainguard does not watch it)."""
        from trainguard.adapters.stall_ledger import StallLedger

        ledger = StallLedger(self.world.world["dynamodb"], self.world.config.ledger_table_name)
        return next(iter(ledger.watched_job(self.name)), None)

    # ---- the running launch on the stand-in -----------------------------------------------------------

    def drive(self, move: Any, *args: Any) -> None:
        try:
            move(self.name, *args)
        except InvalidTransition as err:
            self.notes.append(f"{self.name}: {err}")
        self.world.pump()

    def end_launch(self, move: Any, *args: Any) -> GuardAnswer | None:
        """End the launch on SageMaker's side; trainguard's answer to its Failed or Stopped event."""
        try:
            move(self.name, *args)
        except InvalidTransition as err:
            self.notes.append(f"{self.name}: {err}")
        self.world.pump()
        return self.answer_to_end()

    def answer_to_end(self) -> GuardAnswer | None:
        """What trainguard did about the end of the running launch, as the world shows it, never from a handler's
        return value: its message about the launch (SNS, as the job's owner reads it), the first since the last
        one the life took, and for a relaunch its CreateTrainingJob (retry-of the launch). None: nobody told yet."""
        notifications = self.world.usage.notifications
        for index in range(self.told_upto, len(notifications)):
            attributes = notifications[index].attributes
            if attributes.get("job_name") == self.name and attributes.get("outcome") in TOLD_OF_AN_END:
                self.told_upto = index + 1
                told = OutcomeKind(attributes["outcome"])
                return GuardAnswer(
                    told,
                    relaunch_of(self.world.guard_log, self.name, refused=self.refused_launch == self.name)
                    if told is OutcomeKind.RELAUNCHED
                    else "",
                )
        return None

    def write_checkpoint(self, no_checkpoint_after: float = math.inf) -> None:
        """Write the newest checkpoint of the running launch to S3 (where the job's own sync puts it)."""
        every = self.job.checkpoint_every_minutes
        newest = newest_checkpoint(min(self.tl.progress, no_checkpoint_after, self.tl.sync_stopped_after), every)
        if newest > self.tl.kept:
            written_at = self.tl.now - (self.tl.progress - newest)
            self.world.fleet.write_progress_checkpoint(self.job, newest, written_at)

    # ---- trainguard's calls, as actions --------------------------------------------------------------

    def take(self, call: GuardCall) -> None:
        self.guard_actions.take(call)

    def flush_guard_calls(self) -> None:
        self.guard_actions.flush(self.end_kind, self.hung | set(self.wasting))
