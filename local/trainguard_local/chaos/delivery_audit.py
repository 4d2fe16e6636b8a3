"""The verdict on how one chaos run's events reached trainguard: every event acted on or skipped with a reason,
none lost; the faults injected; the poisoned job's dead letters, their alarm and the operator's redrive. The
`Audit` that audit.py fills with the verdict on the jobs."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard_local.chaos.chaos_run import ChaosRecord, Ledger
from trainguard_local.chaos.dead_letters import model_disagreements
from trainguard_local.chaos.lambda_runtime import RETRY_ATTEMPTS


@dataclass
class Audit:
    figures: dict[str, Any] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)

    def check(self, holds: bool, violation: str) -> None:
        if not holds:
            self.violations.append(violation)


def events_figures(run: ChaosRecord, audit: Audit) -> None:
    log = run.delivery.deliveries.log
    in_queues = sum(run.delivery.left_in_queues.values())
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


def faults_figures(run: ChaosRecord, audit: Audit) -> None:
    injector, backoff = run.delivery.injector, run.delivery.backoff
    audit.figures["faults"] = {
        "aws_call_attempts": injector.attempts,
        "injected": injector.total,
        "by_kind": dict(sorted(injector.injected.items())),
        "by_service": dict(sorted(injector.by_service.items())),
        "throttling_storms": injector.storms,
        "botocore_retries": backoff.sleeps,
        "botocore_backoff_seconds": round(backoff.seconds, 1),
        "process_deaths": [f"{op} {name}" for op, name in injector.deaths],
        "cold_starts": run.delivery.runtime.cold_starts,
    }


def recorded_decision(ledger: Ledger, name: str) -> tuple[str, str] | None:
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


def dead_letters_figures(run: ChaosRecord, audit: Audit) -> None:
    """The poison's events reach a dead-letter queue, its alarm goes off, and after the operator's redrive its end
    is decided once: relaunched, or refused by the launch budget (the redrive may come in a busy hour)."""
    runtime, log = run.delivery.runtime, run.delivery.deliveries.log
    poisoned = [inv for _, _, inv in runtime.dead_letters if run.poison_job in json.dumps(inv.payload)]
    last_errors = Counter(a.error.split(":", 1)[0] for a in log.attempts if a.dead_lettered)
    relaunched = sum(1 for job in run.jobs.values() if job.retry_of == run.poison_job)
    decision = recorded_decision(run.ledger, run.poison_job)
    kind, reason = decision or ("none", "")
    refused = kind == "not-relaunched" and "budget" in reason
    audit.figures["dead_letters"] = {
        "records": len(runtime.dead_letters),
        "by_last_error": dict(sorted(last_errors.items())),
        "poison_records": len(poisoned),
        "alarms": {
            path.split("/")[1]: {"messages": n, "before": a, "after": b} for path, (n, a, b) in run.alarms.items()
        },
        "redriven": run.delivery.operator.redriven,
        "poison_end_after_redrive": "refused by the budget" if refused else kind,
        "poison_relaunched_after_redrive": relaunched,
    }
    audit.check(bool(poisoned), "the poison event did not reach the dead-letter queue")
    audit.check(
        (kind, relaunched) == ("relaunched", 1) or (refused and relaunched == 0),
        f"the poison job's end after the redrive: {kind}, {relaunched} relaunches (due: one, or the budget's refusal)",
    )
    for path, (messages, before, after) in run.alarms.items():
        audit.check(before == "OK", f"{path}: its alarm is {before} before any dead letter")
        audit.check(after == ("ALARM" if messages else "OK"), f"{path}: {messages} messages, alarm {after}")
    for problem in model_disagreements(run.wiring, RETRY_ATTEMPTS) if run.wiring is not None else []:
        audit.violations.append(f"the Lambda model differs from the stack: {problem}")
