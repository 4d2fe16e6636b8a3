"""On-demand prices of SageMaker training instances, to say what a move from spot to on-demand costs.

us-east-1 list prices per instance-hour. None of them is confirmed: two have a third-party source, the others come
from public price tables that agree with each other, and the official page
(https://aws.amazon.com/sagemaker/ai/pricing/) was not readable from here. A notification never prints a price that
is not `confirmed`: it says instead how much more on-demand costs than the job's own spot runs did, a ratio it reads
from the job (messages are written by the rules in docs/operations.md). To let a price be printed, check it on the
official page and set `confirmed` with the page and the date in `source`.

The fleet simulator prices its jobs from the same table, as assumptions (local/trainguard_local/simulation/
catalogue.py says so).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class InstancePrice:
    per_instance_hour: float
    source: str
    confirmed: bool = False  # checked on the official pricing page, named with its date in `source`


_PUBLIC_TABLES = "public price tables, unconfirmed"
ON_DEMAND_PRICES: dict[str, InstancePrice] = {
    "ml.g4dn.xlarge": InstancePrice(0.736, _PUBLIC_TABLES),
    "ml.g5.xlarge": InstancePrice(1.408, _PUBLIC_TABLES),
    "ml.g5.12xlarge": InstancePrice(7.09, _PUBLIC_TABLES),
    "ml.g5.48xlarge": InstancePrice(20.36, _PUBLIC_TABLES),
    "ml.p3.16xlarge": InstancePrice(28.152, _PUBLIC_TABLES),
    "ml.p4d.24xlarge": InstancePrice(37.69, "third-party figure, unconfirmed"),
    "ml.p5.48xlarge": InstancePrice(113.0, "about $113/h before the 2025 cuts, unconfirmed"),
}


def on_demand_price(instance_type: str) -> InstancePrice | None:
    return ON_DEMAND_PRICES.get(instance_type)


def on_demand_cost_sentence(
    instance_type: str,
    count: int,
    billable_fraction: float | None,
    prices: dict[str, InstancePrice] = ON_DEMAND_PRICES,
) -> str:
    """What on-demand costs against the job's spot runs: how many times as much, from the share of their training
    time its spot runs were billed; and the list price, only when it is confirmed."""
    if billable_fraction is None:
        text = "How much spot saved on this job is not known, so neither is how much more on-demand costs."
    elif billable_fraction <= 0:
        text = "Its spot runs were billed for none of their training time; on-demand bills all of it."
    else:
        times = 1 / min(billable_fraction, 1.0)
        text = (
            f"Its spot runs were billed for {billable_fraction:.0%} of their training time. On-demand bills all of it, "
            f"so it costs about {times:,.1f} times as much per hour of training."
        )
    price = prices.get(instance_type)
    if price is None or not price.confirmed:
        return text + f" trainguard has no confirmed list price for {instance_type}, so it gives no dollar figure."
    hourly = price.per_instance_hour * count
    return (
        text + f" At the list price of ${price.per_instance_hour:,.2f} per instance-hour in us-east-1, "
        f"{count} x {instance_type} cost ${hourly:,.2f} per hour on demand. Source: {price.source}."
    )
