"""The stack's fixed monthly cost, whatever the fleet: each item counted in the synthesized template, at list prices.

    python -m trainguard_local.commands.fixed_cost [--template cdk.out/TrainGuard.template.json] [--write]

prints the table docs/deploying.md shows ("What the stack costs"), from a template `make synth` wrote; `--write`
puts it into the page. tests/infra/test_fixed_cost.py checks that the page's table is the one the template of
cdk.json's settings gives, so the page cannot drift from the stack. Prices are fleet/prices.py's (us-east-1, each
with its source), free tiers left out, as `make bench` prices the per-job cost. Pure: reads a file, no AWS.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainguard.domain.wording import format_value
from trainguard_local.fleet import prices
from trainguard_local.fleet.guard_cost import Deployment

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "deploying.md"
TEMPLATE = ROOT / "cdk.out" / "TrainGuard.template.json"
START, END = "<!-- fixed cost: start -->", "<!-- fixed cost: end -->"
MINUTES_PER_MONTH = prices.HOURS_PER_MONTH * 60
# The metrics the stall prober's handler adds on every run, idle or not (trainguard.handlers.stall_prober: the
# heartbeat the prober-health alarm watches, and the count of watched jobs): custom metrics sent all month.
PROBER_METRICS_EVERY_RUN = 2
# Assumptions of an idle scheduled run (no job watched, nothing waiting): one AWS call (the ledger Query of what is
# watched or waiting), one read request unit, and about 1 KB of log lines (Lambda's START, END and REPORT lines
# and the Powertools metrics blob) ingested by CloudWatch Logs.
IDLE_RUN_AWS_CALLS = 1
IDLE_RUN_LOG_BYTES = 1024
DEPLOYMENT = Deployment()  # the duration model `make bench` prices Lambda with (fleet/guard_cost.py)
_RATE = re.compile(r"^rate\((\d+) minutes?\)$")


@dataclass(frozen=True)
class Item:
    what: str
    counted: str  # what the template holds, in words
    quantity: float  # billed units a month
    unit: str
    price: float  # dollars per unit

    @property
    def monthly(self) -> float:
        return self.quantity * self.price


def _resources(template: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r.get("Properties", {}) for r in template["Resources"].values() if r["Type"] == kind]


def alarm_metrics(alarm: dict[str, Any]) -> int:
    """The metrics a standard-resolution alarm is billed for: its one metric, or each metric its math reads."""
    return 1 if "MetricName" in alarm else sum(1 for query in alarm.get("Metrics", []) if "MetricStat" in query)


def scheduled_runs(template: dict[str, Any]) -> dict[str, float]:
    """Each EventBridge schedule's runs a month, by its description."""
    runs = {}
    for rule in _resources(template, "AWS::Events::Rule"):
        if match := _RATE.match(rule.get("ScheduleExpression", "")):
            runs[rule.get("Description", "a schedule")] = MINUTES_PER_MONTH / int(match.group(1))
    return runs


def fixed_items(template: dict[str, Any], deployment: Deployment = DEPLOYMENT) -> list[Item]:
    """What the stack bills each month with no training job at all, item by item."""
    alarms = _resources(template, "AWS::CloudWatch::Alarm")
    metrics = sum(alarm_metrics(a) for a in alarms)
    keys = len(_resources(template, "AWS::KMS::Key"))
    dashboards = len(_resources(template, "AWS::CloudWatch::Dashboard"))
    heartbeat = f"{PROBER_METRICS_EVERY_RUN} metrics every minute"
    return [
        Item("KMS key (the topics' encryption)", f"{keys} key", keys, "key-month", prices.KMS_KEY_MONTH),
        Item("CloudWatch dashboard", f"{dashboards} dashboard", dashboards, "dashboard-month", prices.DASHBOARD_MONTH),
        Item(
            "the stack's own alarms",
            f"{len(alarms)} alarms, {metrics} metrics",
            metrics,
            "alarm metric-month",
            prices.ALARM_METRIC_MONTH,
        ),
        Item(
            "the prober's heartbeat metrics",
            heartbeat,
            PROBER_METRICS_EVERY_RUN,
            "custom metric-month",
            prices.CUSTOM_METRIC_MONTH,
        ),
        *schedule_items(template, deployment),
    ]


def schedule_items(template: dict[str, Any], deployment: Deployment) -> list[Item]:
    """What the schedules' idle runs bill: Lambda requests and duration, the ledger reads, their log lines."""
    runs = scheduled_runs(template)
    total = sum(runs.values())
    memory_gb = max(f.get("MemorySize", 128) for f in _resources(template, "AWS::Lambda::Function")) / 1024
    seconds = (deployment.handler_ms + deployment.aws_call_ms * IDLE_RUN_AWS_CALLS) / 1000
    schedules = f"{len(runs)} schedules: " + ", ".join(f"{n:,.0f} runs ({what})" for what, n in runs.items())
    duration = f"{seconds * 1000:g} ms each at {memory_gb:g} GB (arm64)"
    reads = f"{IDLE_RUN_AWS_CALLS} Query each, on demand"
    logs = f"about {IDLE_RUN_LOG_BYTES:,} bytes a run"
    return [
        Item("Lambda requests of the schedules", schedules, total, "invocation", prices.LAMBDA_REQUEST),
        Item(
            "Lambda duration of the schedules",
            duration,
            total * seconds * memory_gb,
            "GB-second",
            prices.LAMBDA_ARM_GB_SECOND,
        ),
        Item(
            "DynamoDB reads of the schedules",
            reads,
            total,
            "read request unit",
            prices.DYNAMODB_READ_PER_MILLION / 1_000_000,
        ),
        Item(
            "CloudWatch Logs of the schedules",
            logs,
            total * IDLE_RUN_LOG_BYTES / 1024**3,
            "GB ingested",
            prices.LOGS_INGESTION_PER_GB,
        ),
    ]


def idle_resources(template: dict[str, Any]) -> str:
    """The resources billed only per request, per event or per GB stored, counted."""
    counted = Counter(r["Type"] for r in template["Resources"].values())
    kinds = (
        "AWS::SNS::Topic",
        "AWS::SQS::Queue",
        "AWS::DynamoDB::Table",
        "AWS::Logs::LogGroup",
        "AWS::Lambda::Function",
    )
    return ", ".join(f"{counted[kind]} {kind.split('::')[-1]}" for kind in kinds if counted[kind])


def unit_price(dollars: float) -> str:
    """A price as the pricing pages write it: $0.30, or $0.20 per million units when it is below a cent."""
    if dollars >= 0.01:
        return f"${dollars:,.2f}"
    per_million = f"{dollars * 1_000_000:,.4g}"
    cents = per_million.partition(".")[2]
    return f"${per_million}{'0' * (2 - len(cents)) if 0 < len(cents) < 2 else ''} per million"


def table(template: dict[str, Any]) -> str:
    """The page's table: every item, its count in the template, its list price and its monthly cost; the total."""
    items = fixed_items(template)
    rows = ["| item | in the template | billed a month | price per unit | $ a month |", "|---|---|---|---|---|"]
    for item in items:
        rows.append(
            f"| {item.what} | {item.counted} | {format_value(item.quantity)} {item.unit} | {unit_price(item.price)} | "
            f"{item.monthly:.3f} |"
        )
    rows.append(f"| **total** | | | | **{sum(item.monthly for item in items):.2f}** |")
    rows.append("")
    rows.append(
        f"Billed per request, per event or per GB stored, nothing more with no job: {idle_resources(template)}."
    )
    return "\n".join(rows)


def page_table(page: Path = PAGE) -> str | None:
    text = page.read_text()
    if START not in text or END not in text:
        return None
    return text.split(START, 1)[1].split(END, 1)[0].strip()


def write(template: dict[str, Any], page: Path = PAGE) -> None:
    text = page.read_text()
    before, rest = text.split(START, 1)
    after = rest.split(END, 1)[1]
    page.write_text(f"{before}{START}\n{table(template)}\n{END}{after}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--template", type=Path, default=TEMPLATE, help="a synthesized template (make synth)")
    parser.add_argument("--write", action="store_true", help=f"put the table into {PAGE.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    template = json.loads(args.template.read_text())
    if args.write:
        write(template)
    print(table(template))
    return 0


if __name__ == "__main__":
    sys.exit(main())
