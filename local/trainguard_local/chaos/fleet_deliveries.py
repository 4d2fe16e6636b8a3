"""The chaos suite's faults on the fleet's world (docs/design-chaos-on-the-fleet-world.md, step 4): a delivery for
`TrainguardStrategy(delivery=...)` that hands each event to its function as EventBridge, Scheduler and Lambda do
(lambda_runtime.py: 1-3 copies after random delays, two retries after a function error, then an invocation record
in the function's dead-letter queue), with the fault injector on trainguard's in-process clients (call_faults.py:
throttling, 500s, 503s, timeouts, storms, a process dying after a side effect, after which the functions' ports are
built anew: a cold start), and false alarms (false_alarms.py). botocore's backoff sleeps are added up, not slept.
Before each attempt of the stall-alarms function, the alarm's job shows what it logged and ran up to then (its lines
and GPUs, as CloudWatch would hold them: life_state.show_evidence), so that a late or false alarm is judged on the
truth.

Events (a job's state change, an alarm's, a schedule's firing) come as copies, late; chaos's copies replace the
world's own (`duplicate_delivery_share`). A log subscription's batch and the prober's and the quota check's ticks are
invoked at once, with Lambda's retries: the world reads what a tick did right after it (schedules.py). An attempt
that fails while no fault was injected into it (nor the product's own StepInProgress, a claim another invocation
holds) is a problem of the run, as an exception is under the other deliveries.

A poison: every SageMaker call of trainguard's naming one job is refused (AccessDeniedException) until the operator,
who reads the dead-letter queue's alarm, grants the permission `OPERATOR_RESPONSE` after a dead letter arrives and
redrives every queue (dead_letters.redrive: each record's event invoked again), as docs/operations.md tells.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from trainguard.domain.stalls import parse_alarm_name
from trainguard.workflows.ports import StepInProgress
from trainguard_local.chaos.call_faults import FaultInjector, FaultRates, VirtualBackoff, virtual_backoff
from trainguard_local.chaos.dead_letters import DeadLetterQueues, Redriven, redrive
from trainguard_local.chaos.false_alarms import FALSE_ALARM_SHARE, FalseAlarms
from trainguard_local.chaos.lambda_runtime import Deliveries, Invocation, LambdaRuntime, handle_of
from trainguard_local.fleet.trainguard_run.event_delivery import EVENT_HANDLERS, HandlerCall
from trainguard_local.fleet.trainguard_run.world import FleetWorld
from trainguard_local.simulation.kernel import Kernel

OPERATOR_RESPONSE = timedelta(minutes=30)  # from a dead letter to the operator's fix and redrive (an assumption)
# The queue's alarm tells the operator again whenever dead letters come, hours apart in a long run (3 rounds left
# a 200-job seed's last ones in the queue); a bound keeps a run finite should redriven events keep failing.
REDRIVE_ROUNDS = 12


class FleetFunctions:
    """Where the fleet's attempts run: the world's handlers on its guard clients; a cold start rebuilds their ports."""

    def __init__(self, world: FleetWorld, injector: FaultInjector) -> None:
        self._world, self._injector = world, injector
        self.cold_starts = 1

    def invoke(self, invocation: Invocation) -> Any:
        function = invocation.function
        call = HandlerCall(function.replace("-", "_"), invocation.subject, handle_of(function), invocation.payload)
        injected = self._injector.total
        try:
            return self._world.attempt(call)
        except Exception as error:
            if self._injector.total == injected and not isinstance(error, StepInProgress):
                self._world.problems.append(f"{self._world.hours:.3f} h {call.handler} ({call.job}): {error!r}")
            raise

    def cold_start(self) -> None:
        self._world.cold_start()
        self.cold_starts += 1


@dataclass
class Operator:
    """The person the dead-letter queues' alarm tells: `OPERATOR_RESPONSE` after a dead letter, fixes its cause (the
    poison is cured) and redrives every queue; again after a later dead letter, at most `rounds` times."""

    kernel: Kernel
    injector: FaultInjector
    queues: DeadLetterQueues
    deliveries: Deliveries
    runtime: LambdaRuntime
    poisoned: str
    rounds: int
    redriven: int = 0
    responses: list[float] = field(default_factory=list)  # when the operator fixed and redrove (kernel hours)
    _coming: bool = False

    def dead_letter(self, _: Invocation) -> None:
        if not self._coming and len(self.responses) < self.rounds:
            self._coming = True
            self.kernel.after(OPERATOR_RESPONSE, self._respond)

    def _respond(self) -> None:
        self._coming = False
        self.responses.append(self.kernel.now)
        self.injector.cure(self.poisoned)  # the operator read the records and granted the permission
        # A record names its invocation (requestId); the runtime knows which event that was a delivery of.
        invocations = {invocation.request_id: invocation for _, _, invocation in self.runtime.dead_letters}

        def invoke(target: Redriven) -> None:
            original = invocations.get(target.request_id)
            key, subject = (original.event_key, original.subject) if original else ("redrive", "")
            self.deliveries.redeliver(target.function, target.payload, key, subject)

        self.redriven += sum(redrive(self.queues, path, invoke) for path in self.queues.urls)


@dataclass
class ChaosOnTheFleet:
    """A delivery choice for the fleet's trainguard run (`TrainguardStrategy(delivery=...)`); `last` is the last
    run's delivery, with what the chaos did in it."""

    rates: FaultRates = field(default_factory=FaultRates)
    max_delivery_delay: timedelta = timedelta(minutes=10)
    poisoned: str = ""  # the SageMaker job whose calls are refused until the operator's fix ('': none)
    false_alarm_share: float = FALSE_ALARM_SHARE
    redrive_rounds: int = REDRIVE_ROUNDS
    last: ChaosDelivery | None = None

    @contextmanager
    def __call__(self, world: FleetWorld, kernel: Kernel, seed: int) -> Iterator[ChaosDelivery]:
        with virtual_backoff() as backoff:
            self.last = ChaosDelivery(self, world, kernel, seed, backoff)
            yield self.last
        self.last.left_in_queues = {path: self.last.queues.depth(path) for path in self.last.queues.urls}
        self.last.queues.sqs = self.last.runtime.sqs = StandInClosed()  # past moto, a client would reach AWS


class ChaosDelivery:
    """The world's `delivery` in a chaos run: each handler call goes through `Deliveries` and the Lambda runtime,
    with the fault injector on trainguard's clients, the operator and false alarms; and what each of them did."""

    def __init__(
        self, choice: ChaosOnTheFleet, world: FleetWorld, kernel: Kernel, seed: int, backoff: VirtualBackoff
    ) -> None:
        import boto3

        self.injector = FaultInjector(choice.rates, seed)
        for client in world.guard.values():
            self.injector.install(client.meta.events, in_process=True)
        if choice.poisoned:
            self.injector.poison(choice.poisoned)
        sqs = boto3.client("sqs", region_name=world.plane.region)
        self.queues = DeadLetterQueues.create(sqs)
        functions = FleetFunctions(world, self.injector)
        self.runtime = LambdaRuntime(functions, world.clock, sqs, self.queues.url_of_function())
        self.deliveries = Deliveries(kernel, self.runtime, seed, choice.max_delivery_delay, shown_evidence(world))
        self.operator = Operator(
            kernel, self.injector, self.queues, self.deliveries, self.runtime, choice.poisoned, choice.redrive_rounds
        )
        self.runtime.on_dead_letter = self.operator.dead_letter
        self.false_alarms = FalseAlarms(world, kernel, seed, choice.false_alarm_share)
        world.duplicate_share = 0.0  # chaos's copies replace the world's own
        world.watch_failed_launches = True  # the stack's optional CloudTrail rule: a user's launch a quota refused
        self.backoff = backoff
        self.in_flight = self.deliveries.in_flight
        self.left_in_queues: dict[str, int] = {}  # each dead-letter queue's depth at the run's end (read in it)

    def __call__(self, call: HandlerCall) -> None:
        self.false_alarms.saw(call)
        function, label = call.handler.replace("_", "-"), f"{call.job} {call.handler}".strip()
        if call.handler in EVENT_HANDLERS:
            self.deliveries.deliver(function, call.payload, label, subject=call.job)
        else:
            self.deliveries.invoke_now(function, call.payload, label, subject=call.job)


def shown_evidence(world: FleetWorld) -> Callable[[Invocation], None]:
    """Before a stall alarm's attempt: its job shows what it logged and ran up to now."""

    def before(invocation: Invocation) -> None:
        if invocation.function == "stall-alarms":
            parsed = parse_alarm_name(str(invocation.payload.get("detail", {}).get("alarmName", "")))
            if parsed is not None and (show := world.evidence.get(parsed[1])) is not None:
                show()

    return before


class StandInClosed:
    """In place of a client once the run's stand-in is gone: any use says so instead of reaching AWS."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"the chaos run's stand-in is closed: {name} would reach AWS itself")
