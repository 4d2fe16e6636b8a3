"""What the text says, recognised: user-side failures get their own reason and next step, not the fallback.

Real texts in tests/fixtures/failure_reasons_recognised.json, each with its source: the job's own time limit
(`MaxRuntimeExceeded`), Python exceptions quoted without the `AlgorithmError:` prefix, TensorFlow and glog
`Check failed:` aborts, "does not support", segmentation faults, shared memory, a GPU the build does not fit.

The measure: among the real texts of every fixture whose category is on the user's side (user-code, data,
config, oom, max-runtime; all notify), the share that only the unknown-text fallback got right (its decision
is notify too, but its reason says nothing). Print it with

    PYTHONPATH=lambdas:. .venv/bin/python -m tests.unit.test_classification_recognised
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.unit.test_classification import MODELLED, assert_classified_as_the_fixture_says
from trainguard.domain.classification import classify_failure_reason
from trainguard.domain.model import Category

FIXTURES = Path(__file__).parents[1] / "fixtures"
RECOGNISED: list[dict[str, Any]] = json.loads((FIXTURES / "failure_reasons_recognised.json").read_text("utf-8"))
# Every fixture of real texts, each with its source (failure_reasons_modelled.json is modelled, so it is left out).
REAL_FIXTURES = (
    "failure_reasons.json",
    "failure_reasons_over_the_years.json",
    "distributed_failure_reasons.json",
    "failure_reasons_recognised.json",
)
USER_SIDE = {"user-code", "data", "config/permission", "oom", "max-runtime"}


def user_side_texts() -> dict[str, list[str]]:
    """Each real fixture's texts whose category is on the user's side."""
    texts: dict[str, list[str]] = {}
    for name in REAL_FIXTURES:
        entries = json.loads((FIXTURES / name).read_text("utf-8"))
        texts[name] = [e["text"] for e in entries if e.get("category") in USER_SIDE]
    return texts


def right_only_through_the_fallback(texts: list[str]) -> list[str]:
    return [text for text in texts if classify_failure_reason(text).category == Category.UNKNOWN]


def ends_with_a_next_step(reason: str) -> bool:
    """The reason's last sentence says what a person can do: 'Next step: <something>.'"""
    _, _, step = reason.rpartition(" Next step: ")
    return bool(step) and step.endswith(".") and ". " not in step.rstrip(".")


@pytest.mark.parametrize("entry", RECOGNISED, ids=lambda e: f"{e['category']}-{e['text'][:50]}")
def test_each_real_text_gets_its_category_decision_and_next_step(entry: dict[str, Any]) -> None:
    assert_classified_as_the_fixture_says(entry)
    assert ends_with_a_next_step(classify_failure_reason(entry["text"]).reason)


def test_no_user_side_text_is_right_only_through_the_fallback() -> None:
    texts = [text for group in user_side_texts().values() for text in group]
    assert len(texts) >= 60
    assert right_only_through_the_fallback(texts) == []


def test_every_user_side_reason_ends_with_a_next_step() -> None:
    texts = [text for group in user_side_texts().values() for text in group]
    texts += [case["text"] for case in MODELLED if case["category"] in USER_SIDE]
    reasons = {text[:60]: classify_failure_reason(text).reason for text in texts}
    assert {text: reason for text, reason in reasons.items() if not ends_with_a_next_step(reason)} == {}


def test_every_new_text_has_its_source_and_surface() -> None:
    assert len(RECOGNISED) >= 20
    assert all(e["source"] and e["surface"] and e["decision"] for e in RECOGNISED)


# One text of each kind: its reason is its own (no two kinds share one), and none is a wrapper's or the fallback's.
ONE_OF_EACH_KIND = {
    "max-runtime": "MaxRuntimeExceeded - The job stopped because it exceeded the maximum allowed runtime.",
    "import": "ModuleNotFoundError: No module named 'ignite'",
    "device-side-assert": "RuntimeError: CUDA error: device-side assert triggered",
    "shared-memory": "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared "
    "memory (shm).",
    "gpu-build": "RuntimeError: CUDA error: no kernel image is available for execution on the device",
    "model-hub": "OSError: Can't load config for 'None'. Make sure that:",
    "launcher-env": "ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable "
    "RANK expected, but not set",
    "check-failed": "Check failed: work_element_count > 0 (0 vs. 0)",
    "mismatch": "RuntimeError: Expected all tensors to be on the same device, but found at least two devices",
    "unsupported": "RuntimeError: SMDDP does not support: ReduceOp",
    "segfault": "AlgorithmError: Exit Code: 139",
    "value-error": "ValueError: feature_names mismatch: ['f0', 'f1']",
    "missing-path": "FileNotFoundError: [Errno 2] No such file or directory: '/opt/ml/model/samples/sample-1.jpg'",
    "runtime-error": "RuntimeError: DataLoader worker (pid(s) 3216) exited unexpectedly",
}
GENERIC = {
    classify_failure_reason(text).reason.split("(")[0]
    for text in ("AlgorithmError: x", "Traceback (most recent call last)", "TypeError: x", "nothing known")
}


def test_each_kind_has_its_own_reason_with_a_next_step() -> None:
    reasons = {kind: classify_failure_reason(text).reason for kind, text in ONE_OF_EACH_KIND.items()}
    assert len(set(reasons.values())) == len(reasons)
    assert {kind: r for kind, r in reasons.items() if r.split("(")[0] in GENERIC} == {}
    assert {kind: r for kind, r in reasons.items() if not ends_with_a_next_step(r)} == {}


def main() -> None:
    """Print, for each real fixture, how many user-side texts only the fallback got right."""
    all_texts: list[str] = []
    all_fallback: list[str] = []
    for name, texts in user_side_texts().items():
        fallback = right_only_through_the_fallback(texts)
        print(f"{name}: {len(fallback)} of {len(texts)} user-side texts right only through the fallback")
        all_texts += texts
        all_fallback += fallback
    share = len(all_fallback) / len(all_texts)
    print(f"all real fixtures: {len(all_fallback)} of {len(all_texts)} ({share:.0%})")
    for text in all_fallback:
        print("  -", " ".join(text.split())[:100])


if __name__ == "__main__":
    main()
