"""Structured logs: every line of an invocation about a job names the job and its lineage, and no key
from one invocation leaks into the next (a warm Lambda container keeps the logger between events)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes import described_job, fake_ports
from tests.unit.test_handlers import failed_event
from trainguard.events.training_job import MalformedInput
from trainguard.handlers import job_events, retry_launcher
from trainguard.handlers.observability import logger


@pytest.fixture
def log_lines() -> Iterator[Any]:
    """What the handlers' logger writes (it holds the stream it was built with, so read it there)."""
    level, written = logger.log_level, io.StringIO()
    previous = logger.registered_handler.setStream(written)
    logger.setLevel("INFO")
    logger.clear_state()

    def lines() -> list[dict[str, Any]]:
        return [json.loads(line) for line in written.getvalue().splitlines()]

    yield lines
    logger.registered_handler.setStream(previous)
    logger.setLevel(level)
    logger.clear_state()


class _Context:
    function_name = "trainguard-job-events"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:trainguard-job-events"
    aws_request_id = "req-1"


def test_every_line_about_a_relaunched_job_carries_its_lineage_from_the_root_tag(log_lines: Any) -> None:
    ports = fake_ports()
    tags = {"trainguard:enabled": "true", "trainguard:root-job": "llama-pretrain", "trainguard:attempt": "1"}
    ports.jobs.add(described_job("llama-pretrain-retry1", checkpoint="s3://ckpt-bucket/llama/"), tags)
    job_events.handle(failed_event("llama-pretrain-retry1", tags=tags), ports)
    lines = log_lines()
    assert lines, "the outcome line at least"
    for line in lines:
        assert line["job_name"] == "llama-pretrain-retry1", line
        assert line["lineage"] == "llama-pretrain", line


def test_a_job_without_lineage_tags_is_its_own_lineage(log_lines: Any) -> None:
    retry_launcher.handle({"failed_job_name": "bert-finetune-retry2"}, fake_ports())
    lines = log_lines()
    assert lines and all(line["lineage"] == "bert-finetune" for line in lines)


def test_keys_from_one_invocation_do_not_reach_the_next(log_lines: Any) -> None:
    logger.append_keys(job_name="previous-job", lineage="previous-job")
    with pytest.raises(MalformedInput):  # a malformed event raises (handlers/observability.parsed), logged first
        job_events.handler({"detail-type": "not a state change"}, _Context())
    lines = log_lines()
    assert lines and all("previous-job" not in json.dumps(line) for line in lines)


def test_log_lines_stamped_after_their_event_are_logged_with_the_job_and_how_many(log_lines: Any) -> None:
    from datetime import timedelta

    from tests.fakes import NOW
    from tests.unit.test_rhythm_workflows import delivery
    from trainguard.handlers import log_activity

    log_activity.handle(
        delivery("llama-pretrain", [NOW, NOW + timedelta(days=1), NOW + timedelta(days=2)]), fake_ports()
    )

    [refused] = [line for line in log_lines() if line["message"] == "log lines stamped after their event refused"]
    assert refused["level"] == "WARNING" and refused["job_name"] == "llama-pretrain" and refused["refused"] == 2
