"""BENCHMARKS.md's lines against the issues' goals (5, 11 and 14), each figure read from the benchmark's report,
with the tables that break the figures down (by fault, by cadence class)."""

from __future__ import annotations

from typing import Any

from trainguard.config import GuardConfig
from trainguard_local.fleet.goal_floors import floor_lines
from trainguard_local.fleet.goals import (
    CHATTY,
    DEGRADED,
    DELAY_BELOW,
    DETECT_SLACK_MINUTES,
    DIVERGED,
    HUNG_AT_MOST,
    SYNC_LOSS_AT_MOST,
    WASTE_BELOW,
    finding_goals,
    progress_goals,
    sync_stopped_loss,
)
from trainguard_local.fleet.model import GUARDS


def goals_markdown(report: dict[str, Any]) -> list[str]:
    """trainguard against issue 5's goals, each figure read from the report."""
    strategies = report["strategies"]
    guard = strategies["trainguard"]

    def below(other: str, field: str = "wasted_gpu_hours") -> str:
        mine, theirs = guard[field], strategies[other][field]
        return f"{1 - mine / theirs:.1%}" if theirs else "n/a"

    delays = {name: f["completion_delay_hours"]["total"] for name, f in strategies.items() if name not in GUARDS}
    best_other = min(delays, key=lambda name: delays[name])
    best_delay, own_delay = delays[best_other], guard["completion_delay_hours"]["total"]
    where_rule = "wasted_gpu_hours_where_debugger_rule_applies"
    rule_jobs = report.get("trace", {}).get("jobs_where_debugger_rule_applies", "?")
    defaults = GuardConfig(ledger_table_name="-", topic_arn="-")
    detect = guard.get("detect_minutes", {})
    return [
        "Against the goals (issue 5), from the table above:",
        f"- wasted GPU-hours {below('none')} below no guard and {below('sagemaker_retry')} below SageMaker's "
        f"RetryStrategy (goal: {WASTE_BELOW:.0%}); on the "
        f"{rule_jobs} jobs where Debugger's rule applies (its hook, not spot, not in a VPC): trainguard "
        f"{guard[where_rule]:,.1f}, the rule {strategies['debugger_rule'][where_rule]:,.1f} (goal: no worse);",
        f"- total completion delay {1 - own_delay / best_delay:.1%} below the best other strategy ({best_other}, "
        f"{best_delay:,.1f} h) (goal: {DELAY_BELOW:.0%});",
        f"- p95 hang detection {detect.get('hang_idle_gpu', {}).get('p95')} min for idle GPUs (threshold "
        f"{defaults.gpu_idle_minutes} min) and {detect.get('hang_busy_gpu', {}).get('p95')} min for silent busy "
        f"GPUs (threshold {defaults.stall_minutes} min) (goal: threshold + {DETECT_SLACK_MINUTES} min);",
        f"- duplicate actions {guard['duplicate_actions']}, wrong actions {guard['wrong_actions']} (goal: 0).",
        "",
        *_today_goal(strategies),
        "",
        *_rhythm_goals(strategies, report.get("goal_floors")),
        *finding_goals_markdown(report),
        "Of trainguard's wasted GPU-hours, "
        f"{guard.get('wasted_gpu_hours_hung_or_idle', 0):,.1f} are hung or idle time and "
        f"{guard.get('wasted_gpu_hours_lost_since_checkpoint', 0):,.1f} are work lost since the last checkpoint "
        f"(no guard: {strategies['none'].get('wasted_gpu_hours_hung_or_idle', 0):,.1f} and "
        f"{strategies['none'].get('wasted_gpu_hours_lost_since_checkpoint', 0):,.1f}). A guard can shorten the first; "
        "the second is set by how often the training script checkpoints (the trace draws an interval per job), "
        "and every strategy loses it at each failure.",
        "",
        *_delay_by_fault(strategies),
    ]


def _delay_by_fault(strategies: dict[str, Any]) -> list[str]:
    own_delay = strategies["trainguard"]["completion_delay_hours"]["total"]
    own_by_fault = strategies["trainguard"].get("completion_delay_hours_by_fault", {})
    users = own_by_fault.get("user_code_error", 0.0) + own_by_fault.get("out_of_memory", 0.0)
    quota = own_by_fault.get("quota_wall", 0.0)
    return [
        "Completion delay by the kind of each job's fault (total hours; jobs without a fault under `none`):",
        "",
        *_header("fault", strategies),
        *_delay_rows(strategies),
        "",
        f"Of trainguard's {own_delay:,.1f} h, {users:,.1f} h are jobs that failed in the user's code (user errors, out "
        "of memory): they wait for a person under every strategy, trainguard included, because retrying them would "
        f"be a wrong action; and {quota:,.1f} h are jobs waiting for a quota increase to be approved.",
        "",
    ]


def _rhythm_goals(strategies: dict[str, Any], floors: dict[str, Any] | None) -> list[str]:
    """Issue 14's goals: hung time, wrong actions, hang-to-stop by cadence, and the work lost by fault; with
    `floors`, how far the goals can go on the trace."""
    guard, none = strategies["trainguard"], strategies["none"]
    hung, hung_none = guard["wasted_gpu_hours_hung_or_idle"], none["wasted_gpu_hours_hung_or_idle"]
    own = "wasted_gpu_hours_hung_or_idle_not_parent_owned"
    chatty = guard["detect_minutes_by_cadence"].get(CHATTY, {})
    sync = sync_stopped_loss

    return [
        "Against issue 14's goals (each job has a log rhythm: simulation/rhythm.py):",
        f"- hung or idle GPU-hours: trainguard {hung:,.1f}, no guard {hung_none:,.1f}: {hung / hung_none:.1%} of no "
        f"guard's (goal: at most {HUNG_AT_MOST:.0%}, parents' jobs included since issue 27); without the jobs a "
        f"parent owns: {guard[own]:,.1f} against {none[own]:,.1f}, {guard[own] / none[own]:.1%};",
        f"- wrong actions {guard['wrong_actions']} (goal: 0);",
        f"- hang to stop, jobs whose median log gap is under a minute: p95 {chatty.get('p95')} min over "
        f"{chatty.get('hangs')} hangs; {chatty.get('not_parent_owned', {}).get('p95')} min over the "
        f"{chatty.get('not_parent_owned', {}).get('hangs')} a parent does not own (issue 27 sets the goals by how "
        "each job reports its progress: below);",
        f"- work lost to checkpoint_sync_stopped: trainguard {sync(guard):,.1f} GPU-h, no guard {sync(none):,.1f}: "
        f"{sync(guard) / sync(none):.0%} of no guard's (goal: at most {SYNC_LOSS_AT_MOST:.0%}). trainguard warns "
        f"{guard['detect_minutes'].get('checkpoint_sync_stopped', {}).get('p50')} min (p50) after the sync stops; the "
        "person acts a response time later (median 4 h), and the failure often strikes first.",
        "",
        "Against issue 27's goals (how each job reports its progress: simulation/reporting.py; the figures by "
        "reporting class are the JSON report's `detect_minutes_by_reporting` and `wrong_actions_by_reporting`):",
        *(f"- {check.goal}: {check.measured} ({_met(check.met)});" for check in progress_goals(guard)),
        "",
        *_rhythm_floors(floors),
        *_cadence_table(strategies),
        *_lost_by_fault_table(strategies),
    ]


def finding_goals_markdown(report: dict[str, Any]) -> list[str]:
    """Issue 28's goals, and the GPU-hours a degraded host and a diverged run waste under each strategy."""
    checks = finding_goals(report)
    if not checks:
        return []
    kinds = (DEGRADED, DIVERGED)
    cells = "wasted_gpu_hours_by_fault", "wasted_gpu_hours_by_fault_of_reporting_jobs"
    return [
        "Against issue 28's goals (a degraded host and a diverged run, found from the jobs' progress lines; "
        "`trainguard_with_leave` is trainguard on jobs whose owners tagged `trainguard:relaunch-if-slow=true` and "
        "`trainguard:stop-if-diverged=true`; the figures are the JSON report's `findings_found`, `false_findings`, "
        "`findings_audit` and `wasted_gpu_hours_by_fault`):",
        *(f"- {check.goal}: {check.measured} ({_met(check.met)});" for check in checks),
        "",
        "GPU-hours these faults waste (all jobs / the jobs that report progress):",
        "",
        *_header("strategy", kinds),
        *(
            f"| {name} | "
            + " | ".join(" / ".join(f"{f[cell].get(kind) or 0.0:,.1f}" for cell in cells) for kind in kinds)
            + " |"
            for name, f in report["strategies"].items()
        ),
        "",
    ]


def _cadence_table(strategies: dict[str, Any]) -> list[str]:
    classes = list(strategies["trainguard"]["detect_minutes_by_cadence"])

    def cell(figures: dict[str, Any]) -> str:
        mine = figures["not_parent_owned"]
        return (
            f"{figures['p50']} / {figures['p95']} ({figures['hangs']}); {mine['p50']} / {mine['p95']} ({mine['hangs']})"
        )

    return [
        "Hang detection minutes by cadence class (p50 / p95 (hangs); the same without the jobs a parent owns):",
        "",
        *_header("strategy", classes),
        *(
            f"| {name} | " + " | ".join(cell(f["detect_minutes_by_cadence"][c]) for c in classes) + " |"
            for name, f in strategies.items()
        ),
        "",
    ]


def _lost_by_fault_table(strategies: dict[str, Any]) -> list[str]:
    field = "wasted_gpu_hours_lost_since_checkpoint_by_fault"
    kinds = sorted({k for f in strategies.values() for k in f[field]})
    return [
        "Work lost since the last checkpoint by fault (GPU-hours):",
        "",
        *_header("fault", strategies),
        *(
            f"| {kind} | " + " | ".join(f"{f[field].get(kind, 0.0):,.1f}" for f in strategies.values()) + " |"
            for kind in kinds
        ),
        "",
    ]


def _rhythm_floors(found: dict[str, Any] | None) -> list[str]:
    """How far the three missed goals can go on this trace, for a guard that keeps issue 14's rules
    (fleet/goal_floors.py)."""
    if not found:
        return []
    return [
        "How far those goals can go on this trace, for a guard that keeps the issue's rules "
        "(`python -m trainguard_local.fleet.goal_floors`; how each floor is derived, and for which rules: "
        "fleet/goal_floors.py):",
        *floor_lines(found),
        "",
    ]


def _header(first: str, columns: Any) -> list[str]:
    """A markdown table's header: `first`, then one column per name in `columns`."""
    return ["| " + " | ".join([first, *columns]) + " |", "|---|" + "---|" * len(columns)]


def _today_goal(strategies: dict[str, Any]) -> list[str]:
    """Issue 11's goal: the delay of the jobs that did not fail in their own code, against every other strategy
    (AWS Batch included), with the actions on parents' jobs counted as wrong."""
    field = "completion_delay_hours_not_own_code"
    guard = strategies["trainguard"][field]
    others = {name: f[field] for name, f in strategies.items() if name not in GUARDS}
    best = min(others, key=lambda name: others[name])
    by_fault = strategies["trainguard"].get("completion_delay_hours_by_fault", {})
    largest = sorted(
        ((kind, hours) for kind, hours in by_fault.items() if kind not in ("user_code_error", "out_of_memory")),
        key=lambda item: -item[1],
    )[:3]
    mine = strategies["trainguard"]
    return [
        f"Against issue 11's goal: the completion delay of the jobs that did not fail in their own code is "
        f"{guard:,.1f} h under trainguard, {1 - guard / others[best]:.1%} below the best other strategy ({best}, "
        f"{others[best]:,.1f} h; goal: {DELAY_BELOW:.0%}), with wrong actions (a relaunch of a parent's job counts) "
        f"{mine['wrong_actions']} and duplicate actions {mine['duplicate_actions']}. "
        "Its largest parts: " + ", ".join(f"{kind} {hours:,.1f} h" for kind, hours in largest) + "; "
        f"{mine['completion_delay_hours_of_parents_jobs']:,.1f} h of the total are jobs a pipeline or a Batch queue "
        "owns: trainguard stops their verified hangs and leaves what follows to the parent (issue 27)."
    ]


def _delay_rows(strategies: dict[str, Any]) -> list[str]:
    kinds = sorted({kind for f in strategies.values() for kind in f.get("completion_delay_hours_by_fault", {})})
    return [
        f"| {kind} | "
        + " | ".join(f"{f.get('completion_delay_hours_by_fault', {}).get(kind, 0.0):,.1f}" for f in strategies.values())
        + " |"
        for kind in kinds
    ]


def _met(met: bool | None) -> str:
    return {True: "met", False: "missed", None: "nothing to measure it on"}[met]
