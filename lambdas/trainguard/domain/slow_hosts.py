"""Which host slows a slow job, as far as its hosts' GPUUtilization can say (docs/pace.md, "Which host").

In synchronous training every rank waits for the slowest, so the step lines slow down together. A host whose GPUs
wait on its own CPU, disk or data loader reads low while the other hosts wait for it in their collectives, busy
(measured on an H200: a loop waiting on a slow data loader half the time read 21% at 301 W; a collective waiting for a
peer reads 100%). A GPU slowed by its own fault (a competing process, a throttled clock) still reads 100% at the same
power, so nothing here can name it. A host is named when it alone stands apart: its GPUs averaged under APART_SHARE of
the other hosts' median, and those were busy (at least BUSY_SHARE of what their GPUs can read).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping

from trainguard.domain.wording import format_value

APART_SHARE = 0.6
BUSY_SHARE = 0.5

NOT_KNOWN = (
    "Not known. In synchronous training every rank waits for the slowest, so the step lines slow down together, and "
    "a GPU slowed by its own fault still reads 100% GPUUtilization. A relaunch puts the job on new instances, "
    "which may or may not avoid the slow one."
)


def name_slow_host(averages: Mapping[str, float], gpus_per_host: int | None) -> str:
    """The sentence on which host: `averages` is each host's mean GPUUtilization since the slowdown began, in
    CloudWatch's unit (percent summed over the host's GPUs), by its metric dimension (`job/algo-N`)."""
    if len(averages) < 2 or not gpus_per_host:
        return NOT_KNOWN
    capacity = 100.0 * gpus_per_host
    low = [host for host, value in averages.items() if value < APART_SHARE * _others_median(averages, host)]
    if len(low) != 1:
        return NOT_KNOWN
    host = low[0]
    others = _others_median(averages, host)
    if others < BUSY_SHARE * capacity:
        return NOT_KNOWN
    name = host.rsplit("/", 1)[-1]
    return (
        f"{name}, most likely: its GPUs averaged {format_value(round(averages[host]))}% of a possible "
        f"{format_value(capacity)}% since the slowdown began, the other hosts' {format_value(round(others))}%. A host "
        "whose GPUs wait on its own CPU, disk or data loader reads low while the others wait for it, busy, in their "
        "collectives. A relaunch puts the job on new instances, which may or may not avoid it."
    )


def _others_median(averages: Mapping[str, float], host: str) -> float:
    return statistics.median(value for other, value in averages.items() if other != host)
