"""The fleet run's figures in words: what each figure means, the table of figures per strategy, and
trainguard's own cost; the text `trainguard simulate` and `make demo` print, and the rows the HTML report
shows (fleet/html_report.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from trainguard_local.fleet.model import GUARDS
from trainguard_local.fleet.words import strategy_name
from trainguard_local.simulation.rhythm import CADENCE_CLASSES

# The figures, one line each (report.py defines them in full; docs/local-tools.md copies the definitions).
FIGURE_DEFINITIONS: dict[str, str] = {
    "wasted_gpu_hours": "GPU-hours billed that produced no kept progress: hung or idle time, the share of a slowed "
    "launch's time it made no progress in, and the work since the last checkpoint lost at each failure or stop (a "
    "diverged run's since its divergence), x instances x GPUs per instance",
    "wasted_dollars": "the same hours x instances x the on-demand price per instance-hour",
    "wasted_dollars_hung_or_idle": "the part of wasted_dollars that is hung or idle time: what a guard can save",
    "wasted_dollars_lost_since_checkpoint": "the part of wasted_dollars that is work lost since the last "
    "checkpoint: set by how often each job checkpoints",
    "completion_delay_hours": "the extra wall-clock hours until a job's work is done, compared with a fault-free "
    "run (p50, p95 over jobs that completed, and the total)",
    "jobs_completed": "jobs whose work is done by the end of the trace's window",
    "detect_minutes": "per fault kind, from the moment the fault shows to its first detection, by anyone (a "
    "divergence shows in its first NaN line under trainguard, at its strike in the anchors, a log interval at most "
    "before it)",
    "detect_minutes_by_cadence": "the hangs' (idle GPU, busy GPU, NCCL) detect_minutes by the cadence class of the "
    "job's own median log gap: "
    + "; ".join(
        f"{name}: {low:g} s to {'any' if math.isinf(high) else f'{high:g} s'}" for name, low, high in CADENCE_CLASSES
    )
    + " (p50, p95, hangs; not_parent_owned: the same without the jobs a parent owns)",
    "wasted_gpu_hours_lost_since_checkpoint_by_fault": "the work lost since the last checkpoint (GPU-hours), by the "
    "kind of each job's fault",
    "wasted_gpu_hours_slowed": "the part of wasted_gpu_hours a degraded host slowed away: 1 - 1/factor of the slowed "
    "launch's time",
    "wasted_gpu_hours_by_fault": "all of the wasted GPU-hours (hung or idle, slowed, lost since the last checkpoint) "
    "by the kind of each job's fault",
    "wasted_gpu_hours_by_fault_of_reporting_jobs": "wasted_gpu_hours_by_fault for the jobs that report their "
    "progress: the slowdown and divergence rules read their lines only",
    "false_findings": "a guard's notices of a slowdown or a divergence on a launch without that fault, by kind",
    "recover_minutes": "from the moment a transient fault shows to the moment training runs again",
    "actions_by_actor": "per actor (trainguard, the person on call, SageMaker, a parent), the actions it took and "
    "those refused, by kind",
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
    lines += _table([SHORT_HEADERS, *strategy_rows(answer)[1:]])
    lines.append("")
    lines += guard_cost_lines(answer.get("guard_cost"))
    lines.append("")
    lines += [f"{name}: {text}" for name, text in answer.get("definitions", FIGURE_DEFINITIONS).items()]
    anchors = ", ".join(name for name in answer["strategies"] if name not in GUARDS)
    lines.append(f"the anchors ({anchors}) are models of their documentation; see 'sources'")
    if answer.get("written"):
        lines.append("")
        lines += [f"wrote {what}: {path}" for what, path in answer["written"].items()]
    return "\n".join(lines)


HANG_COLUMNS = (("hang_busy_gpu", "busy"), ("hang_idle_gpu", "idle"))  # the hang kinds with a column each
# The strategy table's columns: each header in words, and what it counts (shown beside the table in the HTML report).
STRATEGY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("strategy", "who acts on a fault (the strategies are described above the table)"),
    ("wasted GPU-hours", FIGURE_DEFINITIONS["wasted_gpu_hours"]),
    ("wasted dollars", FIGURE_DEFINITIONS["wasted_dollars"]),
    ("total delay (h)", "the extra hours until each job's work was done, against a fault-free run, summed over jobs"),
    ("95th-percentile delay (h)", "95% of the jobs were done at most this many hours late"),
    ("jobs finished", FIGURE_DEFINITIONS["jobs_completed"] + ", of all the jobs (all would be, without faults)"),
    *(
        (
            f"{gpus}-GPU hang found after (min, 95th percentile)",
            f"from the moment a job hung with its GPUs {gpus} to the first detection, by anyone (the person on call "
            "included): 95% of these hangs were found this soon or sooner",
        )
        for _, gpus in HANG_COLUMNS
    ),
    ("duplicate actions", FIGURE_DEFINITIONS["duplicate_actions"]),
    ("wrong actions", FIGURE_DEFINITIONS["wrong_actions"]),
)
# The same headers, shorter, for the table a terminal shows (the summary's text).
SHORT_HEADERS = ("strategy", "wasted GPU-h", "wasted $", "delay total h", "delay p95 h", "jobs done",
                 *(f"{gpus}-GPU hang found p95 min" for _, gpus in HANG_COLUMNS), "duplicate", "wrong")  # fmt: skip


def strategy_rows(answer: dict[str, Any]) -> list[tuple[str, ...]]:
    """The figures per strategy as table rows, the headers first (the summary's text and the HTML report)."""
    trace = answer["trace"]
    rows: list[tuple[str, ...]] = [tuple(header for header, _ in STRATEGY_COLUMNS)]
    for name, figures in answer["strategies"].items():
        delay = figures["completion_delay_hours"]
        rows.append(
            (
                strategy_name(name),
                _fmt(figures["wasted_gpu_hours"]),
                _fmt(figures["wasted_dollars"], 0),
                _fmt(delay["total"]),
                _fmt(delay["p95"]),
                f"{figures['jobs_completed']} of {trace['jobs']}",
                *(_fmt(figures["detect_minutes"].get(kind, {}).get("p95")) for kind, _ in HANG_COLUMNS),
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
