"""Which host slows a slow job (domain/slow_hosts.py): named only when one host's GPUs alone read low while the
others wait for it, busy; never when every host reads alike, as a GPU slowed by its own fault does."""

from __future__ import annotations

import pytest

from trainguard.domain.slow_hosts import NOT_KNOWN, name_slow_host

JOB = "llama-pretrain"


def hosts(*values: float) -> dict[str, float]:
    return {f"{JOB}/algo-{n}": v for n, v in enumerate(values, start=1)}


def test_one_host_waiting_on_its_own_data_loader_is_named() -> None:
    said = name_slow_host(hosts(790, 168, 800, 795), 8)  # 21% of its 8 GPUs on algo-2, the others waiting busy
    assert said.startswith("algo-2, most likely: its GPUs averaged 168% of a possible 800%")
    assert "the other hosts' 795%" in said


@pytest.mark.parametrize(
    ("averages", "gpus"),
    [
        (hosts(800, 800, 800, 800), 8),  # a GPU slowed by its own fault reads 100% like the rest
        (hosts(790, 300, 280, 800), 8),  # two hosts low: no one host stands apart
        (hosts(300, 100, 310, 290), 8),  # the others are not busy: nothing waits on the low one
        (hosts(100), 8),  # one host: nothing to compare
        (hosts(790, 168, 800, 795), None),  # an instance type whose GPUs trainguard does not know
        ({}, 8),  # no figures
    ],
)
def test_otherwise_the_host_is_not_known(averages: dict[str, float], gpus: int | None) -> None:
    assert name_slow_host(averages, gpus) == NOT_KNOWN
