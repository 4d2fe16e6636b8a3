"""List prices of what trainguard itself uses, us-east-1, in dollars, each with its source.

Used by the fleet simulator's `guard_cost` (guard_cost.py) and by the stall prober's measurement at
scale (bench/measure_stalls.py). Free tiers are left out: the figures are what a fleet pays once past them.
Where docs/aws-facts.md gives a price it is used (docs/aws-facts.md calls them third-party figures,
unconfirmed); the others were looked up and their source is named next to them. The official pages
(https://aws.amazon.com/<service>/pricing/) were not reachable from here: recheck before quoting.
"""

from __future__ import annotations

HOURS_PER_MONTH = 730  # AWS's monthly prices, prorated by the hour, assume 730 hours a month

# CloudWatch
# A standard-resolution alarm, per metric it references: docs/aws-facts.md ("alarm about $0.10/alarm-month")
ALARM_METRIC_MONTH = 0.10
# A composite alarm: https://c3x.dev/resources/aws/aws_cloudwatch_metric_alarm ("Composite ... $0.50/alarm-month")
COMPOSITE_ALARM_MONTH = 0.50
CUSTOM_METRIC_MONTH = 0.30  # first 10,000 custom metrics: docs/aws-facts.md ("custom metric about $0.30/month")
# A custom dashboard, per month: $3 ("dashboards at $3 each", us-east-1, June 2026:
# https://www.factualminds.com/blog/amazon-cloudwatch-pricing-metrics-logs-alarms-dashboards/, read 2026-12-05)
DASHBOARD_MONTH = 3.00
# CloudWatch Logs ingestion, standard log class, per GB: same page ("Logs ingestion at $0.50/GB")
LOGS_INGESTION_PER_GB = 0.50
# PutMetricData per request, GetMetricData per metric requested: $0.01 per 1,000 (the pricing page's API
# table, quoted at https://github.com/nishinoshake/aws-rough/issues/37). Other CloudWatch API calls
# trainguard makes (DescribeAlarms, PutMetricAlarm, DeleteAlarms, SetAlarmState) are not in that table.
PUT_METRIC_DATA_PER_1000 = 0.01
GET_METRIC_DATA_PER_1000_METRICS = 0.01

# KMS: "Each AWS KMS key that you create in KMS costs $1/month" (https://aws.amazon.com/kms/pricing/, read
# 2026-12-05); "If you enable automatic key rotation, each newly generated backing key costs an additional $1/month"
# (same page; the stack's key rotates yearly). Requests past the free 20,000 a month: "$0.03 per 10,000"
# (https://www.wring.co/blog/aws-kms-pricing-guide).
KMS_KEY_MONTH = 1.00

# Lambda (arm64, as infra/guard_function.py deploys every function)
LAMBDA_REQUEST = 0.20 / 1_000_000  # docs/aws-facts.md ("$0.20 per million requests")
# docs/aws-facts.md gives x86's $0.0000166667; arm64's, 20% less: https://git.mcrn.ar/mariano/lambda_local_runner/src/commit/
# 957e45b8adae23ce50b966346229585b5df18b4d/docs/lambdas-md/lambda-13-cost.md ("arm64 $0.0000133334 / GB-s")
LAMBDA_ARM_GB_SECOND = 0.0000133334
# Billed duration is rounded up to the millisecond:
# https://aws.amazon.com/blogs/aws/new-for-aws-lambda-1ms-billing-granularity-adds-cost-savings/
LAMBDA_BILLING_MS = 1

# DynamoDB on-demand, after the November 2024 cut: https://airbyte.com/data-engineering-resources/dynamodb-pricing
DYNAMODB_READ_PER_MILLION = 0.125  # read request units
DYNAMODB_WRITE_PER_MILLION = 0.625  # write request units
# Units: a strongly consistent read of up to 4 KB is one read request unit (eventually consistent: half);
# a write of up to 1 KB is one write request unit: https://aws.amazon.com/dynamodb/pricing/on-demand/. A Query
# reads the sum of its items' sizes, rounded up to 4 KB:
# https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html; item sizes:
# https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html
DYNAMODB_READ_UNIT_BYTES = 4096
DYNAMODB_WRITE_UNIT_BYTES = 1024

# SNS standard topic publishes, each 64 KB chunk a request:
# https://www.factualminds.com/blog/amazon-sns-pricing-publishes-fanout-protocols/ ("$0.50 per million publishes")
SNS_PUBLISH_PER_MILLION = 0.50
SNS_PUBLISH_CHUNK_BYTES = 64 * 1024

# S3 Standard LIST requests: https://c3x.dev/blog/s3-request-fees-explained ("PUT, COPY, POST, LIST: $0.005 per 1,000")
S3_LIST_PER_1000 = 0.005

# EventBridge Scheduler invocations (a one-time relaunch schedule that fires), after 14 million free a
# month: https://awsnegotiations.com/eventbridge-scheduler-cost ("low per-million-invocation rate"); the
# list price is $1.00 per million (recheck at https://aws.amazon.com/eventbridge/pricing/)
SCHEDULER_INVOCATION_PER_MILLION = 1.00


def per_hour(monthly: float) -> float:
    """A monthly price, prorated by the hour."""
    return monthly / HOURS_PER_MONTH
