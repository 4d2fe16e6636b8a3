"""The names of trainguard's own metrics (Powertools EMF, namespace TrainGuard, dimension service):
written by the handlers, graphed by the dashboard and alarmed on by the stack. One source for both."""

from __future__ import annotations

OUTCOME_METRIC_PREFIX = "Outcome-"
MALFORMED_EVENTS = "MalformedEvents"
PROBER_CYCLES = "ProberCycles"  # the prober's heartbeat: the prober-health alarm watches it
WATCHED_JOBS = "WatchedJobs"
EVENTS_FROM_ELSEWHERE = "EventsFromElsewhere"  # an event about a job of an account or region not served: skipped
SPOKE_FAILURES = "SpokeFailures"  # a hub's scheduled function could not serve one spoke this time
LOG_LINES_FROM_THE_FUTURE = "LogLinesFromTheFuture"  # log lines stamped after their event (domain/log_clock.py)


def outcome_metric(kind: str) -> str:
    """The metric counting one kind of outcome (`relaunched`, `stall-stopped`, ...)."""
    return f"{OUTCOME_METRIC_PREFIX}{kind}"
