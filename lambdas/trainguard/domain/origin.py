"""Whose job an event is about. Every EventBridge event names the account and region it was sent from
(`account`, `region`: https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-events-structure.html), and a
forwarded event keeps its origin's. A function acts only on a job of its own account and region; acting in an
organization's spoke, through the spoke's role, is the next step of the hub (docs/organization.md)."""

from __future__ import annotations


def elsewhere(account: str, region: str, own_account: str, own_region: str) -> str | None:
    """Why an event from `account` in `region` is not this function's to act on; None when it is (or when its
    own account is not known: outside a deployed stack, where no event comes from elsewhere)."""
    if not own_account or (account, region) == (own_account, own_region):
        return None
    return (
        f"the event comes from account {account or '?'} in {region or '?'}; this function acts only on jobs of its "
        f"own account {own_account} in {own_region}"
    )
