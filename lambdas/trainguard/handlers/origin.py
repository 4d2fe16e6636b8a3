"""Where a function acts: on the job an event is about, in that job's account and region (domain/origin.py
decides), or on every place it serves (the scheduled functions).

An event from the function's own account and region gets its own ports, as in a single-account stack. In an
organization's hub, an event from an enrolled spoke gets that spoke's ports (wiring.PortSet.at: its role's
clients, its records in the ledger). Anything else is logged, counted (EventsFromElsewhere) and skipped, never
acted on.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from aws_lambda_powertools.metrics import MetricUnit

from trainguard.domain.origin import HOME, Location, Refused, place_of
from trainguard.domain.outcome import Outcome, skipped
from trainguard.handlers.observability import logger, metrics
from trainguard.handlers.wiring import PortSet, Site, ports_or_production, production_port_set
from trainguard.metric_names import EVENTS_FROM_ELSEWHERE, SPOKE_FAILURES
from trainguard.workflows.function_ports import Settled

Ports = TypeVar("Ports", bound=Settled)
Result = TypeVar("Result")
# A hub's scheduled functions serve this many places at once: their calls wait on the network, and a cycle of
# the stall prober across an organization must stay within its minute (docs/organization.md, "Scale").
PLACES_AT_ONCE = 8


def ports_for_event(
    event: Any, given: Ports | PortSet | None, build: Callable[[Site], Ports], job_name: str
) -> Ports | Outcome:
    """The ports to act on `event`'s job with, in its own account and region (as `build` makes them, unless a test
    passed its own); or a logged, counted skip."""
    places = given if given is not None else production_port_set()
    config = places.config
    origin = Location(*(str(event.get(key, "")) for key in ("account", "region")))
    listed = event.get("resources")
    resources = [arn for arn in listed if isinstance(arn, str)] if isinstance(listed, list) else []
    place = place_of(
        origin,
        resources,
        own=Location(config.account_id, places.region),
        enrolled_accounts=config.enrolled_accounts,
        enrolled_regions=config.enrolled_regions,
    )
    if isinstance(place, Location) and not isinstance(places, PortSet):  # a test's ports serve their own only
        place = Refused(f"the event comes from {origin}, and these ports serve only their own account")
    if isinstance(place, Refused):
        logger.warning("event from elsewhere skipped", event_account=origin.account, event_region=origin.region)
        metrics.add_metric(name=EVENTS_FROM_ELSEWHERE, unit=MetricUnit.Count, value=1)
        return skipped(job_name, place.reason)
    if place is not HOME:
        logger.append_keys(job_account=place.account, job_region=place.region)
    return ports_or_production(places, build, place)


def ports_for_each_place(
    given: Ports | PortSet | None, build: Callable[[Site], Ports]
) -> list[tuple[Location | None, Ports]]:
    """The ports of every place a scheduled function serves: its own (HOME), then each enrolled spoke."""
    places = given if given is not None else production_port_set()
    served: list[tuple[Location | None, Ports]] = [(HOME, ports_or_production(places, build))]
    if isinstance(places, PortSet):
        served += [(spoke, places.at(build, spoke)) for spoke in places.spokes()]
    return served


def serve_each_place(
    places: list[tuple[Location | None, Ports]], work: Callable[[Ports], Result]
) -> list[tuple[Location | None, Result]]:
    """`work` done for every place, up to PLACES_AT_ONCE at a time; each place that succeeded, with its result.
    The home's error is raised; a spoke's is logged and counted (SpokeFailures), and the others are served all the
    same."""
    if len(places) == 1:
        return [(places[0][0], work(places[0][1]))]
    with ThreadPoolExecutor(max_workers=min(PLACES_AT_ONCE, len(places))) as pool:
        running = [(place, pool.submit(work, ports)) for place, ports in places]
    results: list[tuple[Location | None, Result]] = []
    for place, future in running:
        error = future.exception()
        if error is None:
            results.append((place, future.result()))
        elif place is None:
            raise error
        else:
            spoke_failed(place, error)
    return results


def at_place(place: Location | None) -> None:
    """The log keys of the place whose outcomes are recorded next (none for the function's own)."""
    if place is None:
        logger.remove_keys(["job_account", "job_region"])
    else:
        logger.append_keys(job_account=place.account, job_region=place.region)


def spoke_failed(spoke: Location, error: BaseException) -> None:
    """One spoke could not be served this time (its stack is not deployed yet, a call was refused)."""
    logger.error("a spoke could not be served", job_account=spoke.account, job_region=spoke.region, exc_info=error)
    metrics.add_metric(name=SPOKE_FAILURES, unit=MetricUnit.Count, value=1)
