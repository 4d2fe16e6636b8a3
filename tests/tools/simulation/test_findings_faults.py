"""Issue 28's faults and healthy variety in the simulation core, read by the product's own readers and rules: a degraded
host stretches its launch's clock, a diverged run prints NaN in every dialect that prints a loss, a planned change of
batch size is printed where the dialect prints one, and a job noisy by nature varies its step times. Healthy jobs'
lines, folded line by line through the product's rules, give no finding; a degraded host's and a divergence's do."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from trainguard.domain.progress_findings import judge_loss, judge_pace
from trainguard.domain.progress_lines import read_progress_line
from trainguard.domain.progress_rule import ProgressRule, compile_template
from trainguard.domain.progress_settings import ProgressSettings
from trainguard.domain.progress_watch import ProgressState, advance
from trainguard_local.fleet.report_findings import findings_audit
from trainguard_local.simulation.activity import LaunchActivity, worded
from trainguard_local.simulation.fault_table import SPINNING_PER_GPU, WORKING_PER_GPU, FaultKind
from trainguard_local.simulation.job_spec import JobSpec
from trainguard_local.simulation.reporting import CONTRACT, FRAMEWORKS, TAG_RULE, Dialect, JobReporting, Reporting
from trainguard_local.simulation.rhythm import JobRhythm
from trainguard_local.simulation.steps import StepPlan
from trainguard_local.simulation.trace import Trace, TraceParameters

BASE = datetime(2026, 12, 6, tzinfo=UTC)
EVERY_20_S = JobRhythm(log_every_seconds=20.0)
SETTINGS = ProgressSettings()  # the product's defaults


def job_of(dialect: Dialect, plan: StepPlan | None = None, rhythm: JobRhythm = EVERY_20_S) -> JobSpec:
    kind = Reporting.TAG_RULE if dialect is TAG_RULE else Reporting.PROGRESS
    return JobSpec(
        name="fleet-0001-llama-pretrain", instance_type="ml.p4d.24xlarge", instance_count=4, gpus_per_instance=8,
        price_per_instance_hour=37.7, submitted_at=0.0, work_hours=12.0, checkpoint_every_minutes=30,
        uses_debugger_hook=False, spot=False, in_vpc=False, framework="pytorch-2.5", max_runtime_hours=24.0,
        rhythm=rhythm, reporting=JobReporting(kind, dialect), steps=plan,
    )  # fmt: skip


def launch_of(job: JobSpec) -> LaunchActivity:
    return LaunchActivity(job.rhythm, job.checkpoint_every_minutes, job.gpus_per_instance, 0.0, steps=job.step_plan)


def rule_of(job: JobSpec) -> ProgressRule | None:
    pattern = job.reporting.tags.get("trainguard:progress-pattern")
    rule = compile_template(pattern) if pattern else None
    assert not isinstance(rule, str)
    return rule


def folded(job: JobSpec, launch: LaunchActivity, until: float) -> list[tuple[float, ProgressState]]:
    """The product's progress state after each of the launch's lines up to `until` (hours), as the log function
    folds them in."""
    state, rule, states = ProgressState(), rule_of(job), []
    for at, text in worded(launch.lines(-1e-6, until), job):  # from the line as training starts
        state = advance(state, read_progress_line(text, rule), BASE + timedelta(hours=at))
        states.append((at, state))
    return states


def test_a_degraded_host_stretches_the_launchs_clock_from_its_strike() -> None:
    launch = launch_of(job_of(CONTRACT))
    launch.strike(FaultKind.DEGRADED_HOST, 1.0, factor=2.5)
    assert launch.progress_at(0.5) == 0.5 and launch.progress_at(2.0) == pytest.approx(1.4)
    assert launch.at_progress(1.4) == pytest.approx(2.0) and launch.at_progress(0.5) == 0.5
    steps = [at for at, token in launch.lines(0.9, 1.2) if token.kind.value == "step"]
    gaps = {round((b - a) * 3600, 6) for a, b in itertools.pairwise(steps)}
    assert gaps == {20.0, 50.0}  # 20 s before the strike, 2.5 x 20 s after it
    written = [at for at, _ in launch.checkpoints(0.0, 3.0)]
    assert written[1] - written[0] == pytest.approx(0.5) and written[-1] - written[-2] == pytest.approx(1.25)


def test_a_host_waiting_on_its_input_reads_low_and_the_others_wait_on_it_while_a_slow_gpu_reads_as_busy() -> None:
    bound, gpu_bound = launch_of(job_of(CONTRACT)), launch_of(job_of(CONTRACT))
    bound.strike(FaultKind.DEGRADED_HOST, 1.0, factor=2.0, slow_host=2)
    gpu_bound.strike(FaultKind.DEGRADED_HOST, 1.0, factor=2.0)
    assert [bound.gpu_per_host(0.5, host) for host in range(4)] == [WORKING_PER_GPU * 8] * 4
    assert [bound.gpu_per_host(1.5, host) for host in range(4)] == [
        SPINNING_PER_GPU * 8, SPINNING_PER_GPU * 8, WORKING_PER_GPU / 2 * 8, SPINNING_PER_GPU * 8
    ]  # fmt: skip
    assert {gpu_bound.gpu_per_host(1.5, host) for host in range(4)} == {WORKING_PER_GPU * 8}


PRINTS_NAN = [CONTRACT, TAG_RULE, *(d for d in FRAMEWORKS if "loss" in d.step and not d.loss_part)]


@pytest.mark.parametrize("dialect", PRINTS_NAN, ids=lambda d: d.name)
def test_a_diverged_run_prints_nan_and_the_product_finds_it_within_its_reports(dialect: Dialect) -> None:
    job = job_of(dialect)
    launch = launch_of(job)
    launch.strike(FaultKind.DIVERGED, 1.0)
    states = folded(job, launch, 1.1)
    assert all(state.loss.bad_reports == 0 for at, state in states if at < 1.0)
    found = next(at for at, state in states if judge_loss(state, SETTINGS))
    assert 1.0 < found <= 1.0 + 3 * 20 / 3600 + 1e-9  # its third NaN report in a row


def test_megatron_leaves_a_nan_loss_out_of_its_line_and_the_rule_cannot_see_it() -> None:
    """Megatron-LM prints a loss only `if avg > 0.0` (training_log): its diverged run's lines carry no loss, and
    docs/pace.md says the rule does not read its NaN iterations."""
    megatron = next(d for d in FRAMEWORKS if d.name == "megatron")
    job = job_of(megatron)
    launch = launch_of(job)
    launch.strike(FaultKind.DIVERGED, 1.0)
    texts = [text for at, text in worded(launch.lines(1.0, 1.1), job)]
    assert texts and all("lm loss" not in text and "global batch size" in text for text in texts)
    assert {read_progress_line(text).loss for text in texts} == {None}
    assert not any(judge_loss(state, SETTINGS) for _, state in folded(job, launch, 1.1))


def test_a_planned_batch_change_is_printed_read_and_no_finding() -> None:
    megatron = next(d for d in FRAMEWORKS if d.name == "megatron")
    plan = StepPlan(20.0, batch=megatron.batch, batch_change_step=360, batch_change_ratio=1.9)  # at 2 hours
    job = job_of(megatron, plan)
    texts = [text for _, text in worded(launch_of(job).lines(1.9, 2.2), job)]
    batches = {read_progress_line(text).batch for text in texts}
    assert batches == {1024, 2048}
    states = folded(job, launch_of(job), 6.0)
    assert not any(judge_pace(state, SETTINGS) for _, state in states)


def test_a_noisy_job_varies_its_step_times_and_gives_no_finding_over_its_work() -> None:
    plan = StepPlan(20.0, noise_sigma=0.4, noise_seed="test/noisy")
    job = job_of(CONTRACT, plan)
    launch = launch_of(job)
    steps = [at for at, token in launch.lines(0.0, 1.0) if token.kind.value == "step"]
    gaps = [(b - a) * 3600 for a, b in itertools.pairwise(steps)]
    assert min(gaps) < 12.0 and max(gaps) > 35.0 and sum(gaps) / len(gaps) == pytest.approx(20.0, rel=0.1)
    assert launch_of(job).lines(0.0, 1.0) == launch.lines(0.0, 1.0)  # the same steps in every launch
    states = folded(job, launch, 12.0)
    assert not any(judge_pace(state, SETTINGS) for _, state in states)


@pytest.mark.parametrize("factor", [1.5, 2.2, 3.0])
def test_a_degraded_host_is_found_within_the_slowdown_minutes_and_its_newest_intervals(factor: float) -> None:
    job = job_of(CONTRACT)
    launch = launch_of(job)
    launch.strike(FaultKind.DEGRADED_HOST, 2.0, factor=factor)
    states = folded(job, launch, 3.0)
    assert not any(judge_pace(state, SETTINGS) for at, state in states if at < 2.0)
    found = next(at for at, state in states if judge_pace(state, SETTINGS))
    assert (found - 2.0) * 60 <= 10 + 5 * 20 * factor / 60 + 1  # the slowdown minutes, once the recent median turns


def test_exact_plans_step_as_before() -> None:
    plan = StepPlan(1500.0)
    assert plan.exact and plan.ends_at(3) == 4500.0 and plan.step_at(4499.9) == 2 and plan.step_at(4500.0) == 3
    assert math.isclose(StepPlan(20.0, noise_sigma=0.2, noise_seed="s").ends_at(1000) / 20000, 1.0, rel_tol=0.05)


def test_the_audit_counts_a_change_the_lines_do_not_print_and_not_one_they_do() -> None:
    """The rules' audit of a trace's healthy lines (fleet/report_findings.py) can see a false finding: a tag rule's
    lines that say no batch size, their step time doubled on purpose, read as a slowdown; the contract's, which print
    it, do not."""
    plan = StepPlan(20.0, batch_change_step=360, batch_change_ratio=1.9)  # at 2 hours of its 12
    silent = job_of(TAG_RULE, plan)
    printed = replace(job_of(CONTRACT, replace(plan, batch=CONTRACT.batch)), name="fleet-0002-llama-pretrain")
    audit = findings_audit(Trace(1, 24.0, TraceParameters(0.2, 0.2, 0.3, 0.35), (silent, printed)))
    assert audit["jobs"] == 2 and audit["batch_change_jobs"] == 2 and audit["lines"] == 2 * (360 + 947)  # 38 s steps
    assert audit["false_findings"] == {"slowdown": 1, "diverged": 0}
    assert audit["jobs_with_false_findings"] == {"slowdown": [silent.name]}
