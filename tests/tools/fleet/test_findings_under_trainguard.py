"""Issue 28's faults under trainguard in the fleet harness (fleet/trainguard_run/finding_windows.py): the production
prober judges a degraded host's and a diverged run's lines each minute of a finding window, and what it tells or stops
is what happens; the person told acts a response time after the notice."""

from __future__ import annotations

import pytest

from tests.tools.fleet.cases import PERSON, STARTUP, fault, hours_in, job, trace_of
from trainguard_local.fleet.model import TRAINGUARD, JobOutcome, State
from trainguard_local.fleet.percentiles import p50_p95
from trainguard_local.fleet.report_findings import findings_found
from trainguard_local.fleet.trainguard_strategy import LEAVE_TAGS, RunRecord, TrainguardStrategy
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.reporting import CONTRACT, JobReporting, Reporting
from trainguard_local.simulation.rhythm import JobRhythm
from trainguard_local.simulation.trace import Trace

pytestmark = pytest.mark.slow

EVERY_20_S = JobRhythm(log_every_seconds=20.0, checkpoint_write_minutes=1.0, announces_phases=True)
REPORTING = JobReporting(Reporting.PROGRESS, CONTRACT)


def run(trace: Trace, *, leave: bool = False) -> tuple[JobOutcome, RunRecord]:
    strategy = TrainguardStrategy(person=PERSON, owner_tags=dict(LEAVE_TAGS) if leave else {})
    [outcome] = strategy.run(trace)
    assert strategy.last_run is not None and strategy.last_run.problems == [] and strategy.last_run.notes == {}
    return outcome, strategy.last_run


def told(record: RunRecord) -> list[tuple[str, str]]:
    return [(n.attributes["outcome"], n.message) for n in record.notifications]


def actions(outcome: JobOutcome) -> list[tuple[str, str, bool]]:
    return [(a.kind.value, a.actor, a.right) for a in outcome.actions]


def degraded(**changes: object) -> Trace:
    spec = job(rhythm=EVERY_20_S, reporting=REPORTING, uses_debugger_hook=False)
    return trace_of(spec, fault(spec, FaultKind.DEGRADED_HOST, 2.0, slowdown_factor=2.0, **changes))


def test_a_degraded_host_is_found_within_minutes_its_host_named_and_the_person_relaunches() -> None:
    outcome, record = run(degraded(slow_host=2))
    [(kind, message)] = [(k, m) for k, m in told(record) if k.startswith("slowdown")]
    assert kind == "slowdown-found" and "algo-3, most likely" in message
    [detection] = outcome.detections
    assert detection.detector == "trainguard" and 10 <= detection.minutes <= 15
    assert actions(outcome) == [("stop", "person", True), ("relaunch", "person", True)]
    stop = outcome.actions[0]
    assert stop.at - detection.at == pytest.approx(PERSON.median_response_hours, abs=1 / 60)
    slowed = stop.at - (detection.at - detection.minutes / 60)  # from the strike to the person's stop
    assert outcome.slowed_hours == pytest.approx(slowed / 2, abs=0.01)  # half of every hour at 2 times slower
    assert outcome.findings == (("slowdown", True),)
    found = findings_found(degraded(slow_host=2), [outcome], TRAINGUARD)
    once = {"jobs": 1, "found": 1, **p50_p95([detection.minutes])}
    none = {"jobs": 0, "found": 0, **p50_p95([])}
    by_cadence = {"under 1 min": once, "1 to 10 min": none, "10 min and over": none}  # it logs every 20 s
    assert found["degraded_host"] == {**once, "missed": [], "by_cadence": by_cadence}
    assert found["diverged"]["jobs"] == 0


def test_a_slow_gpu_is_found_and_its_host_said_not_known() -> None:
    _, record = run(degraded())
    [message] = [m for k, m in told(record) if k == "slowdown-found"]
    assert "algo-" not in message.split("Which host")[1].split("Links")[0]


def test_with_leave_trainguard_stops_a_slow_job_and_relaunches_it_on_new_instances() -> None:
    outcome, record = run(degraded(slow_host=2), leave=True)
    assert [k for k, _ in told(record)][:2] == ["slowdown-stopped", "relaunched"]
    assert actions(outcome) == [("stop", "trainguard", True), ("relaunch", "trainguard", True)]
    assert outcome.slowed_hours < 0.15  # minutes of slowness, not the person's four hours
    assert hours_in(outcome, State.WAITING_FOR_PERSON) == 0


def test_with_leave_a_diverged_run_is_stopped_never_relaunched_and_the_person_fixes_it() -> None:
    spec = job(rhythm=EVERY_20_S, reporting=REPORTING, uses_debugger_hook=False)
    outcome, record = run(trace_of(spec, fault(spec, FaultKind.DIVERGED, 2.2)), leave=True)
    assert told(record)[0][0] == "divergence-stopped"
    assert actions(outcome) == [("stop", "trainguard", True), ("relaunch", "person", True)]
    assert outcome.actions[1].note == "after a fix"
    [detection] = outcome.detections
    assert detection.detector == "trainguard" and detection.minutes <= 3  # three NaN reports 20 s apart, the minute
    assert outcome.lost_work_hours == pytest.approx(0.2 + detection.minutes / 60, abs=0.02)  # since 2.0 h's checkpoint
    assert hours_in(outcome, State.WAITING_FOR_PERSON) == pytest.approx(PERSON.median_response_hours + 1.0, abs=0.01)
    assert outcome.completed_at == pytest.approx(
        spec.fault_free_completion_at + 0.2 + detection.minutes / 60 + 5.0 + STARTUP, abs=0.05
    )


def test_a_divergence_is_timed_from_its_first_nan_line_not_from_its_strike() -> None:
    """A job logging every 5 minutes diverges at 132.6 min of work: its first NaN line is the 135-minute one, and the
    minutes to the finding count from it (the issue's goal): three reports 5 minutes apart, then the prober's minute."""
    every_5_min = JobRhythm(log_every_seconds=300.0, checkpoint_write_minutes=1.0, announces_phases=True)
    spec = job(rhythm=every_5_min, reporting=REPORTING, uses_debugger_hook=False)
    divergence = fault(spec, FaultKind.DIVERGED, 2.21)
    outcome, record = run(trace_of(spec, divergence))
    assert told(record)[0][0] == "divergence-found"
    [detection] = outcome.detections
    assert (detection.struck_at - divergence.strikes_at) * 60 == pytest.approx(2.4, abs=0.01)
    assert detection.minutes == pytest.approx(10, abs=1)  # the third report 10 min after the first, the minute
