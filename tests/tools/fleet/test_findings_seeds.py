"""`python -m trainguard_local.fleet.findings_seeds`: issue 28's figures pooled over several traces."""

from __future__ import annotations

import pytest

from trainguard_local.fleet import findings_seeds
from trainguard_local.fleet.findings_seeds import SeedFigures, pooled_lines
from trainguard_local.fleet.report_findings import Taken
from trainguard_local.simulation.fault_table import FaultKind

AUDIT = {"jobs": 10, "lines": 1000, "false_findings": {"slowdown": 0, "diverged": 0}}


def seed(number: int, slow: list[tuple[str, float | None]], waste: float) -> SeedFigures:
    taken = {
        FaultKind.DEGRADED_HOST: [Taken(f"s{number}-{n}", cadence, m) for n, (cadence, m) in enumerate(slow)],
        FaultKind.DIVERGED: [Taken(f"d{number}", "under 1 min", 1.0)],
    }
    costs = {("none", "degraded_host", True): 100.0, ("trainguard_with_leave", "degraded_host", True): waste}
    return SeedFigures(number, taken, 1, costs, 0, AUDIT)


def test_the_pooled_table_counts_every_seed_and_a_job_never_found_is_past_p95() -> None:
    figures = [
        seed(1, [("under 1 min", 10.0), ("under 1 min", 25.0)], 20.0),
        seed(2, [("under 1 min", 12.0), ("10 min and over", None)], 30.0),
    ]
    lines = pooled_lines(figures)
    assert "| degraded_host | under 1 min | 3 of 3 | 2 (goal 20 min) | 12.0 | 25.0 |" in lines
    assert "| degraded_host | 10 min and over | 0 of 1 | 0 (goal 20 min) | never | never |" in lines
    assert "| degraded_host | any | 3 of 4 | 2 (goal 20 min) | 12.0 | never |" in lines
    assert "| diverged | under 1 min | 2 of 2 | 2 (goal 5 min) | 1.0 | 1.0 |" in lines
    assert "| diverged | 1 to 10 min | 0 of 0 | 0 (goal 5 min) | - | - |" in lines
    assert "| degraded_host, jobs that report progress | 200 | 50 | 25.0% |" in lines
    assert "| diverged, all jobs | 0 | 0 | n/a |" in lines
    assert lines[-1].startswith("Divergences whose lines print no NaN loss (not counted above): 2. ")
    assert lines[-1].endswith("0 in the runs, 0 in the rules' audit of every healthy line (20 jobs, 2,000 lines).")


@pytest.mark.slow
def test_a_small_trace_runs_both_strategies_and_is_summed(monkeypatch, capsys) -> None:
    ran: list[int] = []
    real = findings_seeds.seed_figures

    def counted(number: int, jobs: int, hours: float) -> SeedFigures:
        ran.append(number)
        return real(number, jobs, hours)

    monkeypatch.setattr(findings_seeds, "seed_figures", counted)
    assert findings_seeds.main(["--seeds", "3-4", "--jobs", "6", "--hours", "8"]) == 0
    assert ran == [3, 4]
    out = capsys.readouterr().out
    assert out.startswith("Issue 28's findings over seeds 3-4 (6 jobs, 8 h each):")
    assert "| GPU-hours wasted | no guard | with leave | share |" in out
