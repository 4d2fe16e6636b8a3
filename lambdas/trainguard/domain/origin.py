"""Whose job an event is about, and so where trainguard may act on it.

Every EventBridge event names the account and region it was sent from (`account`, `region`:
https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-events-structure.html), and an event a rule forwards to
another account's bus keeps its origin's (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-cross-account.html).
A function acts on a job of its own account and region with its own rights. An organization's hub
(docs/organization.md) also acts on a job of an enrolled account and region, there, through that spoke's role:
never anywhere else, and never where the event's `resources` (the job's or the alarm's ARN) name another account
or region than the event itself, since a spoke could only forge events about its own jobs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """Where a training job is: its account and region (an event's `account` and `region`, its ARN's)."""

    account: str
    region: str

    def __str__(self) -> str:
        return f"account {self.account} in {self.region}"


@dataclass(frozen=True)
class Refused:
    """An event trainguard does not act on here, and why."""

    reason: str


HOME = None  # the function's own account and region: acted on as in a single-account stack


def place_of(
    origin: Location,
    resource_arns: Iterable[str],
    *,
    own: Location,
    enrolled_accounts: Iterable[str] = (),
    enrolled_regions: Iterable[str] = (),
) -> Location | Refused | None:
    """Where to act on an event sent from `origin`: HOME (None), an enrolled spoke's Location, or Refused.
    Outside a deployed stack (its own account unknown, as in the tests and the local stand-in) every event is
    the function's own."""
    if not own.account:
        return HOME
    for arn in resource_arns:
        named = arn_location(arn)
        if named is not None and named != origin:
            return Refused(
                f"the event comes from {_shown(origin)} but names a resource of {named} ({arn}); "
                "trainguard acts on a job only in the account and region that sent its event"
            )
    if origin == own:
        return HOME
    if origin.account in set(enrolled_accounts) and origin.region in set(enrolled_regions):
        return origin
    return Refused(
        f"the event comes from {_shown(origin)}; this function acts only on jobs of its own account {own.account} "
        f"in {own.region}" + (" and of the accounts and regions enrolled in its hub" if enrolled_accounts else "")
    )


def arn_location(arn: str) -> Location | None:
    """The account and region an ARN names (arn:partition:service:region:account:resource); None when it names
    neither (a global resource) or is not an ARN."""
    parts = arn.split(":", 5)
    if len(parts) < 6 or parts[0] != "arn" or not parts[3] or not parts[4]:
        return None
    return Location(parts[4], parts[3])


def _shown(location: Location) -> str:
    return f"account {location.account or '?'} in {location.region or '?'}"
