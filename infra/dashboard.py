"""The guard's own dashboard: what trainguard decided, what it watches, and whether it is healthy.

One CloudWatch dashboard, `<stack name>-trainguard`, built from a table of (title, metrics) panels,
one graph each. The guard's own figures are the Powertools metrics of trainguard.handlers
(namespace TrainGuard, dimension service=trainguard): `Outcome-<kind>` for every decision
(trainguard.handlers.observability.record_outcome), `MalformedEvents`, and the prober's `ProberCycles`
and `WatchedJobs` (trainguard.handlers.stall_prober). The rest are AWS's own: Lambda, SQS, DynamoDB.

Log silence over each job's own limit is published per job (`TrainGuard/LogSilenceOverLimitMinutes`, dimension
JobName; negative until the limit is reached), and the jobs
change all the time, so the panel is a SEARCH expression: it finds whichever jobs published in the
graph's time range. A dashboard may use one, an alarm may not ("Search expressions are a type of math
expression that you can add to CloudWatch graphs ... You can't create an alarm based on the SEARCH
expression", https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/using-search-expressions.html);
CDK writes it into the dashboard body with `cloudwatch.SearchExpression`. The per-job alarms that act on
log silence are the stall alarms (trainguard.domain.stall_alarms), one metric each.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct, IConstruct

from infra.guard_function import guard_metric
from infra.port_permissions import FUNCTION_HANDLERS, actions_of_ports, ports_of_handler
from infra.stall_detection import PROBER_HEARTBEAT_METRIC
from trainguard.domain.outcome import OutcomeKind
from trainguard.domain.stall_alarms import LOG_SILENCE_DIMENSION, LOG_SILENCE_METRIC, LOG_SILENCE_NAMESPACE
from trainguard.metric_names import MALFORMED_EVENTS, OUTCOME_METRIC_PREFIX, WATCHED_JOBS

# The names the handlers emit (trainguard.handlers.observability, trainguard.handlers.stall_prober);
# tests/infra/test_dashboard.py checks them against what the handlers really emit.
MALFORMED_EVENTS_METRIC = MALFORMED_EVENTS
WATCHED_JOBS_METRIC = WATCHED_JOBS
DASHBOARD_NAME_SUFFIX = "-trainguard"

DECISION_PERIOD = Duration.minutes(5)
PROBE_PERIOD = Duration.minutes(1)  # the prober runs every minute (infra/stall_detection.py)
RETRY_AND_QUOTA_KINDS = (
    OutcomeKind.RELAUNCHED,
    OutcomeKind.RELAUNCH_SCHEDULED,
    OutcomeKind.NOT_RELAUNCHED,
    OutcomeKind.QUOTA_WALL,  # a quota blocked a launch: an increase is requested, the launch waits
)
STALL_KINDS = (OutcomeKind.STALL_FOUND, OutcomeKind.STALL_STOPPED, OutcomeKind.STUCK_STOPPING)
LOG_SILENCE_SEARCH = (
    f"SEARCH('{{{LOG_SILENCE_NAMESPACE},{LOG_SILENCE_DIMENSION}}} MetricName=\"{LOG_SILENCE_METRIC}\"', "
    f"'Maximum', {int(PROBE_PERIOD.to_seconds())})"
)
PANEL_WIDTH = 12  # two panels to a row of the 24-column grid
PANEL_HEIGHT = 6

Panel = tuple[str, Sequence[cloudwatch.IMetric]]


def outcome_metric_name(kind: OutcomeKind) -> str:
    return f"{OUTCOME_METRIC_PREFIX}{kind.value}"


def outcome_count(kind: OutcomeKind) -> cloudwatch.Metric:
    return guard_metric(
        outcome_metric_name(kind), statistic=cloudwatch.Stats.SUM, period=DECISION_PERIOD, label=kind.value
    )


def ledger_operations() -> list[dynamodb.Operation]:
    """The table operations the functions' ports declare ("dynamodb:GetItem" -> Operation.GET_ITEM)."""
    names = sorted(
        action.split(":", 1)[1]
        for action in frozenset().union(*(actions_of_ports(ports_of_handler(h)) for h in FUNCTION_HANDLERS))
        if action.startswith("dynamodb:")
    )
    return [dynamodb.Operation[re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()] for name in names]


def label_of(construct: IConstruct) -> str:
    """A construct's path inside its stack ("JobEvents/DeadLetterQueue"): readable, and unique."""
    return construct.node.path.removeprefix(f"{Stack.of(construct).node.path}/")


def guard_panels(
    *,
    functions: Sequence[lambda_.IFunction],
    dead_letter_queues: Sequence[sqs.IQueue],
    ledger_table: dynamodb.ITable,
) -> list[Panel]:
    """The dashboard, top to bottom, two panels to a row."""
    return [
        *decision_panels(),
        dead_letter_queue_panel(dead_letter_queues),
        *handler_panels(functions),
        *guard_health_panels(ledger_table),
    ]


def decision_panels() -> list[Panel]:
    """What trainguard decided and what it watches."""
    return [
        ("Decisions (per 5 minutes, by outcome)", [outcome_count(kind) for kind in OutcomeKind]),
        ("Retries and quota requests (per 5 minutes)", [outcome_count(kind) for kind in RETRY_AND_QUOTA_KINDS]),
        (
            "Watched jobs (stall prober)",
            [guard_metric(WATCHED_JOBS_METRIC, statistic=cloudwatch.Stats.MAXIMUM, period=PROBE_PERIOD)],
        ),
        (
            "Log silence over each watched job's limit (minutes; 0 = stall alarm)",
            [cloudwatch.SearchExpression(expression=LOG_SILENCE_SEARCH, period=PROBE_PERIOD)],
        ),
        ("Stalls: found, stopped, stuck stopping (per 5 minutes)", [outcome_count(kind) for kind in STALL_KINDS]),
    ]


def dead_letter_queue_panel(dead_letter_queues: Sequence[sqs.IQueue]) -> Panel:
    return (
        "Dead-letter queues: messages waiting",
        [
            queue.metric_approximate_number_of_messages_visible(
                statistic=cloudwatch.Stats.MAXIMUM, label=label_of(queue), period=DECISION_PERIOD
            )
            for queue in dead_letter_queues
        ],
    )


def handler_panels(functions: Sequence[lambda_.IFunction]) -> list[Panel]:
    """Lambda's own figures for every function: errors, throttles, duration."""
    return [
        (
            "Handler errors",
            [
                fn.metric_errors(statistic=cloudwatch.Stats.SUM, label=label_of(fn), period=DECISION_PERIOD)
                for fn in functions
            ],
        ),
        (
            "Handler throttles",
            [
                fn.metric_throttles(statistic=cloudwatch.Stats.SUM, label=label_of(fn), period=DECISION_PERIOD)
                for fn in functions
            ],
        ),
        (
            "Handler duration, p95 (ms)",
            [fn.metric_duration(statistic="p95", label=label_of(fn), period=DECISION_PERIOD) for fn in functions],
        ),
    ]


def guard_health_panels(ledger_table: dynamodb.ITable) -> list[Panel]:
    """Whether the guard itself is healthy: the prober runs, events parse, the ledger takes its writes."""
    return [
        (
            "Stall prober runs (per minute; the prober-health alarm wants 1)",
            [guard_metric(PROBER_HEARTBEAT_METRIC, statistic=cloudwatch.Stats.SUM, period=PROBE_PERIOD)],
        ),
        (
            "Malformed events (per 5 minutes)",
            [guard_metric(MALFORMED_EVENTS_METRIC, statistic=cloudwatch.Stats.SUM, period=DECISION_PERIOD)],
        ),
        (
            "Ledger: refused conditional writes (duplicates, held leases) and throttles",
            [
                ledger_table.metric_conditional_check_failed_requests(
                    statistic=cloudwatch.Stats.SUM, label="conditional writes refused", period=DECISION_PERIOD
                ),
                # A sum over the operations: CDK labels it "Sum of throttled requests across all operations".
                ledger_table.metric_throttled_requests_for_operations(
                    operations=ledger_operations(), period=DECISION_PERIOD
                ),
            ],
        ),
    ]


class GuardDashboard(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: Sequence[lambda_.IFunction],
        dead_letter_queues: Sequence[sqs.IQueue],
        ledger_table: dynamodb.ITable,
    ) -> None:
        super().__init__(scope, construct_id)
        self.dashboard = cloudwatch.Dashboard(
            self, "Dashboard", dashboard_name=f"{Stack.of(self).stack_name}{DASHBOARD_NAME_SUFFIX}"
        )
        self.dashboard.add_widgets(
            *(
                cloudwatch.GraphWidget(title=title, left=list(metrics), width=PANEL_WIDTH, height=PANEL_HEIGHT)
                for title, metrics in guard_panels(
                    functions=functions, dead_letter_queues=dead_letter_queues, ledger_table=ledger_table
                )
            )
        )
