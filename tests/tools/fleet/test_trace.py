import json
from collections import Counter
from pathlib import Path

import pytest

from trainguard_local.simulation.catalogue import FAILURE_TEXTS, INSTANCE_OFFERS
from trainguard_local.simulation.fault_table import FINDING_KINDS, HANG_KINDS, FaultKind
from trainguard_local.simulation.rhythm import phases
from trainguard_local.simulation.trace import generate_trace

FIXTURE = Path(__file__).parents[2] / "fixtures" / "failure_reasons.json"


def test_the_same_seed_gives_the_same_trace_and_another_seed_another():
    assert generate_trace(200, 72, seed=7) == generate_trace(200, 72, seed=7)
    assert generate_trace(200, 72, seed=7) != generate_trace(200, 72, seed=8)


@pytest.mark.parametrize("seed", [1, 7, 42])
def test_every_fault_kind_appears_in_a_200_job_trace(seed):
    trace = generate_trace(200, 72, seed)
    assert {fault.kind for fault in trace.faults} == set(FaultKind)


def test_jobs_are_realistic_and_finish_within_the_window_without_faults():
    trace = generate_trace(200, 72, seed=7)
    counts = [job.instance_count for job in trace.jobs]
    assert all(1 <= count <= 64 for count in counts)
    assert sum(1 for count in counts if count <= 8) / len(counts) > 0.8  # the skew towards small jobs
    prices = {offer.instance_type: offer.price_per_instance_hour for offer in INSTANCE_OFFERS}
    for job in trace.jobs:
        assert job.price_per_instance_hour == prices[job.instance_type]
        assert job.gpus_per_instance in (1, 4, 8)
        assert 15 <= job.checkpoint_every_minutes <= 60
        assert job.submitted_at >= 0 and job.fault_free_completion_at <= trace.hours + 1e-6
        assert job.startup_minutes / 60 + job.work_hours <= job.max_runtime_hours
        if job.uses_debugger_hook:
            assert not job.framework.startswith("pytorch-2")  # the hook is not supported from PyTorch 2.0 on


def test_faults_fit_their_jobs_and_carry_their_parameters():
    trace = generate_trace(200, 72, seed=7)
    jobs = {job.name: job for job in trace.jobs}
    assert len({fault.job_name for fault in trace.faults}) == len(trace.faults)  # one fault per job at most
    for fault in trace.faults:
        job = jobs[fault.job_name]
        assert 0 <= fault.at_work_hours < job.work_hours
        if fault.kind is FaultKind.SPOT_INTERRUPTION:
            assert job.spot and fault.spot_wait_hours > 0
        if fault.kind is FaultKind.CAPACITY_ERROR:
            assert fault.at_work_hours == 0 and fault.strikes_at == job.submitted_at and 0 <= fault.repeats <= 3
        if fault.kind is FaultKind.QUOTA_WALL:
            assert fault.quota_name == f"{job.instance_type} for training job usage"
            assert "ResourceLimitExceeded" in (fault.launch_refusal or "") and fault.quota_approval_hours > 0
        if fault.kind is FaultKind.NCCL_TIMEOUT:
            assert fault.hung_minutes in (10, 30)
        if fault.kind is FaultKind.SLOW_BUT_HEALTHY:
            assert 0 < fault.silent_minutes <= 50 and fault.failure_reason is None  # within trainguard's grace
            assert fault.at_work_hours + fault.silent_minutes / 60 < job.work_hours
        if fault.kind is FaultKind.HANG_IN_PHASE:  # at the start of one of the job's phases
            assert phases(job.rhythm, job.checkpoint_every_minutes, fault.at_work_hours - 1e-6, fault.at_work_hours)
        if fault.kind is FaultKind.DEGRADED_HOST:
            assert 1.2 <= fault.slowdown_factor <= 3.0
            assert fault.slow_host is None or 0 <= fault.slow_host < job.instance_count
        else:
            assert fault.slowdown_factor == 1.0 and fault.slow_host is None
        hang_or_healthy = fault.kind in (*HANG_KINDS, FaultKind.SLOW_BUT_HEALTHY, *FINDING_KINDS)
        assert (fault.failure_reason is None) == hang_or_healthy


def test_some_jobs_are_noisy_and_only_those_whose_lines_say_their_batch_size_change_it():
    trace = generate_trace(200, 72, seed=7)
    plans = [job.step_plan for job in trace.jobs]
    assert all(plan.every_seconds == job.rhythm.log_every_seconds for plan, job in zip(plans, trace.jobs, strict=True))
    noisy = [plan.noise_sigma for plan in plans if plan.noise_sigma]
    assert 0.1 < len(noisy) / len(plans) < 0.3 and all(0.1 <= sigma <= 0.4 for sigma in noisy)
    changing = [job for job in trace.jobs if job.step_plan.batch_change_step is not None]
    assert changing and all(job.reporting.dialect.batch for job in changing)
    for job in changing:
        plan = job.step_plan
        assert plan.batch_at(plan.batch_change_step - 1) * 2 == plan.batch_at(plan.batch_change_step)
        assert plan.ends_at(plan.batch_change_step) < job.work_hours * 3600  # within the work


def test_the_shares_are_parameters_of_the_trace():
    none = generate_trace(100, 72, seed=3, debugger_share=0.0, spot_share=0.0)
    assert not any(job.uses_debugger_hook or job.spot for job in none.jobs)
    assert FaultKind.SPOT_INTERRUPTION not in {fault.kind for fault in none.faults}  # no spot job to interrupt
    hooked = generate_trace(100, 72, seed=3, debugger_share=1.0)
    assert all(job.uses_debugger_hook for job in hooked.jobs)


def test_failure_texts_are_real_texts_of_their_category():
    fixture = json.loads(FIXTURE.read_text())
    categories = {entry["text"]: entry["category"] for entry in fixture}
    for kind, (category, texts) in FAILURE_TEXTS.items():
        assert FaultKind(kind)
        for text in texts:
            assert categories.get(text) == category, text


def test_a_small_trace_still_draws_and_a_tiny_window_is_refused():
    trace = generate_trace(5, 4, seed=1)
    assert len(trace.jobs) == 5 and Counter(f.job_name for f in trace.faults).most_common(1)[0][1] == 1
    with pytest.raises(ValueError):
        generate_trace(5, 0.5, seed=1)
