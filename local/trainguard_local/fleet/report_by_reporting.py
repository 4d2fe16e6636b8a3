"""The report's figures by how each job reports its progress (issue 27; simulation/reporting.py):

- `detect_minutes_by_reporting`: per reporting class (`progress`, `framework`, `tag_rule`, `none`), the hangs'
  (idle GPU, busy GPU, NCCL, livelock, hang in an announced phase) first detection, by anyone, for the jobs no
  parent owns: p50, p95 and the number of hangs in all (`all`), per cadence class (rhythm.CADENCE_CLASSES, as
  `detect_minutes_by_cadence`), per hang kind (`by_kind`), per cadence class for the livelocks
  (`livelock_by_cadence`) and for the hangs whose lines stop (`silent`: all but a livelock, whose lines go on).
  `reporting`: the same over the three classes that report progress, with `in_intervals` for the hangs of jobs
  that log once a minute or less often: p50 and p95 of each hang's minutes to detection over the job's own interval
  between lines (issue 27's goal: at most 3).
- `wrong_actions_by_reporting`: per reporting class, the wrong actions (report.py's `wrong_actions`) on its jobs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from trainguard_local.fleet.model import JobOutcome
from trainguard_local.fleet.percentiles import p50_p95
from trainguard_local.simulation.fault_table import HUNG_KINDS
from trainguard_local.simulation.reporting import Reporting
from trainguard_local.simulation.rhythm import CADENCE_CLASSES


def first_hang_minutes(outcome: JobOutcome) -> tuple[str, float] | None:
    """The job's first hang's kind and the minutes to its first detection, by anyone (None: no hang)."""
    hangs = [d for d in outcome.detections if d.fault_kind in HUNG_KINDS]
    if not hangs:
        return None
    first = min(hangs, key=lambda d: (d.struck_at, d.at))
    return first.fault_kind.value, first.minutes


CHATTY = CADENCE_CLASSES[0][0]  # under a minute


def detect_minutes_by_reporting(outcomes: Iterable[JobOutcome]) -> dict[str, dict[str, Any]]:
    found: dict[Reporting, list[tuple[JobOutcome, str, float]]] = {reporting: [] for reporting in Reporting}
    for outcome in outcomes:
        hang = first_hang_minutes(outcome)
        if hang is not None and not outcome.job.owner:
            found[outcome.job.reporting.reporting].append((outcome, *hang))
    figures = {reporting.value: _by_cadence_and_kind(hangs) for reporting, hangs in found.items()}
    reporting = [hang for cls, hangs in found.items() if cls is not Reporting.NONE for hang in hangs]
    slower = [(o, m) for o, _, m in reporting if o.job.rhythm.cadence_class != CHATTY]
    in_intervals = p50_p95(m / (o.job.rhythm.log_every_seconds / 60) for o, m in slower)
    figures["reporting"] = {**_by_cadence_and_kind(reporting), "in_intervals": {**in_intervals, "hangs": len(slower)}}
    return figures


def _by_cadence_and_kind(hangs: list[tuple[JobOutcome, str, float]]) -> dict[str, Any]:
    cadence = {
        name: _figures(m for o, _, m in hangs if o.job.rhythm.cadence_class == name) for name, *_ in CADENCE_CLASSES
    }
    kinds = sorted({kind for _, kind, _ in hangs})
    return {
        "all": _figures(minutes for _, _, minutes in hangs),
        **cadence,
        "by_kind": {kind: _figures(m for _, k, m in hangs if k == kind) for kind in kinds},
        "livelock_by_cadence": {  # the livelocks, by cadence: a job's limit is a few of its own intervals
            name: _figures(m for o, k, m in hangs if o.job.rhythm.cadence_class == name and k == "livelock")
            for name, *_ in CADENCE_CLASSES
        },
        "silent": {  # the hangs whose lines stop (all but a livelock), by cadence
            name: _figures(m for o, k, m in hangs if o.job.rhythm.cadence_class == name and k != "livelock")
            for name, *_ in CADENCE_CLASSES
        },
    }


def wrong_actions_by_reporting(outcomes: Iterable[JobOutcome]) -> dict[str, int]:
    counts = {reporting.value: 0 for reporting in Reporting}
    for outcome in outcomes:
        counts[outcome.job.reporting.reporting.value] += sum(1 for action in outcome.actions if not action.right)
    return counts


def _figures(minutes: Iterable[float]) -> dict[str, Any]:
    listed = list(minutes)
    return {**p50_p95(listed), "hangs": len(listed)}
