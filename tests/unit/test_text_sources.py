"""Who wrote a text decides what it may buy (domain/classification.classify_text, docs/decisions.md)."""

from __future__ import annotations

import pytest

from tests.conftest import load_fixture
from trainguard.domain.classification import classify_failure_reason, classify_text, script_text_start
from trainguard.domain.model import Category, Decision, TextSource

API, FAILURE_REASON = TextSource.API_ERROR, TextSource.SAGEMAKER
QUOTA_WORDS = (
    "ResourceLimitExceeded: The account-level service limit 'ml.p5.48xlarge for training job usage' is 0 Instances, "
    "with current utilization of 0 Instances and a request delta of 64 Instances."
)


@pytest.mark.parametrize(
    ("text", "source", "category", "decision", "writer"),
    [
        # An error AWS returned to a launch may buy a quota request.
        (QUOTA_WORDS, API, Category.QUOTA, Decision.QUOTA, API),
        # SageMaker's own words in a FailureReason: a same-shape relaunch, whose refusal is an API error.
        (QUOTA_WORDS, FAILURE_REASON, Category.QUOTA, Decision.RETRY, TextSource.SAGEMAKER),
        # Issue 24: a crafted sentence inside AlgorithmError filed a quota request.
        (f"AlgorithmError: {QUOTA_WORDS}", FAILURE_REASON, Category.QUOTA, Decision.NOTIFY, TextSource.TRAINING_SCRIPT),
        # Issue 24: the quota rule ran before the user-code rules.
        (
            "Traceback (most recent call last):\n  File \"prep.py\"\nValueError: bad row 'ResourceLimitExceeded'",
            FAILURE_REASON,
            Category.QUOTA,
            Decision.NOTIFY,
            TextSource.TRAINING_SCRIPT,
        ),
        # Issue 24: the script's capacity words buy a relaunch of the same shape, read as the script's.
        (
            "AlgorithmError: RuntimeError: insufficient capacity",
            FAILURE_REASON,
            Category.CAPACITY,
            Decision.RETRY,
            TextSource.TRAINING_SCRIPT,
        ),
        (
            "CapacityError: Unable to provision requested ML compute capacity. Please retry using a different ML "
            "instance type.",
            FAILURE_REASON,
            Category.CAPACITY,
            Decision.RETRY,
            TextSource.SAGEMAKER,
        ),
        (
            "Unable to provision requested ML compute capacity due to InsufficientInstanceCapacity error.",
            FAILURE_REASON,
            Category.CAPACITY,
            Decision.RETRY,
            TextSource.SAGEMAKER,
        ),
        (
            "InternalServerError: We encountered an internal error. Please try again.",
            FAILURE_REASON,
            Category.INTERNAL,
            Decision.RETRY,
            TextSource.SAGEMAKER,
        ),
        # Log lines are the script's, whatever they say.
        (
            "CapacityError: no capacity",
            TextSource.TRAINING_SCRIPT,
            Category.CAPACITY,
            Decision.RETRY,
            TextSource.TRAINING_SCRIPT,
        ),
        (QUOTA_WORDS, TextSource.TRAINING_SCRIPT, Category.QUOTA, Decision.NOTIFY, TextSource.TRAINING_SCRIPT),
    ],
)
def test_what_a_text_may_buy_depends_on_who_wrote_it(
    text: str, source: TextSource, category: Category, decision: Decision, writer: TextSource
) -> None:
    reading = classify_text(text, source)
    assert (reading.category, reading.decision, reading.source) == (category, decision, writer), reading.reason
    assert reading.reason.endswith(".")


@pytest.mark.parametrize(
    ("text", "start"),
    [
        ("AlgorithmError: ExecuteUserScriptError: ExitCode 1", 0),
        ("ClientError: Data download failed: AlgorithmError: x", len("ClientError: Data download failed: ")),
        ("ClientError: Please use an instance type with more memory.", None),
        ("Traceback (most recent call last): ...", 0),  # opens with no SageMaker prefix: may all be the script's
    ],
)
def test_where_the_scripts_words_begin(text: str, start: int | None) -> None:
    assert script_text_start(text) == (len(text) if start is None else start)


def test_an_api_error_is_read_as_the_words_say() -> None:
    for entry in load_fixture("failure_reasons.json"):
        as_api, as_words = classify_text(entry["text"], API), classify_failure_reason(entry["text"])
        assert (as_api.category, as_api.decision, as_api.reason) == (
            as_words.category,
            as_words.decision,
            as_words.reason,
        )


def test_a_failure_reason_never_files_a_quota_request() -> None:
    for entry in load_fixture("failure_reasons.json"):
        assert classify_text(entry["text"], FAILURE_REASON).decision is not Decision.QUOTA
