"""The chaos suite's faults on the fleet's world (chaos/fleet_deliveries.py; docs/design-chaos-on-the-fleet-world.md,
step 4): each event delivered 1-3 times and late, Lambda's retries after a function error, faults on every call
trainguard makes, and processes dying right after their side effects."""

from __future__ import annotations

import pytest

from tests.tools.fleet.cases import PERSON, four_faults
from trainguard_local.chaos.call_faults import FAULT_KINDS, PROCESS_DEATH, FaultRates
from trainguard_local.chaos.fleet_deliveries import ChaosOnTheFleet
from trainguard_local.fleet.model import JobOutcome
from trainguard_local.fleet.trainguard_strategy import TrainguardStrategy

pytestmark = pytest.mark.slow


def actions(outcomes: list[JobOutcome]) -> list[list[tuple[str, str, bool, bool]]]:
    return [[(a.kind.value, a.actor, a.right, a.succeeded) for a in o.actions] for o in outcomes]


def test_under_call_and_delivery_faults_trainguard_acts_as_on_time_once_per_action() -> None:
    """A relaunch, a scheduled relaunch, a quota wall and a hang, with a fifth of trainguard's call attempts
    faulted and a process dying after each of its side effects once: the same actions by the same actors, none
    counted twice (a create or stop retried after its answer was lost, or after its process died, is refused by
    SageMaker as done already: one action)."""
    trace = four_faults()
    on_time = TrainguardStrategy(person=PERSON).run(trace)
    chaos = ChaosOnTheFleet(rates=FaultRates(per_attempt=0.2, process_death=1.0))
    strategy = TrainguardStrategy(person=PERSON, delivery=chaos)
    under_chaos = strategy.run(trace)

    assert strategy.last_run is not None and strategy.last_run.problems == [] and strategy.last_run.notes == {}
    assert actions(under_chaos) == actions(on_time)
    assert chaos.injector is not None and chaos.runtime is not None and chaos.deliveries is not None
    assert all(chaos.injector.injected[kind] > 0 for kind in (*FAULT_KINDS, PROCESS_DEATH))
    assert chaos.runtime.cold_starts == 1 + chaos.injector.injected[PROCESS_DEATH]  # a death rebuilds the ports
    log = chaos.deliveries.log
    assert log.copies > len(log.events)  # some events came more than once
    assert any(not attempt.ok and attempt.retry_at for attempt in log.attempts)  # Lambda retried a failed attempt
    assert all(log.handled(event) for event in log.events) and chaos.runtime.dead_letters == []
