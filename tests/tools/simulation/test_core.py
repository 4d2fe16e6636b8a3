"""The simulation core (local/trainguard_local/simulation/): one clock, one kernel, one fault table, one
model of what a launch emits."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from types import SimpleNamespace
from typing import Any, cast

from trainguard_local.demo.demo_jobs import demo_job
from trainguard_local.fleet.trainguard_run.job_logs import JobLogs
from trainguard_local.simulation.activity import LaunchActivity
from trainguard_local.simulation.clock import SimClock
from trainguard_local.simulation.fault_table import (
    FAULT_TABLE,
    FINDING_KINDS,
    FIX_FIRST_KINDS,
    HANG_KINDS,
    SILENT_KINDS,
    SPINNING_PER_GPU,
    TRANSIENT_KINDS,
    USER_ERROR_KINDS,
    WORKING_PER_GPU,
    FaultKind,
)
from trainguard_local.simulation.kernel import Kernel, Park, Process, Sleep
from trainguard_local.simulation.reporting import LineKind
from trainguard_local.simulation.rhythm import JobRhythm

BASE = datetime(2026, 11, 30, tzinfo=UTC)


def test_the_kernel_runs_processes_and_callbacks_in_time_order_on_the_one_clock() -> None:
    clock = SimClock(BASE)
    kernel = Kernel(clock)
    seen: list[tuple[str, datetime]] = []

    def sleeper() -> Process:
        seen.append(("sleeper starts", clock()))
        yield Sleep(2.0)
        seen.append(("sleeper wakes", clock()))

    def parked() -> Process:
        value = yield Park(10.0)
        seen.append((f"parked resumes with {value}", clock()))

    waiting = parked()
    kernel.spawn(sleeper(), 0.5)
    kernel.spawn(waiting, 0.0)
    kernel.at(BASE + timedelta(hours=1), lambda: kernel.wake(waiting, "news"))
    kernel.after(timedelta(hours=3), lambda: seen.append(("callback", clock())))
    kernel.run(until=5.0)
    hour = timedelta(hours=1)
    assert seen == [
        ("sleeper starts", BASE + hour / 2),
        ("parked resumes with news", BASE + hour),
        ("sleeper wakes", BASE + 2 * hour),
        ("callback", BASE + 3 * hour),
    ]
    assert clock() == BASE + 5 * hour  # the clock stands at `until` when the events before it ran out


def test_a_parked_process_resumes_with_none_at_its_deadline() -> None:
    kernel = Kernel(SimClock(BASE))
    got: list[object] = []

    def parked() -> Process:
        got.append((yield Park(1.5)))

    kernel.spawn(parked(), 0.0)
    kernel.run()
    assert got == [None] and kernel.now == 1.5


def test_every_kind_has_a_row_and_the_kind_sets_come_from_the_rows() -> None:
    assert set(FAULT_TABLE) == set(FaultKind)
    hangs = {FaultKind.HANG_IDLE_GPU, FaultKind.HANG_BUSY_GPU, FaultKind.LIVELOCK, FaultKind.HANG_IN_PHASE}
    assert hangs == HANG_KINDS
    assert HANG_KINDS | {FaultKind.NCCL_TIMEOUT, FaultKind.SLOW_BUT_HEALTHY} == SILENT_KINDS
    assert {FaultKind.USER_CODE_ERROR, FaultKind.OUT_OF_MEMORY} == USER_ERROR_KINDS
    assert {FaultKind.DEGRADED_HOST, FaultKind.DIVERGED} == FINDING_KINDS
    assert USER_ERROR_KINDS | {FaultKind.DIVERGED} == FIX_FIRST_KINDS  # a diverged run would diverge again
    assert set(FaultKind) - USER_ERROR_KINDS - {FaultKind.SLOW_BUT_HEALTHY, FaultKind.DIVERGED} == TRANSIENT_KINDS


def test_a_hang_silences_the_launch_for_good_and_is_the_truth_an_audit_reads() -> None:
    every_minute = JobRhythm(log_every_seconds=60.0)
    launch = LaunchActivity(every_minute, checkpoint_every_minutes=30, gpus_per_host=8, training_since=1.0)
    launch.strike(FaultKind.HANG_BUSY_GPU, 1.5)
    lines = [at for at, _ in launch.lines(1.0 - 1e-9, 3.0)]
    assert lines[0] == 1.0 and max(lines) < 1.5  # a line as training starts, none after the hang
    assert math.isclose(launch.newest_line(2.5) or 0, max(lines))
    assert not launch.hung_at(1.49) and launch.hung_at(1.5) and launch.hung_at(100.0)
    assert launch.gpu_per_host(1.2) == WORKING_PER_GPU * 8 and launch.gpu_per_host(2.0) == SPINNING_PER_GPU * 8
    assert launch.gpu_per_host(0.5) is None  # before it trains


def test_a_healthy_silence_ends_with_a_line_and_is_never_a_hang() -> None:
    every_minute = JobRhythm(log_every_seconds=60.0)
    launch = LaunchActivity(every_minute, checkpoint_every_minutes=30, gpus_per_host=1, training_since=0.0)
    launch.strike(FaultKind.SLOW_BUT_HEALTHY, 0.0, minutes=24)  # a first checkpoint load: GPUs idle
    assert launch.gpu_per_host(0.2) == 0.0 and launch.gpu_per_host(0.5) == WORKING_PER_GPU
    assert not any(launch.hung_at(at / 60) for at in range(0, 60))
    lines = {round(at * 60, 6) for at, _ in launch.lines(0.0, 0.41)}  # minutes
    assert lines == {24.0}  # none in the 24 minutes; the silence's end is heard


def test_a_launch_checkpoints_on_its_interval_of_work_and_none_once_it_hangs() -> None:
    launch = LaunchActivity(JobRhythm(), checkpoint_every_minutes=10, gpus_per_host=1, training_since=1.0)
    launch.strike(FaultKind.HANG_IDLE_GPU, 1.5)  # 30 minutes in: that checkpoint is never written

    def minutes(after: float, until: float) -> list[float]:
        return [round((at - 1.0) * 60, 6) for at, _ in launch.checkpoints(after, until)]

    assert minutes(0.0, 3.0) == [10.0, 20.0]
    assert minutes(1.0 + 10 / 60, 1.0 + 20 / 60) == [20.0]  # after `after`, up to `until`
    relaunch = LaunchActivity(JobRhythm(), 10, 1, training_since=2.0, progress_at_start=25 / 60)
    assert [(round((at - 2.0) * 60, 6), round(work * 60, 6)) for at, work in relaunch.checkpoints(0.0, 2.3)] == [
        (5.0, 30.0),
        (15.0, 40.0),
    ]  # the work of each checkpoint, written 5 and 15 minutes into the relaunch
    saving = LaunchActivity(JobRhythm(checkpoint_write_minutes=2.0), 10, 1, training_since=0.0)
    assert [round(at * 60, 6) for at, _ in saving.checkpoints(0.0, 0.5)] == [12.0, 22.0]  # when each write ends


def test_a_step_that_ends_as_a_phase_begins_logs_its_line_unless_a_hang_strikes_then() -> None:
    """Steps every 40 minutes, a save and an evaluation every 60 minutes of work: the third step ends at 120 minutes, as
    the second phase begins. Its line is logged (it was dropped: the guard of seed 1's long form never saw a 40-minute
    interval, learned 23 minutes from the waits after phases, and stopped the job at 34 minutes of a healthy one),
    also under the healthy silence the fleet's world strikes for a long phase; a hang struck then silences it."""
    rhythm = JobRhythm(2400.0, checkpoint_write_minutes=1.17, eval_every_checkpoints=1, eval_minutes=15.65)

    def steps(strike: FaultKind | None = None) -> list[tuple[float, int]]:
        launch = LaunchActivity(rhythm, checkpoint_every_minutes=60, gpus_per_host=1, training_since=0.0)
        if strike is FaultKind.SLOW_BUT_HEALTHY:
            launch.strike(strike, 2.0, 16.82)  # the phase's length
        elif strike is not None:
            launch.strike(strike, 2.0)  # for good
        lines = launch.lines(1.5, 2.5)
        return [(round(at * 60, 2), token.step) for at, token in lines if token.kind is LineKind.STEP]

    assert (120.0, 3) in steps() and (120.0, 3) in steps(FaultKind.SLOW_BUT_HEALTHY)
    assert [step for _, step in steps(FaultKind.HANG_IN_PHASE)] == [2]  # its last line, a second before


def test_the_line_as_training_starts_is_written_once() -> None:
    launch = LaunchActivity(
        JobRhythm(log_every_seconds=60.0), checkpoint_every_minutes=30, gpus_per_host=1, training_since=2.0
    )
    times = [at for at, _ in launch.lines(2.0 - 1e-9, 2.05)]
    assert times[0] == 2.0 and len(times) == len(set(times)) == 4  # at 0, 1, 2 and 3 minutes


def test_a_launch_starts_with_its_line_not_with_a_save_of_the_work_it_resumed_at() -> None:
    """No checkpoint is written at the work a launch starts from (0, or its checkpoint's), so no save's silence
    either: one swallowed the line as training starts, in the fleet's world too, whose first delivery began only
    after that line (job_logs.py)."""
    saving = JobRhythm(log_every_seconds=600.0, checkpoint_write_minutes=2.0, announces_phases=True)
    for resumed_at in (0.0, 30 / 60):
        launch = LaunchActivity(saving, 30, gpus_per_host=1, training_since=2.0, progress_at_start=resumed_at)
        found = [(round((at - 2.0) * 60, 3), token.kind) for at, token in launch.lines(2.0 - 1e-9, 2.0 + 31 / 60)]
        assert found[0] == (0.0, LineKind.START)
        assert [minutes for minutes, kind in found if kind is LineKind.PHASE_BEGIN] == [round(30 - 1 / 60, 3)]
    job = demo_job("slow-steps", "ml.g5.xlarge", 1, saving, checkpoint_every_minutes=30)
    logs = JobLogs(job, cast(Any, None), lambda: "slow-steps")
    logs.start_launch(training_since=2.0, progress=0.0)
    assert [at for at, _ in logs.lines(logs.delivered_until, 2.0 + 1 / 60)] == [2.0]


def test_the_newest_line_the_subscription_had_is_in_cloudwatch_logs_for_a_verdict() -> None:
    """Lines delivered to the subscription only (before a window) may reach the ledger late, under chaos: the newest of
    them is written where the verdict's FilterLogEvents reads (a chaos run stopped a healthy job on a stale line)."""
    written: list[tuple[str, datetime, list[tuple[datetime, str]]]] = []
    fleet = SimpleNamespace(write_log_lines=lambda name, base, lines: written.append((name, base, lines)))
    world = SimpleNamespace(clock=SimClock(BASE), fleet=fleet)
    job = demo_job("slow-steps", "ml.g5.xlarge", 1, JobRhythm(log_every_seconds=600.0), checkpoint_every_minutes=60)
    logs = JobLogs(job, cast(Any, world), lambda: "slow-steps")
    logs.start_launch(training_since=2.0, progress=0.0)
    logs.delivered_until = 2.0 + 35 / 60  # lines at 0, 10, 20 and 30 minutes delivered, none written
    logs.write_newest_delivered(look_back_minutes=60)
    newest = logs.lines(2.0, logs.delivered_until)[-1][1]  # the step line at 30 minutes, in the job's words
    assert written == [("slow-steps", BASE, [(BASE + timedelta(hours=2, minutes=30), newest)])]
    logs.write_newest_delivered(look_back_minutes=60)  # written already: not again
    logs.write_newest_delivered(look_back_minutes=4)  # none delivered in the last 4 minutes: nothing to write
    idle = JobLogs(job, cast(Any, world), lambda: "")  # no launch running: nothing either
    idle.write_newest_delivered(look_back_minutes=60)
    assert len(written) == 1


def test_lines_asked_minute_by_minute_are_the_lines_asked_at_once() -> None:
    """A line on a window's edge belongs to that window once: float hours must not drop it (a 10-second cadence
    lost a line between two minutes' windows, as the demos and the sandbox ask for them)."""
    since, minute = 0.1234567, 1 / 60  # hours
    launch = LaunchActivity(JobRhythm(log_every_seconds=10.0), 60, gpus_per_host=8, training_since=since)
    launch.strike(FaultKind.HANG_BUSY_GPU, since + 25 * minute)
    at_once = [at for at, _ in launch.lines(since - 1e-6, since + 26 * minute)]
    edges = [since - 1e-6, *(since + m * minute for m in range(1, 27))]
    by_minute = [at for after, until in pairwise(edges) for at, _ in launch.lines(after, until)]
    assert len(at_once) == 151 and by_minute == at_once  # 150 cadence lines, and one just before the hang
