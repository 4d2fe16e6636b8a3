"""One budget for every launch trainguard makes: `retry_budget_per_hour` units in any 60 minutes, per account.

A unit is taken at launch time, on every path that calls CreateTrainingJob: job-events' immediate relaunch, the
scheduled relaunch when it fires (not when it is scheduled), a waiting launch when the quota watch launches it,
a fallback on an alternative while a quota is short. It is given back when the launch did not happen (refused by
SageMaker, for a quota or anything else; a waiting launch still short of quota). A unit is named for the launch
(the name of the job it creates), so a redelivery, or a second try of the same launch in the same invocation,
takes no second one. The hour slides (adapters/ledger.py Ledger.take_launch_budget says how).
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from trainguard.config import GuardConfig
from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard.workflows.ports import LedgerPort


class Budgeted(Protocol):
    @property
    def ledger(self) -> LedgerPort: ...

    @property
    def config(self) -> GuardConfig: ...


def take_launch_unit(ports: Budgeted, launch: str, now: datetime) -> bool:
    """A unit for the launch named `launch`; True too when it holds one already. False: the budget is spent."""
    return ports.ledger.take_launch_budget(launch, now, ports.config.retry_budget_per_hour)


def give_back_launch_unit(ports: Budgeted, launch: str, now: datetime) -> None:
    """The launch did not happen: its unit, if it holds one, goes back to the budget."""
    ports.ledger.give_back_launch_budget(launch, now)


def kept_if_launched(ports: Budgeted, launch: str, outcome: Outcome, now: datetime) -> Outcome:
    """The outcome of an attempt that held the launch's unit: the unit stays if the launch was made (by this
    attempt or an earlier delivery's), and is given back otherwise."""
    if outcome.kind is not OutcomeKind.RELAUNCHED:
        give_back_launch_unit(ports, launch, now)
    return outcome


def budget_spent(ports: Budgeted) -> str:
    return f"the account-wide budget of {ports.config.retry_budget_per_hour} launches in any 60 minutes is spent."
