"""Faults injected under botocore, on the clients trainguard's handlers use, so that the production retry
configuration (handlers/wiring.py: standard mode, `max_attempts` 5, i.e. 5 retries) is what meets them.

- `before-send` answers an attempt with a throttling error, a 500 or a 503 (in the service's protocol,
  error_responses.py), or raises `ConnectTimeoutError` (never sent) or `ReadTimeoutError` after sending (the
  service acted, the answer was lost); botocore's retry checker sees what a `before-send` handler raises.
- Storms throttle every attempt to one service a few times in a row: enough to exhaust botocore's retries.
- Process death: right after a side effect (`SIDE_EFFECTS`), before the handler's ledger write, `after-call`
  raises `ProcessDeath`, a BaseException that no `except Exception` cleanup catches.
- Poison: every SageMaker call naming a given job is refused with AccessDeniedException until `cure()`.
`chaos_session()` installs the handlers on the sessions handlers/wiring.py builds (clients copy them).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
import botocore.endpoint
import botocore.loaders
import botocore.session
from botocore.exceptions import ConnectTimeoutError, ReadTimeoutError
from botocore.httpsession import URLLib3Session

from trainguard_local.chaos.error_responses import (
    ACCESS_DENIED,
    INTERNAL_FAILURE,
    SERVICE_UNAVAILABLE,
    THROTTLING,
    error_answer,
    error_response,
)

READ_TIMEOUT = "read-timeout"
NOWHERE = "https://answered-by-an-injected-fault.invalid/"  # no in-process service serves it
CONNECT_TIMEOUT = "connect-timeout"
PROCESS_DEATH = "process-death"
FAULT_KINDS = (THROTTLING, INTERNAL_FAILURE, SERVICE_UNAVAILABLE, READ_TIMEOUT, CONNECT_TIMEOUT)
FAULT_WEIGHTS = (0.4, 0.15, 0.15, 0.15, 0.15)  # of each of FAULT_KINDS, in order
# The side effects after which a process may die, and what names each one (its cause).
SIDE_EFFECTS = {
    ("sagemaker", "CreateTrainingJob"): ("TrainingJobName",),
    ("sagemaker", "StopTrainingJob"): ("TrainingJobName",),
    ("service-quotas", "RequestServiceQuotaIncrease"): ("QuotaCode", "DesiredValue"),
    ("scheduler", "CreateSchedule"): ("Name",),
}


class ProcessDeath(BaseException):
    """The Lambda process died (a timeout, out of memory) between a side effect and its ledger write."""


@dataclass(frozen=True)
class FaultRates:
    per_attempt: float = 0.08  # share of attempts answered with one of FAULT_KINDS
    storm_start: float = 0.003  # share of attempts that start a storm on their service
    storm_attempts: tuple[int, int] = (3, 8)  # how many attempts in a row a storm throttles (6 exhaust a call)
    process_death: float = 0.25  # share of side effects after which the process dies (once each)
    weights: dict[str, float] = field(default_factory=lambda: dict(zip(FAULT_KINDS, FAULT_WEIGHTS, strict=True)))


class FaultInjector:
    def __init__(self, rates: FaultRates, seed: int) -> None:
        self.rates = rates
        self._faults = random.Random(f"faults-{seed}")
        self._deaths = random.Random(f"deaths-{seed}")
        self._storms: dict[str, int] = {}
        self._died_after: set[tuple[str, ...]] = set()
        self._poisoned: set[str] = set()
        self._http = URLLib3Session()
        self._protocols = _protocols_by_service_id()
        self.attempts = 0
        self.injected: Counter[str] = Counter()  # by kind (a storm's attempts count as throttling)
        self.storms = 0
        self.by_service: Counter[str] = Counter()
        self.deaths: list[tuple[str, str]] = []  # (operation, what it named)

    def install(self, events: Any, *, in_process: bool = False) -> None:
        """On a session's or a client's events. `in_process`: its services answer without HTTP, from a `before-send`
        handler of their own (moto's `mock_aws`, the fleet's in-process SageMaker and Service Quotas): the injector
        runs before them, on a name deeper than theirs (botocore runs the handlers of the name furthest from the
        root first: hooks.py, _PrefixTrie.prefix_search), and a read timeout lets them answer before it raises."""
        if in_process:
            before_send, after_send = self._in_process(events)
            events.register_first("before-send.*.*", before_send)
            events.register_last("before-send", after_send)
        else:
            events.register("before-send", self._before_send)
        events.register("provide-client-params", self._remember_params)
        events.register("after-call", self._maybe_die)

    def poison(self, job_name: str) -> None:
        self._poisoned.add(job_name)

    def cure(self, job_name: str) -> None:
        """The operator fixed the cause (granted the permission): the job's calls succeed again."""
        self._poisoned.discard(job_name)

    @property
    def total(self) -> int:
        return sum(self.injected.values())

    def _in_process(self, events: Any) -> tuple[Callable[..., Any], Callable[..., Any]]:
        """botocore emits `before-send` to every handler and takes the first answer (endpoint.py, _do_get_response):
        an in-process service after the injector would act on a request it answered with a fault. So that request
        is addressed nowhere while the rest of the chain runs (moto serves the URLs of its backends,
        `answer_locally` its own endpoint's), and its address given back by the chain's last handler: botocore sends
        the same request object again on a retry."""
        passing: list[bool] = []  # set while the rest of the chain answers a request whose answer is lost
        addresses: dict[int, str] = {}  # id of a request addressed nowhere -> its address

        def answer_in_process(request: Any, event_name: str) -> None:
            passing.append(True)
            try:
                events.emit_until_response(event_name, request=request)  # the service receives it and acts
            finally:
                passing.pop()

        def before_send(request: Any, event_name: str, **_: Any) -> Any:
            if id(request) in addresses:  # not given back by the chain's last handler (a handler raised)
                request.url = addresses.pop(id(request))
            answer = None if passing else self._before_send(request, event_name, answer_in_process)
            if answer is not None:
                addresses[id(request)] = request.url
                request.url = NOWHERE
            return answer

        def after_send(request: Any, **_: Any) -> None:
            if id(request) in addresses:
                request.url = addresses.pop(id(request))

        return before_send, after_send

    def _before_send(
        self, request: Any, event_name: str, send: Callable[[Any, str], None] | None = None, **_: Any
    ) -> Any:
        service = event_name.split(".")[1]
        self.attempts += 1
        if self._poisoned and service == "sagemaker" and _names_poisoned_job(request, self._poisoned):
            return self._answer(ACCESS_DENIED, service, request)
        kind = self._draw(service)
        if kind is None:
            return None
        if kind == CONNECT_TIMEOUT:
            self._count(kind, service)
            raise ConnectTimeoutError(endpoint_url=request.url)
        if kind == READ_TIMEOUT:
            self._count(kind, service)
            if send is None:
                _ = self._http.send(request).content  # the service receives it and acts; its answer is lost
            else:
                send(request, event_name)
            raise ReadTimeoutError(endpoint_url=request.url)
        return self._answer(kind, service, request)

    def _draw(self, service: str) -> str | None:
        left = self._storms.get(service, 0)
        if left:
            self._storms[service] = left - 1
            return THROTTLING
        roll = self._faults.random()
        if roll < self.rates.storm_start:
            self._storms[service] = self._faults.randint(*self.rates.storm_attempts) - 1
            self.storms += 1
            return THROTTLING
        if roll < self.rates.storm_start + self.rates.per_attempt:
            kinds = list(self.rates.weights)
            return self._faults.choices(kinds, weights=[self.rates.weights[k] for k in kinds])[0]
        return None

    def _answer(self, kind: str, service: str, request: Any) -> Any:
        self._count(kind, service)
        return error_response(request.url, service, self._protocols[service], error_answer(kind, service))

    def _count(self, kind: str, service: str) -> None:
        self.injected[kind] += 1
        self.by_service[service] += 1

    def _remember_params(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["chaos_params"] = dict(params)

    def _maybe_die(self, http_response: Any, model: Any, context: dict[str, Any], **_: Any) -> None:
        service = model.service_model.service_id.hyphenize()
        names = SIDE_EFFECTS.get((service, model.name))
        if names is None or http_response.status_code >= 300:
            return
        params = context.get("chaos_params", {})
        cause = (model.name, *(str(params.get(name, "")) for name in names))
        if cause in self._died_after or self._deaths.random() >= self.rates.process_death:
            return
        self._died_after.add(cause)
        self.injected[PROCESS_DEATH] += 1
        self.deaths.append((model.name, " ".join(cause[1:])))
        raise ProcessDeath(f"the process died right after {model.name} ({' '.join(cause[1:])}) succeeded")


def _names_poisoned_job(request: Any, poisoned: set[str]) -> bool:
    try:
        body = json.loads(request.body or b"{}")
    except (TypeError, ValueError):
        return False
    return isinstance(body, dict) and body.get("TrainingJobName") in poisoned


# One loader for every session built under the injector: each cold start builds a new session, and without a shared
# loader each would read the service models from disk again (seconds per run, nothing the handlers do).
_SHARED_LOADER = botocore.loaders.create_loader()


def _botocore_session() -> botocore.session.Session:
    session = botocore.session.get_session()
    session.register_component("data_loader", _SHARED_LOADER)
    return session


def _protocols_by_service_id() -> dict[str, str]:
    session = _botocore_session()
    protocols = {}
    for name in ("sagemaker", "dynamodb", "sns", "s3", "scheduler", "service-quotas", "cloudwatch", "logs"):
        model = session.get_service_model(name)
        protocols[model.service_id.hyphenize()] = model.resolved_protocol
    return protocols


@contextmanager
def chaos_session(injector: FaultInjector) -> Iterator[None]:
    """While open, every `boto3.session.Session()` (the one handlers/wiring.py builds its clients from)
    carries the injector's handlers."""
    original = boto3.session.Session

    class ChaosSession(original):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("botocore_session", _botocore_session())
            super().__init__(*args, **kwargs)
            injector.install(self.events)

    boto3.session.Session = ChaosSession  # type: ignore[misc]
    try:
        yield
    finally:
        boto3.session.Session = original  # type: ignore[misc]


class VirtualBackoff:
    """botocore's sleeps between retries (`time.sleep` in botocore/endpoint.py), added up instead of slept."""

    def __init__(self) -> None:
        self.sleeps, self.seconds = 0, 0.0

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.seconds += seconds

    def __getattr__(self, name: str) -> Any:
        return getattr(_REAL_TIME, name)


_REAL_TIME = botocore.endpoint.time


@contextmanager
def virtual_backoff() -> Iterator[VirtualBackoff]:
    shim = VirtualBackoff()
    botocore.endpoint.time = shim  # type: ignore[assignment]
    try:
        yield shim
    finally:
        botocore.endpoint.time = _REAL_TIME
