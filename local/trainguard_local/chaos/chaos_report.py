"""The figures of one or more chaos runs, for a person (`summary`) and as JSON (`as_json`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from trainguard_local.chaos.delivery_audit import Audit


def summary(audits: Sequence[Audit], seeds: Sequence[int], jobs: int, seconds: float) -> str:
    violations = [v for a in audits for v in a.violations]
    lines = [
        f"trainguard chaos suite: seeds {', '.join(map(str, seeds))}, {jobs} jobs each, {seconds:.0f} s",
        "",
        *_events_and_faults(audits),
        "",
        *_actions(audits, seeds),
        "",
        f"violations: {len(violations)}",
    ]
    return "\n".join(lines + [f"  - {v}" for v in violations])


def _totals(audits: Sequence[Audit], section: str) -> Counter[str]:
    """The section's figures added up over the runs (its numbers only)."""
    totals: Counter[str] = Counter()
    for audit in audits:
        totals.update({k: v for k, v in audit.figures[section].items() if isinstance(v, int)})
    return totals


def _events_and_faults(audits: Sequence[Audit]) -> list[str]:
    events, faults = _totals(audits, "events"), _totals(audits, "faults")
    by_kind: Counter[str] = Counter()
    for audit in audits:
        by_kind.update(audit.figures["faults"]["by_kind"])
    deaths = sum(len(a.figures["faults"]["process_deaths"]) for a in audits)
    return [
        f"events processed        {events['processed']:>7,}  ({events['deliveries']:,} deliveries, "
        f"{events['invocation_attempts']:,} invocations, {events['lambda_retries']:,} Lambda retries)",
        f"  acted on or skipped   {events['acted_or_skipped']:>7,}  "
        f"(skipped with a reason: {events['skipped_with_reason']:,})",
        f"  lost                  {events['lost']:>7,}",
        f"AWS call attempts       {faults['aws_call_attempts']:>7,}",
        f"faults injected         {faults['injected']:>7,}  "
        + ", ".join(f"{kind} {count}" for kind, count in sorted(by_kind.items())),
        f"  throttling storms     {faults['throttling_storms']:>7,}",
        f"  botocore retries      {faults['botocore_retries']:>7,}",
        f"  process deaths        {deaths:>7,}  (after a side effect, before the ledger write)",
    ]


def _actions(audits: Sequence[Audit], seeds: Sequence[int]) -> list[str]:
    causes, stalls, walls = (_totals(audits, s) for s in ("actions_per_cause", "stalls", "quota_walls"))
    budgets, dead = _totals(audits, "budgets"), _totals(audits, "dead_letters")
    alarms = [a.figures["dead_letters"]["alarms"]["JobEvents"] for a in audits]
    poison = ", ".join(str(a.figures["dead_letters"]["poison_end_after_redrive"]) for a in audits)
    ends = [", ".join(f"{k} {v}" for k, v in a.figures["job_ends"].items()) for a in audits]
    return [
        "actions per cause (a job's end, a hang): at most one, exactly one when due",
        f"  causes {causes['causes']:,}, due an action {causes['due_an_action']:,}: acted on once "
        f"{causes['acted_on_once']:,}, refused by the launch budget {causes['due_but_refused_by_the_budget']:,}; "
        f"acted on more than once: {causes['more_than_once']}",
        "  decisions on job ends (what the rules call for: what trainguard recorded):",
        *(f"    seed {seed}: {line}" for seed, line in zip(seeds, ends, strict=True)),
        f"  stalls: {stalls['hangs']} hangs, {stalls['stopped_by_trainguard']} stopped by trainguard, "
        f"{stalls['stopped_not_in_a_verified_stall']} stopped without a verified stall (of them "
        f"{stalls['of_them_contract_jobs_silent_unannounced']} contract jobs silent in a pause they did not announce: "
        f"docs/progress.md), {stalls['alarm_events']} alarm events ({stalls['false_alarms_planned']} false alarms)",
        f"  quota walls: {walls['refused_launches']} launches refused ({walls['users_launches_refused']} a user's "
        f"first), {walls['launched_after_increase']} launched "
        f"after the increase, {walls['given_up_waiting']} given up waiting, {walls['increase_requests']} increase "
        "requests",
        f"budgets: at most {max(a.figures['budgets']['most_launches_in_60_minutes'] for a in audits)} launches "
        f"in 60 minutes (budget {audits[0].figures['budgets']['retry_budget_per_hour']}), "
        f"{budgets['relaunches_refused_by_the_budget']} refused by it, "
        f"{budgets['lineages_over_their_max_retries']} lineages over their max-retries",
        f"dead letters: {dead['records']} ({dead['poison_records']} of the poison), job-events DLQ alarm "
        + ", ".join(f"{a['before']} -> {a['after']} at {a['messages']}" for a in alarms)
        + f"; redriven {dead['redriven']}, the poison's end after the redrive: {poison}",
        f"notifications: {_totals(audits, 'notifications')['sent']:,} "
        f"({_totals(audits, 'notifications')['exact_duplicates']} exact duplicates)",
    ]


def as_json(audits: Sequence[Audit], seeds: Sequence[int], jobs: int, seconds: float) -> dict[str, Any]:
    return {
        "seeds": list(seeds),
        "jobs_per_seed": jobs,
        "seconds": round(seconds, 1),
        "violations": [v for a in audits for v in a.violations],
        "runs": [
            {"seed": seed, **a.figures, "violations": a.violations} for a, seed in zip(audits, seeds, strict=True)
        ],
    }
