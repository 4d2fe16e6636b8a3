"""SNS subjects: under 100 characters, UTF-8, no line breaks or control characters (SNS Publish docs)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from trainguard.domain.console_links import console_links
from trainguard.domain.messages import SUBJECT_LIMIT, compose_quota_request_closed_notification, fit_subject

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def test_a_job_name_at_its_limit_fits_whole() -> None:
    subject = fit_subject("[trainguard] relaunched {job}", "j" * 63, "internal")
    assert len(subject) < SUBJECT_LIMIT and subject.endswith("j" * 63)


def test_a_long_name_is_cut_to_fit() -> None:  # quota names stand where job names do in quota messages
    subject = fit_subject("[trainguard] quota request approved: {job}", "q" * 150, "quota")
    assert len(subject) < SUBJECT_LIMIT and subject.endswith("...")


def test_unicode_is_kept_and_control_characters_are_replaced() -> None:
    subject = fit_subject("[trainguard] {job} ended: {category}", "modèle-日本", "data\nbad\x07")
    assert "modèle-日本" in subject and "\n" not in subject and "\x07" not in subject
    assert all(ch.isprintable() for ch in subject)


# Links are built from structured fields only: a region of AWS's shape and a name SageMaker accepts as a job's
# (botocore's CreateTrainingJobRequest.TrainingJobName pattern, trainguard.domain.naming).
NO_JOB_LINK = {
    "a quota's name": "ml.p5.48xlarge for training job usage",
    "a name CloudTrail recorded for a refused launch": "x#/../../evil?region=",
    "a name with a link in it": "[x](https://evil.example)",
}


@pytest.mark.parametrize("name", list(NO_JOB_LINK.values()), ids=list(NO_JOB_LINK))
def test_a_name_that_is_no_job_name_gets_no_job_link(name: str) -> None:
    notification = compose_quota_request_closed_notification(name, "4", "req-1", "", "APPROVED", "us-east-1", NOW)
    assert [link.label for link in notification.links] == ["quotas"]
    assert "/jobs/" not in notification.body and "evil.example" not in notification.body


def test_no_links_for_a_region_not_of_aws_s_shape() -> None:
    assert console_links("us-east-1.evil.example/#", "llama") == ()
    assert [link.label for link in console_links("us-gov-west-1", "llama", new_job="llama-retry1")] == [
        "job",
        "logs",
        "new job",
    ]
