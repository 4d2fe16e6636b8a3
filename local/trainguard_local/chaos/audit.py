"""The verdict on one chaos run: what trainguard did, set against the fleet's truth (jobs_truth.py), never
against what trainguard says it did. Every rule broken is a `violation`; the suite fails on any. A cause
calls for at most one action: a job's end (a relaunch, when due), a hung job (a stop), a launch refused by
a quota (a launch when the quota allows it).
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard_local.chaos.dead_letters import model_disagreements
from trainguard_local.chaos.jobs_truth import RELAUNCHING, JobTruth
from trainguard_local.chaos.lambda_runtime import RETRY_ATTEMPTS
from trainguard_local.chaos.replay import ChaosRun
from trainguard_local.simulation.clock import SimClock
from trainguard_local.simulation.fault_table import FAULT_TABLE, HANG_KINDS, USER_ERROR_KINDS, FaultKind, Logs

Ledger = dict[tuple[str, str], dict[str, Any]]
ENDED = ("Failed", "Stopped")
# What each expected end accepts as trainguard's recorded decision, with the relaunches it made.
ACCEPTED: dict[str, tuple[str, ...]] = {
    "ignore": ("skipped",),
    "owned": ("skipped", "notified"),  # recorded, told at most, never relaunched
    "notify": ("notified",),
    "dry-run": ("not-relaunched",),
    "limit": ("not-relaunched",),
}


@dataclass
class Audit:
    figures: dict[str, Any] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)

    def check(self, holds: bool, violation: str) -> None:
        if not holds:
            self.violations.append(violation)


def audit_run(run: ChaosRun) -> Audit:
    audit = Audit()
    ledger: Ledger = {}
    pages = run.aws.client("dynamodb").get_paginator("scan").paginate(TableName=run.aws.config.ledger_table_name)
    for item in (item for page in pages for item in page["Items"]):
        ledger[(item["pk"]["S"], item["sk"]["S"])] = item
    relaunches: dict[str, list[str]] = defaultdict(list)
    for job in run.fleet.jobs.values():
        if job.retry_of:
            relaunches[job.retry_of].append(job.name)
    _events(run, audit)
    _faults(run, audit)
    _job_ends(run, audit, ledger, relaunches)
    _stops(run, audit)
    _quota_walls(run, audit)
    _budgets(run, audit, ledger)
    _dead_letters(run, audit)
    _actions_per_cause(run, audit, relaunches)
    duplicates = Counter((m.get("Subject"), m.get("Message")) for m in run.notifications)
    audit.figures["notifications"] = {
        "sent": len(run.notifications),
        "exact_duplicates": sum(n - 1 for n in duplicates.values() if n > 1),
    }
    return audit


def _events(run: ChaosRun, audit: Audit) -> None:
    log = run.deliveries.log
    in_queues = sum(run.queues.depth(path) for path in run.queues.urls)
    unhandled = [key for key in log.events if not log.handled(key)]
    outcomes = [a.result for a in log.attempts if a.ok and isinstance(a.result, Outcome)]
    skipped = [o for o in outcomes if o.kind in (OutcomeKind.SKIPPED, OutcomeKind.ALREADY_HANDLED)]
    audit.figures["events"] = {
        "processed": len(log.events),
        "by_function": dict(Counter(log.events.values())),
        "deliveries": log.copies,
        "invocation_attempts": len(log.attempts),
        "lambda_retries": sum(1 for a in log.attempts if a.invocation.attempt > 1),
        "acted_or_skipped": len(log.events) - len(unhandled),
        "skipped_with_reason": len(skipped),
        "in_dead_letter_queue_at_end": in_queues,
        "lost": max(0, len(unhandled) - in_queues),
    }
    audit.check(not unhandled, f"{len(unhandled)} events neither acted on nor skipped: {unhandled[:5]}")
    audit.check(all(o.reason for o in skipped), "a skip without a reason")


def _faults(run: ChaosRun, audit: Audit) -> None:
    injector = run.injector
    audit.figures["faults"] = {
        "aws_call_attempts": injector.attempts,
        "injected": injector.total,
        "by_kind": dict(sorted(injector.injected.items())),
        "by_service": dict(sorted(injector.by_service.items())),
        "throttling_storms": injector.storms,
        "botocore_retries": run.backoff_sleeps,
        "botocore_backoff_seconds": round(run.backoff_seconds, 1),
        "process_deaths": [f"{op} {name}" for op, name in injector.deaths],
        "cold_starts": run.runtime.cold_starts,
    }


def expected_end(job: JobTruth) -> str:
    """What the rules call for when this job ends: ignore, notify, retry, or why a retry is not allowed."""
    if job.stopped_by == "person":
        return "ignore"
    if job.owned:
        return "owned"
    if job.stopped_by in ("trainguard", "spot") or job.kind in RELAUNCHING:
        if not job.stops_allowed:
            return "dry-run"
        return "limit" if job.attempt >= job.max_retries else "retry"
    return "notify" if job.kind in USER_ERROR_KINDS else "unknown"


def _recorded_decision(ledger: Ledger, name: str) -> tuple[str, str] | None:
    """trainguard's decision on a job's end (kind, reason), None if not done; a scheduled relaunch's own
    outcome once it fired (the budget is taken then: its refusal is said there)."""
    end = ledger.get((f"job#{name}", "end"))
    if end is None or end.get("status", {}).get("S") != "done":
        return None
    kind, reason = end["kind"]["S"], json.loads(end["outcome"]["S"]).get("reason", "")
    if kind == "relaunch-scheduled":
        fired = ledger.get((f"job#{name}", "relaunch"))
        if fired is None or fired.get("status", {}).get("S") != "done":
            return "scheduled, never fired", reason
        return fired["kind"]["S"], json.loads(fired["outcome"]["S"]).get("reason", "")
    return kind, reason


def _job_ends(run: ChaosRun, audit: Audit, ledger: Ledger, relaunches: dict[str, list[str]]) -> None:
    decided: Counter[str] = Counter()
    for job in (job for job in run.fleet.jobs.values() if job.end_status in ENDED):
        actions = len(relaunches[job.name])
        audit.check(actions <= 1, f"{job.name}: {actions} relaunches of one end: {relaunches[job.name]}")
        decision = _recorded_decision(ledger, job.name)
        if not job.opted_in:
            untouched = (f"job#{job.name}", "end") not in ledger and actions == 0
            audit.check(untouched, f"{job.name} is not opted in, yet trainguard acted on it")
            decided["not opted in: skipped"] += 1
            continue
        if decision is None:
            audit.violations.append(f"{job.name} ended ({job.end_status}), and no decision is recorded: lost")
            continue
        (kind, reason), expected = decision, expected_end(job)
        decided[f"{expected}: {kind}"] += 1
        refused = kind == "not-relaunched" and "budget" in reason
        if expected == "retry":  # relaunched once, or refused by the budget
            ok = (kind, actions) == ("relaunched", 1) or (refused and actions == 0)
        else:
            ok = kind in ACCEPTED.get(expected, ()) and actions == 0
        audit.check(
            ok, f"{job.name} ({job.kind}, {job.end_status}): expected {expected}, got {kind}, {actions} relaunches"
        )
    audit.figures["job_ends"] = dict(sorted(decided.items()))


def _actions_per_cause(run: ChaosRun, audit: Audit, relaunches: dict[str, list[str]]) -> None:
    """Each cause and the actions taken on it, counted from SageMaker's side (the jobs that exist), not from
    trainguard's ledger."""
    jobs = run.fleet.jobs.values()
    ends = [job for job in jobs if job.end_status in ENDED]
    hangs = [job for job in jobs if _due_a_stop(job)]
    walls = [run.fleet.jobs[name] for name in run.fleet.walls]
    actions = [len(relaunches[job.name]) for job in ends]
    actions += [int(job.stopped_by == "trainguard") for job in hangs] + [int(job.launched) for job in walls]
    due = sum(1 for job in ends if expected_end(job) == "retry") + len(hangs) + sum(j.stops_allowed for j in walls)
    refused = audit.figures["budgets"]["relaunches_refused_by_the_budget"]
    once = sum(1 for n in actions if n == 1)
    audit.figures["actions_per_cause"] = {
        "causes": len(actions),
        "due_an_action": due,
        "acted_on_once": once,
        "more_than_once": sum(1 for n in actions if n > 1),
        "due_but_refused_by_the_budget": refused,
    }
    audit.check(due == once + refused, "the causes due an action are not all acted on once (or refused by the budget)")


def stop_was_right(job: JobTruth, clock: SimClock) -> bool:
    """trainguard may act on the job, and it was hung (the fault table's `hung`) when the stop was asked for:
    a stop in a healthy silence or on a false alarm is wrong."""
    assert job.stop_requested_at is not None
    hung = job.activity is not None and job.activity.hung_at(clock.hours_of(job.stop_requested_at))
    return job.hang_stops_allowed and hung


def _due_a_stop(job: JobTruth) -> bool:
    """Hung for good (its fault's ending) and trainguard may act on it. Not a livelock: the replayed jobs report no
    progress (their lines say nothing of steps), and a livelock's lines go on, so no rule can see it (issue 27: a job
    must report its steps for that; the fleet simulator measures those that do)."""
    if job.kind not in HANG_KINDS:
        return False
    seen = FAULT_TABLE[FaultKind(job.kind)].logs is not Logs.HEARTBEAT
    return seen and job.hang_stops_allowed and job.hung


def _stops(run: ChaosRun, audit: Audit) -> None:
    jobs = run.fleet.jobs.values()
    stops = [job for job in jobs if job.stopped_by == "trainguard"]
    wrong = [job.name for job in stops if not stop_was_right(job, run.aws.clock)]
    missed = [job.name for job in jobs if _due_a_stop(job) and job.stopped_by != "trainguard"]
    audit.figures["stalls"] = {
        "hangs": sum(1 for job in jobs if job.hung),
        "stopped_by_trainguard": len(stops),
        "stopped_not_in_a_verified_stall": len(wrong),
        "hangs_not_stopped": len(missed),
        "stop_calls": sum(1 for op, _ in run.aws.plane.calls if op == "StopTrainingJob"),
        "alarm_events": run.evidence.alarm_events,
        "false_alarms_planned": run.evidence.false_alarms,
    }
    audit.check(not wrong, f"stopped while not hung: {wrong}")
    audit.check(not missed, f"hung, opted in, and never stopped: {missed}")


def _quota_walls(run: ChaosRun, audit: Audit) -> None:
    walls = {name: run.fleet.jobs[name] for name in run.fleet.walls}
    requests = Counter(r["QuotaName"] for r in run.aws.quotas.requests())
    eligible = Counter(run.fleet.walls[name] for name, job in walls.items() if job.stops_allowed)
    for name, job in walls.items():
        audit.check(job.launched == job.stops_allowed, f"{name}: walled; launched {job.launched}")
    for quota, count in requests.items():
        audit.check(count <= eligible[quota], f"{count} increase requests for {quota}, {eligible[quota]} walls")
    audit.figures["quota_walls"] = {
        "refused_launches": len(walls),
        "launched_after_increase": sum(1 for job in walls.values() if job.launched),
        "increase_requests": sum(requests.values()),
    }


def _budgets(run: ChaosRun, audit: Audit, ledger: Ledger) -> None:
    limit = run.aws.config.retry_budget_per_hour
    jobs = run.fleet.jobs.values()
    counters = {sk: int(item["used"]["N"]) for (pk, sk), item in ledger.items() if pk == "budget#retries"}
    # Every job trainguard created (a relaunch, or a user's launch after a quota wall), when SageMaker saw it.
    created = (job.created_at for job in jobs if job.retry_of or (job.name in run.fleet.walls and job.launched))
    launched = sorted(at for at in created if at is not None)
    in_60_minutes = [bisect_left(launched, at + timedelta(minutes=60)) - n for n, at in enumerate(launched)]
    lineages = Counter(job.root for job in jobs if job.retry_of)
    over_lineage = [
        f"{job.root}: {lineages[job.root]} > {job.max_retries}"
        for job in jobs
        if job.attempt == 0 and lineages[job.root] > job.max_retries
    ]
    refusals = [item for (_, sk), item in ledger.items() if sk in ("end", "relaunch")]
    audit.figures["budgets"] = {
        "retry_budget_per_hour": limit,
        "most_launches_in_60_minutes": max(in_60_minutes, default=0),
        "most_budget_used_in_an_hour": max(counters.values(), default=0),
        "relaunches_refused_by_the_budget": sum("budget" in i.get("outcome", {}).get("S", "") for i in refusals),
        "lineages_over_their_max_retries": len(over_lineage),
    }
    audit.check(max(counters.values(), default=0) <= limit, f"hourly budget counter above {limit}: {counters}")
    audit.check(max(in_60_minutes, default=0) <= limit, f"more than {limit} launches in 60 minutes")
    audit.check(not over_lineage, f"lineages over their max-retries: {over_lineage}")


def _dead_letters(run: ChaosRun, audit: Audit) -> None:
    poisoned = [inv for _, _, inv in run.runtime.dead_letters if run.poison_job in json.dumps(inv.payload)]
    last_errors = Counter(a.error.split(":", 1)[0] for a in run.deliveries.log.attempts if a.dead_lettered)
    relaunched = sum(1 for job in run.fleet.jobs.values() if job.retry_of == run.poison_job)
    audit.figures["dead_letters"] = {
        "records": len(run.runtime.dead_letters),
        "by_last_error": dict(sorted(last_errors.items())),
        "poison_records": len(poisoned),
        "alarms": {
            path.split("/")[1]: {"messages": n, "before": a, "after": b} for path, (n, a, b) in run.alarms.items()
        },
        "redriven": run.redriven,
        "poison_relaunched_after_redrive": relaunched,
    }
    audit.check(bool(poisoned), "the poison event did not reach the dead-letter queue")
    audit.check(relaunched == 1, f"the poison job was relaunched {relaunched} times after the redrive, not once")
    for path, (messages, before, after) in run.alarms.items():
        audit.check(before == "OK", f"{path}: its alarm is {before} before any dead letter")
        audit.check(after == ("ALARM" if messages else "OK"), f"{path}: {messages} messages, alarm {after}")
    for problem in model_disagreements(run.wiring, RETRY_ATTEMPTS) if run.wiring is not None else []:
        audit.violations.append(f"the Lambda model differs from the stack: {problem}")
