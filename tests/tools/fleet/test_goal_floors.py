from dataclasses import replace

import pytest

from tests.tools.fleet.cases import PERSON, fault, job, trace_of_many
from trainguard_local.fleet.anchors import no_guard
from trainguard_local.fleet.goal_floors import (
    GOALS,
    chatty_hang_floor,
    floor_lines,
    floors,
    main,
    sync_loss_floor,
)
from trainguard_local.fleet.report import run_all
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.rhythm import JobRhythm
from trainguard_local.simulation.trace import generate_trace

CHATTY, SLOW = JobRhythm(log_every_seconds=10.0), JobRhythm(log_every_seconds=1500.0)


def test_the_longest_healthy_busy_silence_of_a_chatty_job_sets_each_hangs_floor():
    lookalike = job(name="healthy", rhythm=CHATTY)
    shorter = job(name="shorter", rhythm=CHATTY)
    loading = job(name="loading", rhythm=CHATTY)  # a first load has the start's grace: no lookalike
    owned = job(name="owned", rhythm=CHATTY, owner="pipelines")  # the floor is worked out on jobs no parent owns
    slow = job(name="slow", rhythm=SLOW)  # not in the chatty class
    busy, owned_busy = job(name="busy", rhythm=CHATTY), job(name="owned-busy", rhythm=CHATTY, owner="aws_batch")
    quick_nccl, slow_nccl = job(name="nccl-10", rhythm=CHATTY), job(name="nccl-30", rhythm=CHATTY)
    idle = job(name="idle", rhythm=CHATTY)
    trace = trace_of_many(
        (lookalike, fault(lookalike, FaultKind.SLOW_BUT_HEALTHY, 1.1, silent_minutes=16.0)),
        (shorter, fault(shorter, FaultKind.SLOW_BUT_HEALTHY, 1.1, silent_minutes=12.0)),
        (loading, fault(loading, FaultKind.SLOW_BUT_HEALTHY, 0.0, silent_minutes=40.0)),
        (owned, fault(owned, FaultKind.SLOW_BUT_HEALTHY, 2.1, silent_minutes=28.0)),
        (slow, fault(slow, FaultKind.SLOW_BUT_HEALTHY, 2.1, silent_minutes=28.0)),
        (busy, fault(busy, FaultKind.HANG_BUSY_GPU, 3.0)),
        (owned_busy, fault(owned_busy, FaultKind.HANG_BUSY_GPU, 3.0)),
        (quick_nccl, fault(quick_nccl, FaultKind.NCCL_TIMEOUT, 3.0, hung_minutes=10.0)),
        (slow_nccl, fault(slow_nccl, FaultKind.NCCL_TIMEOUT, 3.0, hung_minutes=30.0)),
        (idle, fault(idle, FaultKind.HANG_IDLE_GPU, 3.0)),
    )
    found = chatty_hang_floor(trace)
    longest = found.longest_lookalike
    assert longest is not None and (longest.job_name, longest.silent_minutes) == ("healthy", 16.0)
    assert found.per_hang_minutes == {"busy": 16.0, "nccl-10": 10.0, "nccl-30": 16.0, "idle": 0.0}
    assert found.p95_minutes == 16.0  # nearest rank of four: the largest


def test_without_a_lookalike_only_the_watchdog_bounds_nothing():
    busy = job(name="busy", rhythm=CHATTY)
    found = chatty_hang_floor(trace_of_many((busy, fault(busy, FaultKind.HANG_BUSY_GPU, 3.0))))
    assert found.longest_lookalike is None
    assert found.per_hang_minutes == {"busy": 0.0}


def test_a_warning_at_once_saves_what_lies_beyond_the_persons_response():
    spec = job(checkpoint_every_minutes=30)
    # the sync stops at 2.25 h of work (last checkpoint in S3: 2.0 h); the failure strikes 6 h later
    late = fault(spec, FaultKind.CHECKPOINT_SYNC_STOPPED, 2.25, fails_at_work_hours=8.25)
    found = sync_loss_floor(trace_of_many((spec, late)), PERSON)  # every response takes 4 h
    assert found.none_gpu_hours == pytest.approx(6.25 * spec.gpus)
    assert found.warning_at_once_gpu_hours == pytest.approx(4.25 * spec.gpus)
    # a failure within the response: the warning saves nothing
    soon = replace(late, fails_at_work_hours=3.25)
    assert sync_loss_floor(trace_of_many((spec, soon)), PERSON).share == pytest.approx(1.0)


def test_the_floor_lines_name_the_figures_and_the_lookalike():
    found = {
        "chatty_hang_to_stop_p95_minutes_at_least": 16.22,
        "chatty_hangs_not_parent_owned": 6,
        "longest_busy_lookalike": {"job": "fleet-0091", "silent_minutes": 16.22},
        "sync_loss_share_of_none_at_least": 0.797,
        "sync_loss_gpu_hours": {"none": 269.4, "warning_at_once": 214.7},
    }
    chatty, sync = floor_lines(found)
    assert "p95 at least 16.22 min over 6 hangs" in chatty and "(fleet-0091) is silent 16.22 min" in chatty
    assert "at least 79.7%" in sync and "214.7 of 269.4 GPU-h" in sync
    none_seen, _ = floor_lines({**found, "longest_busy_lookalike": None})
    assert "no healthy chatty job is silent mid-run" in none_seen


def test_on_the_standard_trace_no_guards_sync_loss_is_what_the_simulator_measures():
    trace = generate_trace(200, 72, 7)
    none = run_all(trace, [no_guard()])["strategies"]["none"]
    found = floors(trace, none)
    measured = none["wasted_gpu_hours_lost_since_checkpoint_by_fault"]["checkpoint_sync_stopped"]
    assert found["sync_loss_gpu_hours"]["none"] == pytest.approx(measured, abs=0.01)
    assert (
        found["chatty_hangs_not_parent_owned"]
        == none["detect_minutes_by_reporting"]["none"]["silent"]["under 1 min"]["hangs"]
    )
    # the warning's response is the first one drawn for each job, as in every strategy: on this trace 214.7 GPU-h
    assert found["sync_loss_gpu_hours"]["warning_at_once"] == pytest.approx(214.7, abs=0.05)


def test_the_command_prints_one_traces_floors_or_counts_them_over_seeds(capsys):
    assert main(["--jobs", "40", "--hours", "24", "--seed", "3"]) == 0
    one = capsys.readouterr().out
    assert "seed 3:" in one and one.count("\n- ") == 2
    assert main(["--jobs", "40", "--hours", "24", "--seeds", "3-5"]) == 0
    counted = capsys.readouterr().out.splitlines()
    assert counted[0].startswith("Of 3 traces (seeds 3-5, 40 jobs, 24 h)")
    counts = [int(line.rsplit(": ", 1)[1]) for line in counted[1:]]
    expected = [0, 0]
    for seed in (3, 4, 5):
        trace = generate_trace(40, 24, seed)
        found = floors(trace, run_all(trace, [no_guard()])["strategies"]["none"])
        for n, key in enumerate(GOALS):
            expected[n] += (found[key] or 0.0) > GOALS[key][0]
    assert counts == expected
