"""What the HTML report leads with: what trainguard changes against no guard (hung or idle GPU-hours, delay, jobs
finished, the actions taken and refused, and the money split into what a guard can save and what the checkpoint
cadence sets), where trainguard misses its own goals, and the strategies in words with their table, each
column's header in words and its definition beside it."""

from __future__ import annotations

from html import escape
from typing import Any

from trainguard_local.fleet.goals import goal_checks
from trainguard_local.fleet.html_parts import table, terms
from trainguard_local.fleet.summary import FIGURE_DEFINITIONS, STRATEGY_COLUMNS, strategy_rows
from trainguard_local.fleet.words import action_count_words, strategy_name, strategy_words

GUARD, UNGUARDED = "trainguard", "none"
CHANGE_HEADERS = ("figure", "no guard", "trainguard", "what it counts")


def changes_section(report: dict[str, Any]) -> list[str]:
    """The table of what trainguard changes against no guard, and the money in its two parts."""
    heading = '<h2 id="changes">What trainguard changes</h2>'
    strategies = report["strategies"]
    if GUARD not in strategies or UNGUARDED not in strategies:
        return [heading, "<p>trainguard did not run (--no-trainguard): there is nothing to compare.</p>"]
    guard, none = strategies[GUARD], strategies[UNGUARDED]
    jobs, hours = report["trace"]["jobs"], report["trace"]["hours"]

    def row(measure: str, read: Any, definition: str) -> tuple[str, ...]:
        return (measure, read(none), read(guard), definition)

    rows = [
        CHANGE_HEADERS,
        row("hung or idle GPU-hours", lambda f: _hours(f["wasted_gpu_hours_hung_or_idle"]),
            "GPU-hours billed while a job made no progress (hung, or its GPUs idle), x instances x GPUs"),
        row("total delay (hours)", lambda f: _hours(f["completion_delay_hours"]["total"]),
            "the extra hours until each job's work was done, against a fault-free run, summed over jobs"),
        row(f"jobs finished within the {hours:g} h", lambda f: f"{f['jobs_completed']} of {jobs}",
            "jobs whose work was done by the end of the simulated window"),
        row("the guard's actions", lambda f: _actions(f, GUARD) if f is guard else "no guard acts",
            "what trainguard did: taken, and refused by AWS (a relaunch without capacity or quota)"),
        row("left to the person on call", lambda f: _actions(f, "person"),
            "what the person on call did, after a response time (see the assumptions)"),
        row("wrong or duplicate actions", lambda f: f"{f['wrong_actions']} wrong, {f['duplicate_actions']} duplicate",
            FIGURE_DEFINITIONS["wrong_actions"] + "; " + FIGURE_DEFINITIONS["duplicate_actions"]),
        row("dollars a guard can save", lambda f: _dollars(f["wasted_dollars_hung_or_idle"]),
            "the dollars of hung or idle time: a guard shortens it by stopping or relaunching sooner"),
        row("dollars the checkpoint cadence sets", lambda f: _dollars(f["wasted_dollars_lost_since_checkpoint"]),
            "the dollars of the work lost since the last checkpoint at each failure or stop"),
    ]  # fmt: skip
    return [heading, table(rows, "changes"), f'<p class="lead">{escape(_money_sentence(strategies))}</p>']


def _money_sentence(strategies: dict[str, Any]) -> str:
    """What the wasted dollars are made of, and which part a guard can change."""
    lost = {name: f["wasted_dollars_lost_since_checkpoint"] for name, f in strategies.items()}
    guard, none = strategies[GUARD], strategies[UNGUARDED]
    same = max(lost.values()) - min(lost.values()) < 0.5
    cadence = (
        "the same under every strategy in this run"
        if same
        else "nearly the same under every strategy ("
        + ", ".join(f"{strategy_name(n)} {_dollars(d)}" for n, d in lost.items())
        + "): a guard changes it only by acting before a failure strikes, as on a stopped checkpoint sync"
    )
    return (
        f"Wasted dollars: {_dollars(none['wasted_dollars'])} with no guard, {_dollars(guard['wasted_dollars'])} with "
        f"trainguard. Of those, the hung or idle time ({_dollars(none['wasted_dollars_hung_or_idle'])} against "
        f"{_dollars(guard['wasted_dollars_hung_or_idle'])}) is what a guard can save. The work lost since the last "
        f"checkpoint ({_dollars(guard['wasted_dollars_lost_since_checkpoint'])} with trainguard) is set by how often "
        f"each training script checkpoints, and is {cadence}: checkpoint more often to lose less."
    )


def goals_section(report: dict[str, Any]) -> list[str]:
    """The goals trainguard misses in this run, said plainly first, then those it meets."""
    checks = goal_checks(report)
    if not checks:
        return []
    missed = [c for c in checks if c.met is False]
    met = [c for c in checks if c.met is True]
    unknown = [c for c in checks if c.met is None]
    parts = ['<h2 id="goals">Where trainguard misses its goals</h2>']
    if missed:
        parts.append(f"<p>In this run trainguard <strong>misses {len(missed)} of its {len(checks)} goals</strong>:</p>")
        parts.append('<ul class="missed">' + "".join(_goal_item(c, "Missed") for c in missed) + "</ul>")
    else:
        parts.append(f"<p>In this run trainguard meets all of the {len(checks)} goals it can be judged on.</p>")
    if met:
        parts.append("<p>It meets these:</p><ul>" + "".join(_goal_item(c, "Met") for c in met) + "</ul>")
    if unknown:
        parts.append("<p>This run cannot judge these:</p><ul>" + "".join(_goal_item(c, "") for c in unknown) + "</ul>")
    parts.append(
        '<p class="note">The goals come from the issues that set them; BENCHMARKS.md judges them on the standard '
        "trace (200 jobs, 72 h, seed 7) and says how far each can go there.</p>"
    )
    return parts


def _goal_item(check: Any, verdict: str) -> str:
    said = f"<strong>{verdict}:</strong> " if verdict else ""
    return f"<li>{said}{escape(check.goal)} (issue {check.issue}): {escape(check.measured)}</li>"


def strategies_section(report: dict[str, Any]) -> list[str]:
    """Each strategy in words, then the table of their figures with each column's definition beside it."""
    described = (
        (strategy_name(name), strategy_words(name, figures.get("parameters", {})))
        for name, figures in report["strategies"].items()
    )
    return [
        '<h2 id="strategies">The strategies</h2>',
        terms(described, "strategy-words"),
        '<div class="with-definitions">',
        table(strategy_rows(report), "strategies"),
        terms(STRATEGY_COLUMNS, "columns"),
        "</div>",
    ]


def _actions(figures: dict[str, Any], actor: str) -> str:
    mine = figures.get("actions_by_actor", {}).get(actor, {})
    taken = action_count_words(mine.get("taken", {}))
    refused = action_count_words(mine.get("refused", {}))
    return (taken or "none") + (f"; refused: {refused}" if refused else "")


def _hours(value: float) -> str:
    return f"{value:,.1f}"


def _dollars(value: float) -> str:
    return f"${value:,.0f}"
