"""The verdict on one chaos run: what trainguard did, set against the fleet's truth (fleet_truth.py), never
against what trainguard says it did. Every rule broken is a `violation`; the suite fails on any. A cause
calls for at most one action: a job's end (a relaunch, when due), a hung job (a stop), a launch refused by
a quota (a launch when the quota allows it).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter, defaultdict
from datetime import timedelta

from trainguard.domain.progress_limits import PROGRESS_FLOOR_MINUTES
from trainguard_local.chaos.chaos_run import ChaosRecord, Ledger
from trainguard_local.chaos.delivery_audit import (
    Audit,
    dead_letters_figures,
    events_figures,
    faults_figures,
    recorded_decision,
)
from trainguard_local.chaos.fleet_truth import RELAUNCHING, JobTruth
from trainguard_local.simulation.catalogue import quota_in_limit_message
from trainguard_local.simulation.clock import SimClock
from trainguard_local.simulation.fault_table import FAULT_TABLE, HANG_KINDS, USER_ERROR_KINDS, FaultKind, Logs

ENDED = ("Failed", "Stopped")
# What each expected end accepts as trainguard's recorded decision, with the relaunches it made.
ACCEPTED: dict[str, tuple[str, ...]] = {
    "ignore": ("skipped",),
    "owned": ("skipped", "notified"),  # recorded, told at most, never relaunched
    "notify": ("notified",),
    "dry-run": ("not-relaunched",),
    "limit": ("not-relaunched",),
}


def audit_run(run: ChaosRecord) -> Audit:
    audit = Audit()
    ledger = run.ledger
    relaunches: dict[str, list[str]] = defaultdict(list)
    for job in run.jobs.values():
        if job.retry_of:
            relaunches[job.retry_of].append(job.name)
    for problem in run.problems:
        audit.violations.append(f"a handler failed with no fault injected: {problem}")
    events_figures(run, audit)
    faults_figures(run, audit)
    given_up = _quota_walls(run, audit)
    _job_ends(run, audit, ledger, relaunches, given_up)
    _stops(run, audit)
    _budgets(run, audit, ledger)
    dead_letters_figures(run, audit)
    _actions_per_cause(run, audit, relaunches)
    duplicates = Counter(run.notifications)
    audit.figures["notifications"] = {
        "sent": len(run.notifications),
        "exact_duplicates": sum(n - 1 for n in duplicates.values() if n > 1),
    }
    return audit


def expected_end(job: JobTruth) -> str:
    """What the rules call for when this job ends: ignore, notify, retry, or why a retry is not allowed."""
    if job.stopped_by == "person":
        return "ignore"
    if job.owned:
        return "owned"
    if job.stopped_by == "max-runtime":  # SageMaker stopped it at its MaxRuntimeInSeconds: told (classification.py)
        return "notify"
    if job.stopped_by in ("trainguard", "spot") or job.kind in RELAUNCHING:
        if not job.stops_allowed:
            return "dry-run"
        return "limit" if job.attempt >= job.max_retries else "retry"
    return "notify" if job.kind in USER_ERROR_KINDS else "unknown"


def _job_ends(
    run: ChaosRecord, audit: Audit, ledger: Ledger, relaunches: dict[str, list[str]], given_up: set[str]
) -> None:
    """Each end of a job: the decision its rules call for, recorded once, with at most one relaunch. `given_up`: the
    walled lineages whose quota came too late for the quota check's launch."""
    decided: Counter[str] = Counter()
    for job in (job for job in run.jobs.values() if job.end_status in ENDED):
        actions = len(relaunches[job.name])
        audit.check(actions <= 1, f"{job.name}: {actions} relaunches of one end: {relaunches[job.name]}")
        decision = recorded_decision(ledger, job.name)
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
        if expected == "retry":  # relaunched once (after a quota wall, maybe), or refused by the budget
            ok = (kind in ("relaunched", "quota-wall") and actions == 1) or (refused and actions == 0)
            ok = ok or (kind == "quota-wall" and actions == 0 and job.root in given_up)
        else:
            ok = kind in ACCEPTED.get(expected, ()) and actions == 0
        audit.check(
            ok, f"{job.name} ({job.kind}, {job.end_status}): expected {expected}, got {kind}, {actions} relaunches"
        )
    audit.figures["job_ends"] = dict(sorted(decided.items()))


def _actions_per_cause(run: ChaosRecord, audit: Audit, relaunches: dict[str, list[str]]) -> None:
    """Each cause and the actions taken on it, counted from SageMaker's side (the jobs that exist), not from
    trainguard's ledger. A quota wall is met by trainguard's relaunch: its cause is the job's end."""
    jobs = run.jobs.values()
    ends = [job for job in jobs if job.end_status in ENDED]
    hangs = [job for job in jobs if _due_a_stop(job)]
    actions = [len(relaunches[job.name]) for job in ends] + [int(job.stopped_by == "trainguard") for job in hangs]
    due = sum(1 for job in ends if expected_end(job) == "retry") + len(hangs)
    refused = audit.figures["budgets"]["relaunches_refused_by_the_budget"]
    given_up = audit.figures["quota_walls"]["given_up_waiting"]
    once = sum(1 for n in actions if n == 1)
    audit.figures["actions_per_cause"] = {
        "causes": len(actions),
        "due_an_action": due,
        "acted_on_once": once,
        "more_than_once": sum(1 for n in actions if n > 1),
        "due_but_refused_by_the_budget": refused,
        "due_but_the_quota_came_too_late": given_up,
    }
    audit.check(
        due == once + refused + given_up,
        "the causes due an action are not all acted on once (or refused by the budget, or given up at a quota wall)",
    )


def stop_was_right(job: JobTruth, clock: SimClock) -> bool:
    """trainguard may act on the job, and it was hung (the fault table's `hung`) when the stop was asked for:
    a stop in a healthy silence or on a false alarm is wrong."""
    assert job.stop_requested_at is not None
    hung = job.activity is not None and job.activity.hung_at(clock.hours_of(job.stop_requested_at))
    return job.hang_stops_allowed and hung


def _due_a_stop(job: JobTruth) -> bool:
    """Hung for good (its fault's ending) and trainguard may act on it. Not a livelock: its lines go on, and only a
    job that reports its steps shows it (issue 27); the benchmark measures those."""
    if job.kind not in HANG_KINDS:
        return False
    seen = FAULT_TABLE[FaultKind(job.kind)].logs is not Logs.HEARTBEAT
    return seen and job.hang_stops_allowed and job.hung


def _stops(run: ChaosRecord, audit: Audit) -> None:
    """Every stop of trainguard's was of a hung job it may act on, and every hang due a stop got one. One kind of
    wrong stop is counted and not a violation: a job that prints trainguard's progress contract, stopped in a silent
    pause it did not announce; the contract asks a job to announce every long phase, and the product takes it at
    its word, a trade docs/progress.md makes deliberately ("Why the job is taken at its word")."""
    jobs = run.jobs.values()
    stops = [job for job in jobs if job.stopped_by == "trainguard"]
    wrong = [job for job in stops if not stop_was_right(job, run.clock)]
    at_its_word = [job.name for job in wrong if taken_at_its_word(job, run.clock)]
    missed = [job.name for job in jobs if _due_a_stop(job) and job.stopped_by != "trainguard"]
    audit.figures["stalls"] = {
        "hangs": sum(1 for job in jobs if job.hung),
        "stopped_by_trainguard": len(stops),
        "stopped_not_in_a_verified_stall": len(wrong),
        "of_them_contract_jobs_silent_unannounced": len(at_its_word),
        "hangs_not_stopped": len(missed),
        "stop_calls": sum(1 for call in run.guard_log if call.operation == "StopTrainingJob"),
        "alarm_events": Counter(run.delivery.deliveries.log.events.values())["stall-alarms"],
        "false_alarms_planned": len(run.delivery.false_alarms.sent),
    }
    audit.check(
        len(wrong) == len(at_its_word),
        f"stopped while not hung: {[job.name for job in wrong if job.name not in at_its_word]}",
    )
    audit.check(not missed, f"hung, opted in, and never stopped: {missed}")


def taken_at_its_word(job: JobTruth, clock: SimClock) -> bool:
    """A job trainguard may stop, that prints trainguard's contract, stopped while silent in a pause it did not
    announce, at least the step limit's floor into it (no step limit is shorter)."""
    assert job.stop_requested_at is not None
    silent_for = job.silent_unannounced_for(clock.hours_of(job.stop_requested_at))
    return job.hang_stops_allowed and job.reports_by_contract and silent_for >= PROGRESS_FLOOR_MINUTES / 60


def _quota_walls(run: ChaosRecord, audit: Audit) -> set[str]:
    """The trace's walls are met by trainguard's relaunches (ResourceLimitExceeded), or by the user's first launch
    (CloudTrail's record, to failed-launches). No quota gets more increase requests than the walled lineages
    trainguard may act on that SageMaker refused naming it (the job's own type's, or one of its InstancePreferences').
    Returns the walled lineages never launched after the wall (given up)."""
    creates = [c for c in run.guard_log if c.operation == "CreateTrainingJob" and c.root in run.walls]
    refused = [(c.root, c.at, c.error_message) for c in creates if c.error_code == "ResourceLimitExceeded"]
    refused_at: dict[str, float] = {}
    asked: dict[str, set[str]] = {}
    users = [(root, at, message) for root, (at, message, acts) in run.refused_user_launches.items() if acts]
    for root, at, message in sorted([*refused, *users]):
        refused_at.setdefault(root, at)
        asked.setdefault(root, set()).add(quota_in_limit_message(message))
    walled = set(refused_at)
    launched = {c.root for c in creates if c.succeeded and c.root in walled and c.at >= refused_at[c.root]}
    allowed = {job.root for job in run.jobs.values() if job.name == job.root and job.stops_allowed}
    allowed |= {root for root, _, _ in users}  # none of their jobs may exist: the wall refused the first
    requests = Counter(r["QuotaName"] for r in run.quota_requests)
    eligible = Counter(quota for root in walled & allowed for quota in asked[root])
    for quota, count in requests.items():
        audit.check(count <= eligible[quota], f"{count} increase requests for {quota}, {eligible[quota]} walls")
    given_up = {root for root in walled - launched if run.quota_too_late(root)}
    audit.check(walled - launched <= given_up, f"walled, never launched, its quota in time: {walled - launched}")
    audit.figures["quota_walls"] = {
        "refused_launches": len(walled),
        "users_launches_refused": len(run.refused_user_launches),
        "of_them_trainguard_may_act_on": len(users),
        "launched_after_increase": len(walled & launched),
        "given_up_waiting": len(given_up),
        "increase_requests": sum(requests.values()),
    }
    return given_up


def _lineage_root(job: JobTruth, jobs: dict[str, JobTruth]) -> str:
    """The launch trainguard's relaunches of this job count from: the end of its retry-of chain."""
    while job.retry_of and job.retry_of in jobs:
        job = jobs[job.retry_of]
    return job.name


def _budgets(run: ChaosRecord, audit: Audit, ledger: Ledger) -> None:
    limit = run.config.retry_budget_per_hour
    jobs = run.jobs
    counters = {sk: int(item["used"]["N"]) for (pk, sk), item in ledger.items() if pk == "budget#retries"}
    # Every job trainguard created (a relaunch, or a launch after a quota wall), when SageMaker saw it.
    launched = sorted(job.created_at for job in jobs.values() if job.retry_of and job.created_at is not None)
    in_60_minutes = [bisect_left(launched, at + timedelta(minutes=60)) - n for n, at in enumerate(launched)]
    lineages = Counter(_lineage_root(job, jobs) for job in jobs.values() if job.retry_of)
    over_lineage = [
        f"{name}: {count} > {jobs[name].max_retries}"
        for name, count in lineages.items()
        if count > jobs[name].max_retries
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
