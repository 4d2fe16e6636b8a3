"""The Lambda handlers: parse, hand over, return an outcome. Malformed input is counted and raised (Lambda's retries,
the dead-letter queue and the Errors alarm see it: handlers/observability.parsed), never an action."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import load_fixture
from tests.fakes import described_job, fake_ports
from trainguard.domain.outcome import OutcomeKind
from trainguard.events.training_job import MalformedInput
from trainguard.handlers import failed_launches, job_events, log_activity, retry_launcher, stall_alarms
from trainguard.handlers.observability import metrics
from trainguard.metric_names import MALFORMED_EVENTS

# The handler modules: those that define a Lambda `handler`.
HANDLER_MODULES = [path for path in Path(job_events.__file__).parent.glob("*.py") if "def handler(" in path.read_text()]
SAMPLE = load_fixture("events/sagemaker_training_job_state_change.awsdocs.json")


def failed_event(name: str = "llama-pretrain", tags: Any = None) -> dict[str, Any]:
    event = copy.deepcopy(SAMPLE)
    event["detail"].update(
        TrainingJobName=name,
        TrainingJobStatus="Failed",
        SecondaryStatus="Failed",
        FailureReason="InternalServerError: We encountered an internal error. Please try again.",
    )
    if tags is not None:
        event["detail"]["Tags"] = tags
    return event


def test_a_failure_event_is_acted_on_from_the_described_job_not_the_event() -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(), {"trainguard:enabled": "true"})
    # the event's tags say nothing about opt-in; ListTags does
    outcome = job_events.handle(failed_event(tags={}), ports)
    assert outcome.kind is OutcomeKind.RELAUNCHED


@pytest.mark.parametrize("tags", [{"trainguard:enabled": "true"}, [{"Key": "trainguard:enabled", "Value": "true"}]])
def test_either_tag_shape_in_the_event_parses(tags: Any) -> None:
    from trainguard.events.state_change import parse_state_change

    assert parse_state_change(failed_event(tags=tags)).job.tags == {"trainguard:enabled": "true"}


def test_the_docs_sample_and_the_public_copy_parse() -> None:
    from trainguard.events.state_change import parse_state_change

    docs = parse_state_change(SAMPLE).job
    assert docs.status == "Completed" and docs.creation_time is not None
    copy_ = parse_state_change(load_fixture("events/sagemaker_training_job_state_change.mlspace_test.json")).job
    assert copy_.tags["project"] == "UnitTestProject" and copy_.creation_time.year == 2023


def _without(path: tuple[str, ...]) -> dict[str, Any]:
    event = failed_event()
    target = event
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return event


MALFORMED = {
    "not a dict": ["a", "list"],
    "a string": "{}",
    "no detail": _without(("detail",)),
    "no job name": _without(("detail", "TrainingJobName")),
    "no status": _without(("detail", "TrainingJobStatus")),
    "name is a number": {**failed_event(), "detail": {**failed_event()["detail"], "TrainingJobName": 7}},
    "detail is a list": {**failed_event(), "detail": []},
    "another source": {**failed_event(), "source": "aws.ec2"},
    "another detail-type": {
        **failed_event(),
        "detail-type": "SageMaker HyperParameter Tuning Job State Change",
    },
}


MALFORMED_FOR = {
    **{f"job events, {case}": (job_events, event) for case, event in MALFORMED.items()},
    **{
        f"retry launcher, {event!r}": (retry_launcher, event)
        for event in ({}, {"failed_job_name": ""}, {"failed_job_name": 3}, [], "x")
    },
    "stall alarms, no detail": (stall_alarms, {"source": "aws.cloudwatch"}),
    "failed launches, no detail": (failed_launches, {"source": "aws.sagemaker"}),
    "log activity, data not base64": (log_activity, {"awslogs": {"data": "not base64!"}}),
}


@pytest.mark.parametrize(("handler", "event"), list(MALFORMED_FOR.values()), ids=list(MALFORMED_FOR))
def test_a_malformed_event_is_counted_and_raised_and_nothing_is_called(handler: Any, event: Any) -> None:
    ports = fake_ports()
    metrics.clear_metrics()
    try:
        with pytest.raises(MalformedInput):
            handler.handle(event, ports)
        assert metrics.metric_set[MALFORMED_EVENTS]["Value"] == [1.0]
    finally:
        metrics.clear_metrics()
    assert ports.jobs.created == [] and ports.notifier.sent == []


def test_a_status_that_needs_nothing_is_skipped_before_any_call() -> None:
    ports = fake_ports()
    outcome = job_events.handle(SAMPLE, ports)  # Completed
    assert outcome.kind is OutcomeKind.SKIPPED and "Completed" in outcome.reason


def test_a_job_that_is_gone_is_skipped() -> None:
    outcome = job_events.handle(failed_event("deleted-job"), fake_ports())
    assert outcome.kind is OutcomeKind.SKIPPED and "no longer exists" in outcome.reason


def test_the_outcome_is_json_for_lambda() -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(), {"trainguard:enabled": "true"})
    assert json.loads(json.dumps(job_events.handle(failed_event(), ports).as_dict()))["kind"] == "relaunched"


def test_the_handler_modules_build_nothing_and_import_no_sdk() -> None:
    import subprocess
    import sys

    handlers = ", ".join(f"trainguard.handlers.{path.stem}" for path in HANDLER_MODULES)
    code = f"import sys, {handlers}; print(sorted(m for m in sys.modules if m.startswith(('boto3', 'botocore.'))))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # boto3 comes with the first event, in handlers/wiring.py; the adapters (and botocore's clients and errors) with
    # each handler module's `build_ports`. (Powertools imports botocore's package itself, for its user agent.)
    assert done.stdout.strip() == "[]"
