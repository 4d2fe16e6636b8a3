"""The fleet run's figures in words: what each figure means, the table of figures per strategy, and
trainguard's own cost; the text `trainguard simulate` and `make demo` print, and the rows the HTML report
shows (fleet/html_report.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from trainguard_local.simulation.fault_table import HANG_KINDS
from trainguard_local.simulation.rhythm import CADENCE_CLASSES

# The figures, one line each (report.py defines them in full; docs/local-tools.md copies the definitions).
FIGURE_DEFINITIONS: dict[str, str] = {
    "wasted_gpu_hours": "GPU-hours billed that produced no kept progress: hung or idle time plus the work since "
    "the last checkpoint lost at each failure or stop, x instances x GPUs per instance",
    "wasted_dollars": "the same hours x instances x the on-demand price per instance-hour",
    "completion_delay_hours": "the extra wall-clock hours until a job's work is done, compared with a fault-free "
    "run (p50, p95 over jobs that completed, and the total)",
    "jobs_completed": "jobs whose work is done by the end of the trace's window",
    "detect_minutes": "per fault kind, from the moment the fault shows to its first detection, by anyone",
    "detect_minutes_by_cadence": "the hangs' (idle GPU, busy GPU, NCCL) detect_minutes by the cadence class of the "
    "job's own median log gap: "
    + "; ".join(
        f"{name}: {low:g} s to {'any' if math.isinf(high) else f'{high:g} s'}" for name, low, high in CADENCE_CLASSES
    )
    + " (p50, p95, hangs; not_parent_owned: the same without the jobs a parent owns)",
    "wasted_gpu_hours_lost_since_checkpoint_by_fault": "the work lost since the last checkpoint (GPU-hours), by the "
    "kind of each job's fault",
    "recover_minutes": "from the moment a transient fault shows to the moment training runs again",
    "duplicate_actions": "actions that succeeded on a target already acted on the same way",
    "wrong_actions": "a stop of a healthy job, or a relaunch of a user's error unfixed",
    "guard_cost": "trainguard's own AWS cost at list prices (fleet/prices.py), from what the run counted at its own "
    "clients; per guarded instance-hour (billed instance-hours of the guarded jobs) and as a share of their compute",
}


def render_summary(answer: dict[str, Any]) -> str:
    """The table of figures per strategy, then the definitions and the files written."""
    trace = answer["trace"]
    lines = [
        f"trace: {trace['jobs']} jobs, {trace['hours']:g} hours, seed {trace['seed']}, "
        f"{len(answer['faults'])} faults, {trace['gpus']} GPUs",
        "",
    ]
    lines += _table(strategy_rows(answer))
    lines.append("")
    lines += guard_cost_lines(answer.get("guard_cost"))
    lines.append("")
    lines += [f"{name}: {text}" for name, text in answer.get("definitions", FIGURE_DEFINITIONS).items()]
    anchors = ", ".join(name for name in answer["strategies"] if name != "trainguard")
    lines.append(f"the anchors ({anchors}) are models of their documentation; see 'sources'")
    if answer.get("written"):
        lines.append("")
        lines += [f"wrote {what}: {path}" for what, path in answer["written"].items()]
    return "\n".join(lines)


def strategy_rows(answer: dict[str, Any]) -> list[tuple[str, ...]]:
    """The figures per strategy as table rows, the headers first (the summary's text and the HTML report)."""
    trace = answer["trace"]
    headers = (
        "strategy",
        "wasted GPU-h",
        "wasted $",
        "delay total h",
        "delay p95 h",
        "completed",
        *(f"{kind.value} p95 min" for kind in sorted(HANG_KINDS)),
        "duplicate",
        "wrong",
    )
    rows: list[tuple[str, ...]] = [headers]
    for name, figures in answer["strategies"].items():
        delay = figures["completion_delay_hours"]
        rows.append(
            (
                name,
                _fmt(figures["wasted_gpu_hours"]),
                _fmt(figures["wasted_dollars"], 0),
                _fmt(delay["total"]),
                _fmt(delay["p95"]),
                f"{figures['jobs_completed']}/{trace['jobs']}",
                *(_fmt(figures["detect_minutes"].get(kind.value, {}).get("p95")) for kind in sorted(HANG_KINDS)),
                str(figures["duplicate_actions"]),
                str(figures["wrong_actions"]),
            )
        )
    return rows


def guard_cost_lines(cost: dict[str, Any] | None) -> list[str]:
    """trainguard's own AWS cost, in a few lines: the total, per guarded instance-hour, the share of the
    guarded compute, and the three largest items."""
    if cost is None:
        return ["guard cost: not counted (trainguard did not run)"]
    share = cost["share_of_guarded_compute_percent"]
    verdict = "" if share is None else f" (goal: at most {cost['goal_share_percent']}%)"
    items = sorted(cost["breakdown"].items(), key=lambda item: -item[1]["dollars"])[:3]
    return [
        f"guard cost: ${cost['total_dollars']:,.2f} for {cost['guarded_instance_hours']:,.0f} guarded instance-hours"
        f" = ${_fmt(cost['dollars_per_guarded_instance_hour'], 6)} per instance-hour, "
        f"{_fmt(share, 4)}% of the guarded compute's ${cost['guarded_compute_dollars']:,.0f}{verdict}",
        "  largest: " + ", ".join(f"{name} ${entry['dollars']:,.2f}" for name, entry in items),
    ]


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = []
    for index, row in enumerate(rows):
        cells = [
            cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
        if index == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


def _fmt(value: float | None, decimals: int = 1) -> str:
    return "-" if value is None else f"{value:,.{decimals}f}"
