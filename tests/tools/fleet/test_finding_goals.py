"""Issue 28's goals as the report page and BENCHMARKS.md judge them (fleet/goals.py: finding_goals), on reports
written by hand: each goal met, missed or not measurable for the reason the figures give."""

from dataclasses import replace
from typing import Any

import pytest

from tests.tools.fleet.cases import PERSON, fault, job, trace_of_many
from trainguard_local.bench.against_goals import finding_goals_markdown
from trainguard_local.fleet.anchors import no_guard
from trainguard_local.fleet.goals import finding_goals
from trainguard_local.fleet.report_findings import findings_found
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.reporting import CONTRACT, FRAMEWORKS, JobReporting, Reporting


def _found(p95: float | None, jobs: int, missed: list[str], chatty_p95: float | None = None) -> dict[str, Any]:
    figures = {"jobs": jobs, "found": jobs - len(missed), "p50": p95, "p95": p95, "missed": missed}
    if chatty_p95 is not None:  # one job that logs more than once a minute, found
        figures["by_cadence"] = {"under 1 min": {"jobs": 1, "found": 1, "p50": chatty_p95, "p95": chatty_p95}}
    return figures


def _report(
    *,
    slowdown: dict[str, Any] | None = None,
    diverged: dict[str, Any] | None = None,
    run_false: int = 0,
    audit_false: int = 0,
    leave_waste: tuple[float, float] = (20.0, 5.0),
    with_leave: bool = True,
) -> dict[str, Any]:
    def strategy(degraded: float, divergence: float) -> dict[str, Any]:
        waste = {"degraded_host": degraded, "diverged": divergence, "none": 3.0}
        return {
            "findings_found": {
                "degraded_host": slowdown or _found(12.0, 4, []),
                "diverged": diverged or _found(3.0, 3, []),
            },
            "false_findings": {"slowdown": run_false, "diverged": 0},
            "wasted_gpu_hours_by_fault": waste,
            "wasted_gpu_hours_by_fault_of_reporting_jobs": {k: v / 2 for k, v in waste.items()},
        }

    strategies = {"none": strategy(100.0, 40.0), "trainguard": strategy(60.0, 40.0)}
    if with_leave:
        strategies["trainguard_with_leave"] = strategy(*leave_waste)
    audit = {"jobs": 10, "lines": 5000, "noisy_jobs": 2, "batch_change_jobs": 1}
    return {"strategies": strategies, "findings_audit": {**audit, "false_findings": {"slowdown": audit_false}}}


def test_every_goal_is_met_when_found_in_time_none_false_and_leave_wastes_a_quarter():
    checks = finding_goals(_report())
    assert [check.issue for check in checks] == [28] * 5
    assert all(check.met for check in checks), [(c.goal, c.measured) for c in checks if not c.met]
    assert "12.0 min, 4 of 4 jobs that report progress found" in checks[0].measured
    assert "0 in the run, 0 in the audit (10 jobs, 5,000 lines judged; 2 noisy, 1 changing" in checks[2].measured
    assert checks[3].measured.startswith("20.0% (20.0 against 100.0 GPU-h); of the jobs that report progress: 20.0%")


@pytest.mark.parametrize(
    ("changes", "missed_goal"),
    [
        ({"slowdown": _found(21.0, 4, [])}, "slowdown"),
        ({"diverged": _found(6.0, 3, [])}, "divergence"),
        ({"diverged": _found(2.0, 5, ["late-job"])}, "divergence"),  # one of five never found: past p95
        ({"run_false": 1}, "no"),
        ({"audit_false": 2}, "no"),
        ({"leave_waste": (30.0, 5.0)}, "with"),
    ],
)
def test_each_goal_is_missed_for_its_own_reason(changes, missed_goal):
    checks = finding_goals(_report(**changes))
    missed = [check for check in checks if not check.met]
    assert len(missed) == 1
    assert missed[0].goal.removeprefix("a ").startswith(missed_goal)


def test_a_missed_job_is_named_and_a_kind_without_jobs_has_nothing_to_measure():
    checks = finding_goals(_report(diverged=_found(None, 2, ["a", "b"]), slowdown=_found(None, 0, [])))
    assert checks[0].met is None
    assert checks[1].met is False
    assert checks[1].measured == "none found, 0 of 2 jobs that report progress found (missed: a, b)"


def test_the_jobs_that_log_more_than_once_a_minute_are_measured_apart():
    checks = finding_goals(_report(diverged=_found(14.0, 3, [], chatty_p95=1.5)))
    assert checks[1].met is False
    assert checks[1].measured.endswith("; jobs that log more than once a minute: 1 of 1 found, p95 1.5 min")


def test_without_the_leave_strategy_the_waste_goals_say_how_to_measure_them():
    checks = finding_goals(_report(with_leave=False))
    assert [c.met for c in checks[3:]] == [None, None]
    assert all("--with-leave" in c.measured for c in checks[3:])


def test_a_report_without_findings_figures_has_no_issue_28_goals():
    report = _report()
    del report["strategies"]["trainguard"]["findings_found"]
    assert finding_goals(report) == []


def test_benchmarks_md_lists_the_goals_and_the_waste_of_each_strategy():
    lines = finding_goals_markdown(_report())
    assert lines[0].startswith("Against issue 28's goals")
    assert sum(line.startswith("- ") for line in lines) == 5
    assert "| trainguard_with_leave | 20.0 / 10.0 | 5.0 / 2.5 |" in lines
    assert "| none | 100.0 / 50.0 | 40.0 / 20.0 |" in lines


def test_divergences_whose_lines_print_no_nan_are_named_apart_and_said() -> None:
    """A diverged DeepSpeed run (its step lines print no loss) and a Megatron-LM one (a NaN loss left out) have no first
    NaN line for the goal to count from: findings_found names them in `no_nan_line`, the goal's line says how many."""
    dialects = {dialect.name: dialect for dialect in FRAMEWORKS}
    assert [d.shows_a_nan_loss for d in (CONTRACT, dialects["megatron"], dialects["deepspeed"], dialects["nemo"])] == [
        True,
        False,
        False,
        True,
    ]
    specs = [
        replace(job(), name=name, reporting=JobReporting(Reporting.FRAMEWORK, dialects[dialect]))
        for name, dialect in (("job-ds", "deepspeed"), ("job-mlm", "megatron"), ("job-nemo", "nemo"))
    ]
    trace = trace_of_many(*((spec, fault(spec, FaultKind.DIVERGED, 2.0)) for spec in specs))
    found = findings_found(trace, no_guard(PERSON).run(trace), "trainguard")["diverged"]
    assert (found["jobs"], found["found"], found["missed"]) == (1, 0, ["job-nemo"])
    assert found["no_nan_line"] == ["job-ds", "job-mlm"]
    report = _report(diverged={**_found(None, 1, ["job-nemo"]), "no_nan_line": ["job-ds", "job-mlm"]})
    assert finding_goals(report)[1].measured.endswith(
        "; besides, 2 whose lines print no NaN loss, which no rule on them can see"
    )
