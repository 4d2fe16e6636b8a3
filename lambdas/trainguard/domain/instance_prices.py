"""On-demand prices of SageMaker training instances, to say what a move from spot to on-demand costs.

us-east-1 list prices per instance-hour. Two have a third-party source; the others come from public price
tables that agree with each other, unconfirmed: recheck them at https://aws.amazon.com/sagemaker/ai/pricing/
before quoting a dollar figure. A notification that uses one says it is a list price from this table; a type
not listed gets no figure. The fleet simulator prices its jobs from the same table.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class InstancePrice:
    per_instance_hour: float
    source: str


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


def on_demand_cost_sentence(instance_type: str, count: int, billable_fraction: float | None) -> str:
    """What on-demand costs per hour more than the job's spot runs did, from the list price."""
    price = on_demand_price(instance_type)
    if price is None:
        return f"trainguard has no list price for {instance_type}; on-demand costs more than spot."
    hourly = price.per_instance_hour * count
    text = f"On-demand costs ${hourly:,.2f}/h for {count} x {instance_type} "
    text += f"(list price ${price.per_instance_hour:,.2f}/h, us-east-1, {price.source})"
    if billable_fraction is None:
        return text + "; spot's saving on this job is not known, so the extra cost per hour is at most that."
    extra = hourly * max(0.0, 1.0 - billable_fraction)
    return (
        text + f"; its spot runs were billed {billable_fraction:.0%} of their training time, so on-demand costs about "
        f"${extra:,.2f}/h more."
    )
