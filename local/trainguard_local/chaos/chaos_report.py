"""The figures of one or more chaos runs, for a person (`summary`) and as JSON (`as_json`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trainguard_local.chaos.audit import Audit


def total(audits: Sequence[Audit], section: str, key: str) -> int:
    return sum(int(a.figures[section][key]) for a in audits)


def summary(audits: Sequence[Audit], seeds: Sequence[int], jobs: int, seconds: float) -> str:
    faults: dict[str, int] = {}
    for audit in audits:
        for kind, count in audit.figures["faults"]["by_kind"].items():
            faults[kind] = faults.get(kind, 0) + count
    deaths = sum(len(a.figures["faults"]["process_deaths"]) for a in audits)
    alarms = [a.figures["dead_letters"]["alarms"]["JobEvents"] for a in audits]
    violations = [v for a in audits for v in a.violations]
    lines = [
        f"trainguard chaos suite: seeds {', '.join(map(str, seeds))}, {jobs} jobs each, {seconds:.0f} s",
        "",
        f"events processed        {total(audits, 'events', 'processed'):>7,}  "
        f"({total(audits, 'events', 'deliveries'):,} deliveries, {total(audits, 'events', 'invocation_attempts'):,} "
        f"invocations, {total(audits, 'events', 'lambda_retries'):,} Lambda retries)",
        f"  acted on or skipped   {total(audits, 'events', 'acted_or_skipped'):>7,}  "
        f"(skipped with a reason: {total(audits, 'events', 'skipped_with_reason'):,})",
        f"  lost                  {total(audits, 'events', 'lost'):>7,}",
        f"AWS call attempts       {total(audits, 'faults', 'aws_call_attempts'):>7,}",
        f"faults injected         {total(audits, 'faults', 'injected'):>7,}  "
        + ", ".join(f"{kind} {count}" for kind, count in sorted(faults.items())),
        f"  throttling storms     {total(audits, 'faults', 'throttling_storms'):>7,}",
        f"  botocore retries      {total(audits, 'faults', 'botocore_retries'):>7,}",
        f"  process deaths        {deaths:>7,}  (after a side effect, before the ledger write)",
        "",
        "actions per cause (a job's end, a hang, a launch refused by a quota): at most one, exactly one when due",
        f"  causes {total(audits, 'actions_per_cause', 'causes'):,}, due an action "
        f"{total(audits, 'actions_per_cause', 'due_an_action'):,}: acted on once "
        f"{total(audits, 'actions_per_cause', 'acted_on_once'):,}, refused by the launch budget "
        f"{total(audits, 'actions_per_cause', 'due_but_refused_by_the_budget'):,}; "
        f"acted on more than once: {total(audits, 'actions_per_cause', 'more_than_once')}",
        "  decisions on job ends (what the rules call for: what trainguard recorded):",
    ]
    for audit, seed in zip(audits, seeds, strict=True):
        ends = ", ".join(f"{k} {v}" for k, v in audit.figures["job_ends"].items())
        lines.append(f"    seed {seed}: {ends}")
    lines += [
        f"  stalls: {total(audits, 'stalls', 'hangs')} hangs, {total(audits, 'stalls', 'stopped_by_trainguard')} "
        f"stopped by trainguard, {total(audits, 'stalls', 'stopped_not_in_a_verified_stall')} stopped without a "
        f"verified stall, {total(audits, 'stalls', 'alarm_events')} alarm events "
        f"({total(audits, 'stalls', 'false_alarms_planned')} false alarms planned)",
        f"  quota walls: {total(audits, 'quota_walls', 'refused_launches')} launches refused, "
        f"{total(audits, 'quota_walls', 'launched_after_increase')} launched after the increase, "
        f"{total(audits, 'quota_walls', 'increase_requests')} increase requests",
        f"budgets: at most {max(a.figures['budgets']['most_launches_in_60_minutes'] for a in audits)} launches "
        f"in 60 minutes (budget {audits[0].figures['budgets']['retry_budget_per_hour']}), "
        f"{total(audits, 'budgets', 'relaunches_refused_by_the_budget')} refused by it, "
        f"{total(audits, 'budgets', 'lineages_over_their_max_retries')} lineages over their max-retries",
        f"dead letters: {total(audits, 'dead_letters', 'records')} "
        f"({total(audits, 'dead_letters', 'poison_records')} of the poison), job-events DLQ alarm "
        + ", ".join(f"{a['before']} -> {a['after']} at {a['messages']}" for a in alarms)
        + f"; redriven {total(audits, 'dead_letters', 'redriven')}, poison relaunched once after the redrive: "
        + ("yes" if all(a.figures["dead_letters"]["poison_relaunched_after_redrive"] == 1 for a in audits) else "NO"),
        f"notifications: {total(audits, 'notifications', 'sent'):,} "
        f"({total(audits, 'notifications', 'exact_duplicates')} exact duplicates)",
        "",
        f"violations: {len(violations)}",
    ]
    lines += [f"  - {v}" for v in violations]
    return "\n".join(lines)


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
