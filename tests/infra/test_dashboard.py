"""The guard's dashboard: one per stack, graphing every decision kind, every function, every dead-letter
queue, the prober and the ledger, under the names the handlers really emit.

The body is a Fn::Join of JSON and references; `render` flattens it into JSON whose references read
<LogicalId> and <LogicalId.Attr>, and the logical IDs are looked up by what the resources are.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, NamedTuple

import pytest

from infra.port_permissions import FUNCTION_HANDLERS, actions_of_ports, ports_of_handler
from tests.fakes import fake_ports
from tests.infra.template_queries import (
    CONFIGURED_STACK,
    DEFAULTS_STACK,
    dead_letter_queue_of,
    only_logical_id,
    render,
    resources_of_type,
)
from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard.domain.stall_alarms import LOG_SILENCE_DIMENSION, LOG_SILENCE_METRIC, LOG_SILENCE_NAMESPACE
from trainguard.handlers import stall_prober
from trainguard.handlers.observability import metrics, record_malformed, record_outcome

pytestmark = pytest.mark.slow

STACKS = [CONFIGURED_STACK, DEFAULTS_STACK]
GUARD_NAMESPACE = "TrainGuard"
GUARD_DIMENSIONS = {"service": "trainguard"}


class Graphed(NamedTuple):
    """One metric line of a graph: [namespace, name, dimension, value, ..., {options}]."""

    graph: str
    namespace: str
    name: str
    dimensions: dict[str, str]
    options: dict[str, Any]


def _dashboards(template: dict[str, Any]) -> list[dict[str, Any]]:
    return [r["Properties"] for r in resources_of_type(template, "AWS::CloudWatch::Dashboard").values()]


def _body(template: dict[str, Any]) -> dict[str, Any]:
    (dashboard,) = _dashboards(template)
    return dict(json.loads(render(dashboard["DashboardBody"])))


def _lines(body: dict[str, Any]) -> Iterator[tuple[str, list[Any]]]:
    for widget in body["widgets"]:
        for line in widget["properties"].get("metrics", []):
            yield widget["properties"]["title"], line


def _graphed(template: dict[str, Any]) -> list[Graphed]:
    """Every plain metric line of the dashboard (math and search expressions left out)."""
    found = []
    for title, line in _lines(_body(template)):
        names = [part for part in line if isinstance(part, str)]
        options = line[-1] if isinstance(line[-1], dict) else {}
        if len(names) >= 2:
            dimensions = dict(zip(names[2::2], names[3::2], strict=True))
            found.append(Graphed(title, names[0], names[1], dimensions, options))
    return found


def _expressions(template: dict[str, Any]) -> list[str]:
    return [line[0]["expression"] for _, line in _lines(_body(template)) if "expression" in line[0]]


def _guard_metrics(template: dict[str, Any]) -> list[Graphed]:
    return [g for g in _graphed(template) if g.namespace == GUARD_NAMESPACE and g.dimensions == GUARD_DIMENSIONS]


def _functions(template: dict[str, Any]) -> list[str]:
    return list(resources_of_type(template, "AWS::Lambda::Function"))


@pytest.fixture(params=STACKS)
def stack_template(request: pytest.FixtureRequest, synthesized: Any) -> tuple[str, dict[str, Any]]:
    return request.param, synthesized.templates[request.param]


@pytest.fixture
def emitted_metric_names() -> Iterator[set[str]]:
    """The names the handlers put into Powertools' metric set: every outcome kind, a malformed event, one
    prober run (the production handler, on in-memory ports)."""
    metrics.clear_metrics()
    try:
        for kind in OutcomeKind:
            record_outcome(Outcome(kind, "llama-pretrain", "a reason"))
        record_malformed("a reason")
        stall_prober.handle({}, fake_ports())
        yield set(metrics.metric_set)
    finally:
        metrics.clear_metrics()


def test_each_stack_has_one_dashboard_named_after_it(stack_template: tuple[str, dict[str, Any]]) -> None:
    stack, template = stack_template
    assert [d["DashboardName"] for d in _dashboards(template)] == [f"{stack}-trainguard"]


def test_one_graph_holds_every_decision_kind_as_a_five_minute_sum(stack_template: tuple[str, dict[str, Any]]) -> None:
    _, template = stack_template
    wanted = {f"Outcome-{kind.value}" for kind in OutcomeKind}
    per_graph: dict[str, set[str]] = {}
    for g in _guard_metrics(template):
        if g.name in wanted:
            assert g.options["stat"] == "Sum", g
            assert g.options.get("period", 300) == 300, g
            per_graph.setdefault(g.graph, set()).add(g.name)
    assert wanted in per_graph.values(), per_graph


def test_retries_and_quota_requests_have_their_own_graph(stack_template: tuple[str, dict[str, Any]]) -> None:
    _, template = stack_template
    retries = {
        f"Outcome-{kind.value}"
        for kind in (
            OutcomeKind.RELAUNCHED,
            OutcomeKind.RELAUNCH_SCHEDULED,
            OutcomeKind.NOT_RELAUNCHED,
            OutcomeKind.QUOTA_WALL,
        )
    }
    graphs: dict[str, set[str]] = {}
    for g in _guard_metrics(template):
        graphs.setdefault(g.graph, set()).add(g.name)
    assert retries in graphs.values(), graphs


def test_the_guard_metrics_graphed_are_the_ones_the_handlers_emit(
    synthesized: Any, emitted_metric_names: set[str]
) -> None:
    """No graph waits on a name nobody emits (a typo), and every name emitted is graphed."""
    for stack in STACKS:
        assert {g.name for g in _guard_metrics(synthesized.templates[stack])} == emitted_metric_names


def test_prober_runs_watched_jobs_and_malformed_events(stack_template: tuple[str, dict[str, Any]]) -> None:
    _, template = stack_template
    stats = {(g.name, g.options["stat"], g.options.get("period", 300)) for g in _guard_metrics(template)}
    assert ("ProberCycles", "Sum", 60) in stats
    assert ("WatchedJobs", "Maximum", 60) in stats
    assert ("MalformedEvents", "Sum", 300) in stats


def test_log_silence_is_a_search_over_every_watched_job(stack_template: tuple[str, dict[str, Any]]) -> None:
    _, template = stack_template
    search = f"SEARCH('{{{LOG_SILENCE_NAMESPACE},{LOG_SILENCE_DIMENSION}}} MetricName=\"{LOG_SILENCE_METRIC}\"'"
    assert [e for e in _expressions(template) if e.startswith(search)] == [f"{search}, 'Maximum', 60)"]


def test_every_function_graphs_its_errors_throttles_and_p95_duration(
    stack_template: tuple[str, dict[str, Any]],
) -> None:
    _, template = stack_template
    lambda_lines = {
        (g.name, g.dimensions["FunctionName"], g.options["stat"])
        for g in _graphed(template)
        if g.namespace == "AWS/Lambda"
    }
    functions = _functions(template)
    assert len(functions) >= 6
    for function_id in functions:
        for metric, stat in (("Errors", "Sum"), ("Throttles", "Sum"), ("Duration", "p95")):
            assert (metric, f"<{function_id}>", stat) in lambda_lines, (function_id, metric)


def test_every_dead_letter_queue_graphs_the_messages_waiting(stack_template: tuple[str, dict[str, Any]]) -> None:
    _, template = stack_template
    queues = {dead_letter_queue_of(template, function_id) for function_id in _functions(template)}
    assert len(queues) == 3  # job events, quota walls, stall detection
    graphed = {
        g.dimensions["QueueName"]
        for g in _graphed(template)
        if (g.namespace, g.name, g.options["stat"]) == ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum")
    }
    assert graphed == {f"<{queue}.QueueName>" for queue in queues}


def test_the_ledger_graphs_refused_conditional_writes_and_throttles(
    stack_template: tuple[str, dict[str, Any]],
) -> None:
    _, template = stack_template
    table = f"<{only_logical_id(template, 'AWS::DynamoDB::Table')}>"
    ledger = {
        (g.name, g.dimensions.get("Operation")) for g in _graphed(template) if g.dimensions.get("TableName") == table
    }
    assert ("ConditionalCheckFailedRequests", None) in ledger
    throttled = {operation for name, operation in ledger if name == "ThrottledRequests"}
    declared = frozenset().union(*(actions_of_ports(ports_of_handler(h)) for h in FUNCTION_HANDLERS))
    assert throttled == {a.removeprefix("dynamodb:") for a in declared if a.startswith("dynamodb:")}
