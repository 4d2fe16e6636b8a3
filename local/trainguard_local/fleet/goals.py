"""trainguard against its own goals (issues 5, 11, 14, 27 and 28, and its own cost's), as checks a page shows: each goal
in words, what the run measured, and whether it is met. The goals' numbers are written here once;
BENCHMARKS.md says the same of the standard trace in sentences (bench/against_goals.py reads them from here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainguard.config import GuardConfig
from trainguard_local.fleet.model import GUARDS, TRAINGUARD, TRAINGUARD_WITH_LEAVE
from trainguard_local.fleet.words import fault_name, strategy_name
from trainguard_local.simulation.fault_table import FaultKind

WASTE_BELOW = 0.90  # issue 5: wasted GPU-hours this share below no guard's and RetryStrategy's
DELAY_BELOW = 0.80  # issues 5 and 11: total completion delay this share below the best other strategy's
DETECT_SLACK_MINUTES = 3  # issue 5: a hang's p95 detection within its threshold plus this
HUNG_AT_MOST = 0.10  # issue 14: hung or idle GPU-hours at most this share of no guard's
CHATTY_STOP_MINUTES = 5  # issue 27: a hang of a job that reports progress more than once a minute, stopped (p95)
INTERVALS_AT_MOST = 3  # issue 27: the other reporting jobs' hangs stopped within this many of their own intervals
LIVELOCK_STOP_MINUTES = 10  # issue 27: a livelock of a job that reports progress, stopped within this (p95)
SILENT_CHATTY_MINUTES = 30  # issue 27: a job that reports nothing keeps the 30-minute judgement (plus the slack)
SYNC_LOSS_AT_MOST = 0.50  # issue 14: work lost to a stopped checkpoint sync at most this share of no guard's
SLOWDOWN_GOAL_FACTOR = 1.5  # issue 28: a slowdown of this factor or more found within SLOWDOWN_FOUND_MINUTES (p95)
SLOWDOWN_FOUND_MINUTES = 20
DIVERGENCE_FOUND_MINUTES = 5  # issue 28: a divergence found within this of its first NaN line (p95)
FINDINGS_WASTE_AT_MOST = 0.25  # issue 28: with leave to act, each such fault's waste at most this share of no guard's
DEGRADED, DIVERGED = FaultKind.DEGRADED_HOST.value, FaultKind.DIVERGED.value
CHATTY = "under 1 min"  # the cadence class of jobs logging more than once a minute (simulation/rhythm.py)


@dataclass(frozen=True)
class GoalCheck:
    """One goal: in words, with the issue that set it, what the run measured, and whether it is met (None: the
    run has nothing to measure it on)."""

    issue: int
    goal: str
    measured: str
    met: bool | None


def goal_checks(report: dict[str, Any]) -> list[GoalCheck]:
    """Every goal, judged on the report's run; none when trainguard did not run."""
    strategies = report["strategies"]
    if "trainguard" not in strategies:
        return []
    guard = strategies["trainguard"]
    checks = [*_waste_goals(strategies), *_delay_goals(strategies), *_detection_goals(guard)]
    checks += [
        GoalCheck(5, "no duplicate actions", f"{guard['duplicate_actions']}", guard["duplicate_actions"] == 0),
        GoalCheck(
            5,
            "no wrong actions (a healthy job stopped, a user's error relaunched)",
            f"{guard['wrong_actions']}",
            guard["wrong_actions"] == 0,
        ),
        *_rhythm_goals(strategies),
        *finding_goals(report),
    ]
    if (cost := report.get("guard_cost")) is not None and cost.get("share_of_guarded_compute_percent") is not None:
        share, goal = cost["share_of_guarded_compute_percent"], cost["goal_share_percent"]
        checks.append(
            GoalCheck(
                5, f"trainguard's own AWS cost at most {goal}% of the guarded compute's", f"{share:.4f}%", share <= goal
            )
        )
    return checks


def _waste_goals(strategies: dict[str, Any]) -> list[GoalCheck]:
    guard = strategies["trainguard"]
    checks = []
    for other in ("none", "sagemaker_retry"):
        if other in strategies:
            mine, theirs = guard["wasted_gpu_hours"], strategies[other]["wasted_gpu_hours"]
            checks.append(
                _below(
                    5,
                    f"wasted GPU-hours at least {WASTE_BELOW:.0%} below {strategy_name(other)}'s",
                    mine,
                    theirs,
                    WASTE_BELOW,
                    "GPU-h",
                )
            )
    if "debugger_rule" in strategies:
        field = "wasted_gpu_hours_where_debugger_rule_applies"
        mine, rule = guard[field], strategies["debugger_rule"][field]
        checks.append(
            GoalCheck(
                5,
                "on the jobs where Debugger's stall rule can act, wasted GPU-hours no more than the rule's",
                f"{mine:,.1f} against the rule's {rule:,.1f} GPU-h",
                mine <= rule,
            )
        )
    return checks


def _delay_goals(strategies: dict[str, Any]) -> list[GoalCheck]:
    def total(figures: dict[str, Any]) -> float:
        return float(figures["completion_delay_hours"]["total"])

    def not_own_code(figures: dict[str, Any]) -> float:
        return float(figures["completion_delay_hours_not_own_code"])

    checks = []
    own_code = "completion delay of the jobs that did not fail in their own code"
    for issue, what, read in ((5, "total completion delay", total), (11, own_code, not_own_code)):
        others = {name: read(f) for name, f in strategies.items() if name not in GUARDS}
        if others:
            best = min(others, key=lambda name: others[name])
            goal = f"{what} at least {DELAY_BELOW:.0%} below the best other strategy's ({strategy_name(best)})"
            checks.append(_below(issue, goal, read(strategies["trainguard"]), others[best], DELAY_BELOW, "h"))
    return checks


def _detection_goals(guard: dict[str, Any]) -> list[GoalCheck]:
    defaults = GuardConfig(ledger_table_name="-", topic_arn="-")
    checks = []
    for kind, words, threshold in (
        ("hang_idle_gpu", "a hang with idle GPUs", defaults.gpu_idle_minutes),
        ("hang_busy_gpu", "a silent hang with busy GPUs", defaults.stall_minutes),
    ):
        p95 = guard["detect_minutes"].get(kind, {}).get("p95")
        limit = threshold + DETECT_SLACK_MINUTES
        goal = f"{words} found within {limit} min (its threshold, {threshold} min, plus {DETECT_SLACK_MINUTES}), p95"
        checks.append(GoalCheck(5, goal, _minutes(p95), None if p95 is None else p95 <= limit))
    return checks


def _rhythm_goals(strategies: dict[str, Any]) -> list[GoalCheck]:
    guard, none = strategies["trainguard"], strategies.get("none")
    checks = []
    if none is not None:
        field = "wasted_gpu_hours_hung_or_idle"
        checks.append(
            _at_most(
                14,
                f"hung or idle GPU-hours at most {HUNG_AT_MOST:.0%} of no guard's",
                guard[field],
                none[field],
                HUNG_AT_MOST,
                "GPU-h",
            )
        )
    checks += progress_goals(guard)
    if none is not None:
        goal = f"work lost to a stopped checkpoint sync at most {SYNC_LOSS_AT_MOST:.0%} of no guard's"
        loss = sync_stopped_loss
        checks.append(_at_most(14, goal, loss(guard), loss(none), SYNC_LOSS_AT_MOST, "GPU-h"))
    return checks


def progress_goals(guard: dict[str, Any]) -> list[GoalCheck]:
    """Issue 27's: jobs that report progress are stopped within minutes of a hang and never in a phase; jobs that
    report nothing keep the 30-minute judgement."""
    by_reporting = guard.get("detect_minutes_by_reporting")
    if not by_reporting:
        return []
    reporting = by_reporting["reporting"]

    def within(p95: float | None, limit: float) -> bool | None:
        return None if p95 is None else p95 <= limit

    chatty, livelock = reporting[CHATTY]["p95"], reporting["by_kind"].get("livelock", {}).get("p95")
    chatty_livelock = reporting.get("livelock_by_cadence", {}).get(CHATTY, {}).get("p95")
    intervals, silent = reporting["in_intervals"]["p95"], by_reporting["none"]["silent"][CHATTY]["p95"]
    quiet_limit = SILENT_CHATTY_MINUTES + DETECT_SLACK_MINUTES
    wrong = sum(count for cls, count in guard["wrong_actions_by_reporting"].items() if cls != "none")
    per_class = ", ".join(
        f"{name} {_minutes(by_reporting[cls][CHATTY]['p95'])}"
        for cls, name in (("progress", "contract"), ("framework", "framework lines"), ("tag_rule", "tag rule"))
    )
    return [
        GoalCheck(27, f"a hang of a job that reports progress more than once a minute stopped within "
                  f"{CHATTY_STOP_MINUTES} min, p95", f"{_minutes(chatty)} ({per_class})",
                  within(chatty, CHATTY_STOP_MINUTES)),
        GoalCheck(27, f"a hang of a job that reports progress less often stopped within {INTERVALS_AT_MOST} of its "
                  "own intervals between lines, p95", "no such hang in this run" if intervals is None else
                  f"{intervals:.1f} intervals", within(intervals, INTERVALS_AT_MOST)),
        GoalCheck(27, f"a livelock of a job that reports progress stopped within {LIVELOCK_STOP_MINUTES} min, p95",
                  f"{_minutes(livelock)} ({_minutes(chatty_livelock)} for jobs that log more than once a minute: a "
                  "job's own rhythm sets its limit, 3 of its intervals)", within(livelock, LIVELOCK_STOP_MINUTES)),
        GoalCheck(27, "no wrong action on a job that reports progress, however long its announced phases",
                  f"{wrong}", wrong == 0),
        GoalCheck(27, f"a silent hang of a job that reports nothing and logs more than once a minute stopped within "
                  f"{quiet_limit} min, p95 (the 30-minute judgement, no regression)", _minutes(silent),
                  within(silent, quiet_limit)),
    ]  # fmt: skip


def finding_goals(report: dict[str, Any]) -> list[GoalCheck]:
    """Issue 28's: a slowdown and a divergence found within minutes (a job missed counts as never found), no finding on
    a healthy job in the run or in the audit, and with leave to act, each fault's waste at most a quarter of no
    guard's (over all jobs; the jobs that report progress, the only ones the rules can see, in the measured text)."""
    strategies = report["strategies"]
    found = strategies[TRAINGUARD].get("findings_found")
    if not found:
        return []
    checks = []
    for kind, words, limit in (
        (DEGRADED, f"a slowdown of {SLOWDOWN_GOAL_FACTOR:g} times or more found within", SLOWDOWN_FOUND_MINUTES),
        (DIVERGED, "a divergence found, from its first NaN line, within", DIVERGENCE_FOUND_MINUTES),
    ):
        figures, p95 = found[kind], found[kind]["p95"]
        measured = "none found" if p95 is None else f"{p95:,.1f} min"
        measured += f", {figures['found']} of {figures['jobs']} jobs that report progress found"
        measured += f" (missed: {', '.join(figures['missed'])})" if figures["missed"] else ""
        chatty = figures.get("by_cadence", {}).get(CHATTY)
        if chatty and chatty["jobs"]:
            measured += f"; jobs that log more than once a minute: {chatty['found']} of {chatty['jobs']} found"
            measured += f", p95 {chatty['p95']:,.1f} min" if chatty["p95"] is not None else ""
        if unseen := figures.get("no_nan_line"):
            measured += f"; besides, {len(unseen)} whose lines print no NaN loss, which no rule on them can see"
        met = p95 is not None and p95 <= limit and len(figures["missed"]) <= 0.05 * figures["jobs"]
        checks.append(GoalCheck(28, f"{words} {limit} min, p95", measured, met if figures["jobs"] else None))
    run = sum(strategies[TRAINGUARD]["false_findings"].values())
    audit = report["findings_audit"]
    audited = sum(audit["false_findings"].values())
    measured = (
        f"{run} in the run, {audited} in the audit ({audit['jobs']} jobs, {audit['lines']:,} lines judged; "
        f"{audit['noisy_jobs']} noisy, {audit['batch_change_jobs']} changing their batch size)"
    )
    checks.append(GoalCheck(28, "no finding on a healthy job", measured, run == 0 and audited == 0))
    return checks + [_finding_waste(strategies, kind) for kind in (DEGRADED, DIVERGED)]


def _finding_waste(strategies: dict[str, Any], kind: str) -> GoalCheck:
    goal = f"with leave to act, GPU-hours wasted ({fault_name(kind)}) at most {FINDINGS_WASTE_AT_MOST:.0%} "
    goal += "of no guard's"
    leave, none = strategies.get(TRAINGUARD_WITH_LEAVE), strategies.get("none")
    if leave is None or none is None:
        return GoalCheck(28, goal, "not run (`trainguard simulate --with-leave` runs it)", None)

    def waste(figures: dict[str, Any], field: str = "wasted_gpu_hours_by_fault") -> float:
        return float(figures[field].get(kind) or 0.0)

    check = _at_most(28, goal, waste(leave), waste(none), FINDINGS_WASTE_AT_MOST, "GPU-h")
    field = "wasted_gpu_hours_by_fault_of_reporting_jobs"
    mine, theirs = waste(leave, field), waste(none, field)
    reporting = f"{mine / theirs:.1%} ({mine:,.1f} against {theirs:,.1f})" if theirs else "none of them"
    return GoalCheck(28, goal, f"{check.measured}; of the jobs that report progress: {reporting}", check.met)


def sync_stopped_loss(figures: dict[str, Any]) -> float:
    """A strategy's GPU-hours of work lost since the last checkpoint on the jobs whose checkpoint sync stopped."""
    return float(figures["wasted_gpu_hours_lost_since_checkpoint_by_fault"].get("checkpoint_sync_stopped") or 0.0)


def _below(issue: int, goal: str, mine: float, theirs: float, share: float, unit: str) -> GoalCheck:
    """A goal of being `share` below another figure."""
    if not theirs:
        return GoalCheck(issue, goal, f"{mine:,.1f} {unit} against 0", None)
    below = 1 - mine / theirs
    return GoalCheck(issue, goal, f"{below:.1%} below ({mine:,.1f} against {theirs:,.1f} {unit})", below >= share)


def _at_most(issue: int, goal: str, mine: float, theirs: float, share: float, unit: str) -> GoalCheck:
    """A goal of being at most `share` of another figure."""
    if not theirs:
        return GoalCheck(issue, goal, f"{mine:,.1f} {unit} against 0", None)
    return GoalCheck(
        issue, goal, f"{mine / theirs:.1%} ({mine:,.1f} against {theirs:,.1f} {unit})", mine / theirs <= share
    )


def _minutes(value: float | None) -> str:
    return "no such hang in this run" if value is None else f"{value:,.1f} min"
