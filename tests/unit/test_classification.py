"""The failure classifier: every real text in the fixture, texts from outside it, and hostile input."""

from __future__ import annotations

import ast
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from trainguard.domain import classification
from trainguard.domain.classification import DECISION_BY_CATEGORY, classify_failure_reason, classify_job_end
from trainguard.domain.model import Category, Decision

FAILURE_REASONS = Path(__file__).parents[1] / "fixtures" / "failure_reasons.json"

# The fixture's category names, in our words.
FIXTURE_CATEGORY = {
    "capacity": Category.CAPACITY,
    "config/permission": Category.CONFIG,
    "data": Category.DATA,
    "hardware": Category.HARDWARE,
    "internal": Category.INTERNAL,
    "max-runtime": Category.MAX_RUNTIME,
    "nccl-hang/collective-timeout": Category.COLLECTIVE_TIMEOUT,
    "oom": Category.OOM,
    "quota": Category.QUOTA,
    "spot-interruption": Category.SPOT_INTERRUPTION,
    "unknown": Category.UNKNOWN,
    "user-code": Category.USER_CODE,
}


def _load_fixture() -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = json.loads(FAILURE_REASONS.read_text(encoding="utf-8"))
    return entries


def _fixture_id(index: int, entry: dict[str, Any]) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", entry["text"][:40].lower()).strip("-")
    return f"{index:02d}-{entry['category']}-{words}"


FIXTURE = _load_fixture()


@pytest.mark.parametrize("entry", FIXTURE, ids=[_fixture_id(i, e) for i, e in enumerate(FIXTURE)])
def test_every_real_text_gets_its_category_and_decision(entry: dict[str, Any]) -> None:
    assert_classified_as_the_fixture_says(entry)


def assert_classified_as_the_fixture_says(entry: dict[str, Any]) -> None:
    """One fixture entry (text, category, decision) against the classifier; also used for other fixtures."""
    result = classify_failure_reason(entry["text"])
    # A null decision in the fixture means the text alone cannot decide: a person should look.
    expected_decision = Decision(entry["decision"]) if entry["decision"] else Decision.NOTIFY
    assert (result.category, result.decision) == (FIXTURE_CATEGORY[entry["category"]], expected_decision), result.reason
    assert result.reason.endswith(".")


# Texts that are not in the fixture: AWS, driver and framework wording, quoted or closely modelled on
# real messages, to show the rules generalise (rewording, wrapping, truncation) and to pin the traps.
MODELLED = json.loads((FAILURE_REASONS.parent / "failure_reasons_modelled.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("category", "text"),
    [(FIXTURE_CATEGORY[case["category"]], case["text"]) for case in MODELLED],
    ids=[case["id"] for case in MODELLED],
)
def test_texts_outside_the_fixture(category: Category, text: str) -> None:
    result = classify_failure_reason(text)
    assert result.category == category, result.reason
    assert result.decision == DECISION_BY_CATEGORY[category]


def test_every_category_has_a_decision() -> None:
    assert set(DECISION_BY_CATEGORY) == set(Category)


def test_reason_quotes_the_words_that_matched() -> None:
    result = classify_failure_reason("InternalServerError: We encountered an internal error.")
    assert "'InternalServerError'" in result.reason
    assert "relaunch from the last checkpoint" in result.reason


def test_reason_quotes_wrapped_words_on_one_line() -> None:
    result = classify_failure_reason("ResourceLimitExceeded: The account-level service\n   limit 'x'")
    assert result.category == Category.QUOTA
    assert "\n" not in result.reason


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\t ",
        "".join(chr(33 + (i * 7) % 90) for i in range(1024)),  # 1,024 characters of punctuation and letters
        "训练失败 💥 ошибка \u202e\u0000 ñ \ufffd",
        "\u0130" * 1024,  # lower-cases to two characters each
    ],
    ids=["empty", "whitespace", "1024-chars-of-junk", "unicode", "changes-length-when-lowered"],
)
def test_junk_is_unknown_and_notifies(text: str) -> None:
    result = classify_failure_reason(text)
    assert (result.category, result.decision) == (Category.UNKNOWN, Decision.NOTIFY)
    assert result.reason


def test_text_that_changes_length_when_lowered_still_matches() -> None:
    result = classify_failure_reason("\u0130" * 10 + " InternalServerError: please try again.")
    assert result.category == Category.INTERNAL


def _long_texts() -> dict[str, str]:
    rng = random.Random(7)
    return {
        "ascii-junk": "".join(chr(rng.randrange(32, 127)) for _ in range(100_000)),
        "unicode-junk": "".join(chr(rng.randrange(32, 0x2FFF)) for _ in range(100_000)),
        "one-letter": "a" * 100_000,
        "newlines": "x" + "\n" * 100_000 + "x",
        "near-miss-nccl": ("NCCL " + "x" * 60 + " ") * 1_500,
        "near-miss-efa": "EFA " * 25_000,
        "near-miss-xid": "Xid (" * 20_000,
        "near-miss-exit": "exit code " * 10_000,
        # the windows after an error's name ("does not support", a RuntimeError's own message)
        "near-miss-error": "RuntimeError: x " * 6_000,
        "near-miss-support": "error: " + "does not " * 11_000,
    }


def test_no_rule_can_backtrack_without_bound() -> None:
    """By construction (tests/regex_safety.py): no unbounded repetition inside another, and no unbounded `.`."""
    from tests.regex_safety import unsafe_constructs
    from trainguard.domain.classification_rules import RULES

    assert {i: found for i, rule in enumerate(RULES) if (found := unsafe_constructs(rule.pattern))} == {}
    assert unsafe_constructs("(a+)+b") and unsafe_constructs("nccl.*timeout")  # the check itself sees them


@pytest.mark.parametrize(("name", "text"), list(_long_texts().items()), ids=list(_long_texts()))
def test_the_cost_of_a_long_text_grows_linearly(name: str, text: str) -> None:
    from tests.regex_safety import GROWTH_FACTOR, LINEAR_GROWTH_LIMIT, cost_growth

    growth = cost_growth(classify_failure_reason, text)
    assert growth < LINEAR_GROWTH_LIMIT, f"{name}: {GROWTH_FACTOR}x the text cost {growth:.1f}x"


def test_a_cause_at_the_end_of_a_long_log_is_found() -> None:
    log = "step 1 loss 0.1\n" * 6_000 + "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert classify_failure_reason(log).category == Category.OOM


# The failure reasons of the job ends below.
INTERNAL_ERROR = "InternalServerError: We encountered an internal error."
MORE_MEMORY = "ClientError: Please use an instance type with more memory"
NO_CAPACITY = "CapacityError: Unable to provision requested ML compute capacity."
JOB_ENDS: list[tuple[str, str, str, str, Category, Decision]] = [
    ("completed", "Completed", "Completed", "", Category.COMPLETED, Decision.IGNORE),
    ("in-progress", "InProgress", "Training", "", Category.IN_PROGRESS, Decision.IGNORE),
    ("stopping", "Stopping", "Stopping", "", Category.IN_PROGRESS, Decision.IGNORE),
    ("failed-internal", "Failed", "Failed", INTERNAL_ERROR, Category.INTERNAL, Decision.RETRY),
    ("failed-oom", "Failed", "Failed", MORE_MEMORY, Category.OOM, Decision.NOTIFY),
    ("failed-without-reason", "Failed", "Failed", "", Category.UNKNOWN, Decision.NOTIFY),
    ("max-runtime", "Stopped", "MaxRuntimeExceeded", "", Category.MAX_RUNTIME, Decision.NOTIFY),
    ("max-wait", "Stopped", "MaxWaitTimeExceeded", "", Category.SPOT_INTERRUPTION, Decision.RETRY),
    ("max-wait-typo", "Stopped", "MaxWaitTmeExceeded", "", Category.SPOT_INTERRUPTION, Decision.RETRY),
    ("max-wait-lower", "Stopped", "maxwaittimeexceeded", "", Category.SPOT_INTERRUPTION, Decision.RETRY),
    ("spot-interrupted", "Stopped", "Interrupted", "", Category.SPOT_INTERRUPTION, Decision.RETRY),
    ("stopped-on-purpose", "Stopped", "Stopped", "", Category.STOPPED, Decision.IGNORE),
    ("stopped-no-secondary", "Stopped", "", "", Category.STOPPED, Decision.IGNORE),
    ("status-case-and-spaces", " failed ", "", NO_CAPACITY, Category.CAPACITY, Decision.RETRY),
    ("unknown-status", "Deleting", "", "", Category.UNKNOWN, Decision.NOTIFY),
    ("empty-status", "", "", "", Category.UNKNOWN, Decision.NOTIFY),
]


@pytest.mark.parametrize(
    ("status", "secondary", "reason", "category", "decision"),
    [case[1:] for case in JOB_ENDS],
    ids=[case[0] for case in JOB_ENDS],
)
def test_job_end(status: str, secondary: str, reason: str, category: Category, decision: Decision) -> None:
    result = classify_job_end(status, secondary, reason)
    assert (result.category, result.decision) == (category, decision), result.reason
    assert result.reason


def test_max_wait_reason_speaks_of_spot_capacity() -> None:
    spot = classify_job_end("Stopped", "MaxWaitTimeExceeded", "", managed_spot=True)
    assert "managed spot" in spot.reason and "spot capacity" in spot.reason
    assert "spot capacity" in classify_job_end("Stopped", "MaxWaitTimeExceeded", "").reason


def test_domain_module_imports_nothing_impure() -> None:
    tree = ast.parse(Path(classification.__file__).read_text(encoding="utf-8"))
    nodes = list(ast.walk(tree))
    imported = {alias.name.split(".")[0] for node in nodes if isinstance(node, ast.Import) for alias in node.names}
    imported |= {(node.module or "").split(".")[0] for node in nodes if isinstance(node, ast.ImportFrom)}
    assert imported <= {"__future__", "re", "dataclasses", "trainguard"}


def test_the_growth_check_tells_quadratic_from_linear() -> None:
    """The check itself: a backtracking search (each start scans to the end: quadratic) fails it, a scan passes."""
    from tests.regex_safety import LINEAR_GROWTH_LIMIT, cost_growth

    quadratic = re.compile(r"\s*x")
    assert cost_growth(quadratic.search, " " * 2_400) > LINEAR_GROWTH_LIMIT
    assert cost_growth(lambda text: text.count("x"), " " * 400_000) < LINEAR_GROWTH_LIMIT
