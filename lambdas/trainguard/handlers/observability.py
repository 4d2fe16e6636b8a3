"""The Powertools Logger and Metrics shared by the handlers (the only things built at import time)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from trainguard.domain.naming import lineage_of
from trainguard.domain.outcome import Outcome
from trainguard.domain.policy import TagKeys
from trainguard.events.training_job import MalformedInput
from trainguard.metric_names import MALFORMED_EVENTS, outcome_metric

Parsed = TypeVar("Parsed")

logger = Logger(service="trainguard")
metrics = Metrics(service="trainguard")


def follow_job(job_name: str, tags: Mapping[str, str] | None = None, tag_prefix: str = "", **keys: str) -> None:
    """From here on, every log line of this invocation names the job and its lineage: the job the
    lineage started from, from the `root-job` tag trainguard writes on each relaunch, else the name.
    (The handlers clear these keys at the start of each invocation: `inject_lambda_context(clear_state=True)`.)"""
    root = (tags or {}).get(TagKeys(tag_prefix).root_job, "") if tag_prefix else ""
    logger.append_keys(job_name=job_name, lineage=root or lineage_of(job_name), **keys)


def record_outcome(outcome: Outcome) -> None:
    """One log line and one metric per outcome, so every decision can be found and counted. A handler
    that watches many jobs (quota watch, prober) logs each outcome with its own job and lineage."""
    current = logger.get_current_keys()
    followed = current.get("job_name") == outcome.job_name
    logger.info(
        "outcome",
        outcome=outcome.kind.value,
        job_name=outcome.job_name,
        lineage=current.get("lineage") if followed else lineage_of(outcome.job_name),
        decision=outcome.decision,
        category=outcome.category,
        new_job_name=outcome.new_job_name,
        reason=outcome.reason,
    )
    metrics.add_metric(name=outcome_metric(outcome.kind.value), unit=MetricUnit.Count, value=1)


def record_malformed(reason: str) -> None:
    logger.error("malformed event", reason=reason)
    metrics.add_metric(name=MALFORMED_EVENTS, unit=MetricUnit.Count, value=1)


def parsed(parse: Callable[[Any], Parsed], event: Any) -> Parsed:
    """The event as `parse` reads it. A malformed one is logged, counted (MalformedEvents) and raised again, so that
    someone hears of it: a skip would leave only a graph.

    Raising never makes a loop. EventBridge rules invoke the functions asynchronously, and so does the CloudWatch
    Logs subscription; each function's asynchronous invoke config (infra/guard_function.py) retries a function error
    twice, then sends the invocation record, the event inside it, to its construct's dead-letter queue: "If the
    function returns an error, by default Lambda attempts to run it two more times"
    (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html). A poison event therefore
    costs three invocations, is kept where a person can read it, and is told to the topic by the function's Errors
    alarm and by the queue's alarm. A relaunch's one-time schedule retries at most as its RetryPolicy says
    (adapters/scheduler.py: 10 attempts within an hour), then deletes itself. No trainguard function reads a queue or
    a stream through an event source mapping, where a raise would retry its batch and block what comes after it
    (https://docs.aws.amazon.com/lambda/latest/dg/invocation-retries.html)."""
    try:
        return parse(event)
    except MalformedInput as err:
        record_malformed(str(err))
        raise


def recorded(outcome: Outcome) -> Outcome:
    """The handler's outcome, logged and counted (record_outcome)."""
    record_outcome(outcome)
    return outcome
