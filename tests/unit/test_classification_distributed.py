"""gloo and torch.distributed failures (the CPU backend of examples/train.py): which ones trainguard relaunches.

Every text is in tests/fixtures/distributed_failure_reasons.json with its source: captured from
examples/train.py (a peer stopped, killed or given a bug) and formatted as SageMaker's FailureReason, or
quoted from a public issue. A peer that sent nothing in time (gloo's "Timed out waiting ...ms") is relaunched
like an NCCL collective timeout; a peer whose process ended ("Connection closed by peer", "Connection reset
by peer") is not: its own log names the cause, most often a bug.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.regex_safety import GROWTH_FACTOR, LINEAR_GROWTH_LIMIT, cost_growth
from tests.unit.test_classification import assert_classified_as_the_fixture_says
from trainguard.domain.classification import classify_failure_reason
from trainguard.domain.model import Category, Decision

FIXTURE = Path(__file__).parents[1] / "fixtures" / "distributed_failure_reasons.json"
ENTRIES: list[dict[str, Any]] = json.loads(FIXTURE.read_text(encoding="utf-8"))  # gloo's message has an emoji


def _entry_id(index: int, entry: dict[str, Any]) -> str:
    source = entry["source"]
    origin = "captured" if source.startswith("captured") else source.rstrip("/").split("/")[-3]
    words = re.sub(r"[^a-z0-9]+", "-", entry["text"][-60:].lower()).strip("-")[:40]
    return f"{index:02d}-{entry['category']}-{origin}-{words}"


@pytest.mark.parametrize("entry", ENTRIES, ids=[_entry_id(i, e) for i, e in enumerate(ENTRIES)])
def test_each_distributed_failure_gets_its_category_and_decision(entry: dict[str, Any]) -> None:
    assert_classified_as_the_fixture_says(entry)


def test_every_text_says_where_it_comes_from() -> None:
    for entry in ENTRIES:
        assert re.match(r"https://\S+$|captured from examples/train\.py, torch 2\.13\.0", entry["source"]), entry
        assert entry["surface"]


def test_the_captured_texts_cover_timeouts_and_peer_loss() -> None:
    """The fixture holds what the rules were written from: relaunched timeouts, peer losses, both captured here."""
    captured = [e for e in ENTRIES if e["source"].startswith("captured")]
    relaunched = {classify_failure_reason(e["text"]).decision for e in captured if "Timed out waiting" in e["text"]}
    peer_loss = [e for e in captured if re.search(r"Connection (closed|reset) by peer", e["text"])]
    assert relaunched == {Decision.RETRY}
    assert len(peer_loss) >= 5
    assert all(classify_failure_reason(e["text"]).decision is Decision.NOTIFY for e in peer_loss)


def _texts(category: str, words: str) -> list[str]:
    return [e["text"] for e in ENTRIES if e["category"] == category and re.search(words, e["text"])]


PEER_LOSS = _texts("user-code", r"pair\.cc:\d+\] (Read error|Connection closed)")
GLOO_TIMEOUTS = _texts("nccl-hang/collective-timeout", r"Timed out waiting \d+ms")


@pytest.mark.parametrize("peer_loss", PEER_LOSS)
def test_a_peer_that_ended_wins_over_a_timeout_in_the_same_text(peer_loss: str) -> None:
    # With three or more ranks one can end and another time out waiting behind it: the text cannot tell
    # which came first, so trainguard does not relaunch.
    for timeout in GLOO_TIMEOUTS:
        for text in (peer_loss + "\n" + timeout, timeout + "\n" + peer_loss):
            assert classify_failure_reason(text).category == Category.USER_CODE


@pytest.mark.parametrize(
    ("text", "category"),
    [
        # modelled on the fixture's gloo lines, after a cause that comes first
        (
            "RuntimeError: CUDA out of memory.\n[rank1]: RuntimeError: [gloo/transport/tcp/pair.cc:537] Read error "
            "[10.0.0.2]:4242: Connection reset by peer",
            Category.OOM,
        ),
        (
            "NVRM: Xid (PCI:0000:10:1c): 79, GPU has fallen off the bus.\n"
            "RuntimeError: [gloo/transport/tcp/pair.cc:553] Connection closed by peer [10.0.0.2]:4242",
            Category.HARDWARE,
        ),
        # not gloo's words: Python's socket error (databrickslabs/dolly#54) and torch's DataLoader timeout
        # (torch/utils/data/dataloader.py) meet no rule
        ("ConnectionResetError: [Errno 104] Connection reset by peer", Category.UNKNOWN),
        ("RuntimeError: DataLoader timed out after 120 seconds", Category.UNKNOWN),
    ],
    ids=["oom-first", "hardware-first", "python-connection-reset", "other-timeout"],
)
def test_what_the_new_rules_leave_to_others(text: str, category: Category) -> None:
    assert classify_failure_reason(text).category == category


@pytest.mark.parametrize(
    "text",
    [
        "pair.cc:1] read error " * 6_000,
        "pair.cc:12] " * 10_000,
        "timed out waiting 1" * 6_000,
        "collective mismatch " * 6_000,
    ],
    ids=["near-miss-read-error", "near-miss-pair", "near-miss-gloo-timeout", "near-miss-mismatch"],
)
def test_near_misses_of_the_gloo_rules_cost_linearly(text: str) -> None:
    growth = cost_growth(classify_failure_reason, text)
    assert growth < LINEAR_GROWTH_LIMIT, f"{GROWTH_FACTOR}x the text cost {growth:.1f}x"
