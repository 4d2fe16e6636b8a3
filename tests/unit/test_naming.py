from __future__ import annotations

import botocore.session
import pytest

from trainguard.domain.naming import MAX_JOB_NAME_LENGTH, is_valid_job_name, retry_job_name

_MODEL = botocore.session.get_session().get_service_model("sagemaker")
_NAME_SHAPE = _MODEL.operation_model("CreateTrainingJob").input_shape.members["TrainingJobName"]


def test_the_name_rules_are_the_service_models() -> None:
    assert _NAME_SHAPE.metadata["max"] == MAX_JOB_NAME_LENGTH
    assert _NAME_SHAPE.metadata["pattern"] == "[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}"


def test_a_short_root_reads_naturally() -> None:
    assert retry_job_name("llama-pretrain", 1) == "llama-pretrain-retry1"
    assert retry_job_name("llama-pretrain", 12) == "llama-pretrain-retry12"


@pytest.mark.parametrize("length", [1, 2, 40, 50, 56, 57, 58, 62, 63])
@pytest.mark.parametrize("attempt", [1, 9, 10, 20])
def test_every_root_length_gives_a_valid_name(length: int, attempt: int) -> None:
    root = ("a" + "b-c" * 30)[:length].rstrip("-") or "a"
    name = retry_job_name(root, attempt)
    assert is_valid_job_name(name), name
    assert len(name) <= 63


def test_names_are_deterministic_and_unique_across_attempts_and_roots() -> None:
    long_a = "x" * 60 + "aaa"
    long_b = "x" * 60 + "bbb"  # same 60-character prefix
    names = {retry_job_name(root, n) for root in (long_a, long_b, "short") for n in range(1, 6)}
    assert len(names) == 15
    assert retry_job_name(long_a, 2) == retry_job_name(long_a, 2)


def test_a_root_that_only_fits_with_a_cut_keeps_a_digest_of_the_whole_root() -> None:
    name = retry_job_name("p" * 63, 3)
    assert name.endswith("-retry3")
    assert len(name) == 63


def test_attempt_zero_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        retry_job_name("job", 0)
