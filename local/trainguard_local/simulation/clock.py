"""The one virtual clock of every local tool, and where a run's clock starts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class SimClock:
    """A datetime the simulation sets and moves; never the wall clock. The stand-in's services, the handlers'
    ports and every harness read it, so that one seed gives one run."""

    def __init__(self, base: datetime | None = None) -> None:
        self.base = base or datetime.now(UTC)
        self.now = self.base

    def __call__(self) -> datetime:
        return self.now

    def start_at(self, moment: datetime) -> None:
        """Start the run's time at `moment` (hours count from there)."""
        self.base = self.now = moment

    def skip(self, delta: timedelta) -> None:
        self.now += delta

    def at_hours(self, hours: float) -> datetime:
        return self.base + timedelta(microseconds=round(hours * 3_600_000_000))

    def set_hours(self, hours: float) -> None:
        self.now = self.at_hours(hours)

    def hours_of(self, moment: datetime) -> float:
        return (moment - self.base).total_seconds() / 3600


def run_started_at(hours_needed: float) -> datetime:
    """The virtual clock's origin: far enough in the past that the whole run stays within the 14 days
    CloudWatch Logs accepts (and never in the future), on an hour boundary (the ledger's hourly retry
    budget and the prober's 15-minute sweep then fall on the same virtual minutes in every run)."""
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    back = min(max(hours_needed + 24.0, 48.0), 13 * 24.0)
    return now - timedelta(hours=back)
