"""The dead-letter path: the stack's three dead-letter queues (on the stand-in's SQS), their alarms as the
synthesized template defines them, and the redrive an operator runs (docs/local-tools.md, "Reliability").

The alarm is evaluated as CloudWatch would: SQS publishes ApproximateNumberOfMessagesVisible for each
queue every minute (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/
monitoring-using-cloudwatch.html); those datapoints are put into the stand-in's CloudWatch from the queue's
depth over time, the alarm is created there with the template's properties, and its state is computed by
`trainguard_local.stand_in.alarm_evaluation` (CloudWatch's documented semantics), with the local alarm evaluator's
reading of the alarm (`alarm_rule_of`, `queries_of`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from trainguard_local.chaos.lambda_runtime import FUNCTIONS, function_of_arn
from trainguard_local.chaos.stack_wiring import StackWiring
from trainguard_local.stand_in.alarm_evaluation import INSUFFICIENT_DATA, evaluate_alarm, period_starts
from trainguard_local.stand_in.alarm_evaluator import alarm_rule_of, queries_of
from trainguard_local.stand_in.local_aws import LocalAWS

# Which queue takes each function's failed invocations: the construct that owns the function (infra/).
QUEUE_OF_FUNCTION = {
    "job-events": "TrainGuard/JobEvents/DeadLetterQueue",
    "retry-launcher": "TrainGuard/JobEvents/DeadLetterQueue",
    "failed-launches": "TrainGuard/QuotaWalls/DeadLetterQueue",
    "quota-watch": "TrainGuard/QuotaWalls/DeadLetterQueue",
    "stall-alarms": "TrainGuard/StallDetection/DeadLetterQueue",
}
SQS_PUBLISHES_EVERY = timedelta(minutes=1)


@dataclass
class DeadLetterQueues:
    aws: LocalAWS
    urls: dict[str, str]  # construct path -> queue URL
    names: dict[str, str]  # construct path -> queue name

    @classmethod
    def create(cls, aws: LocalAWS) -> DeadLetterQueues:
        sqs = aws.client("sqs")
        urls, names = {}, {}
        for path in sorted(set(QUEUE_OF_FUNCTION.values())):
            name = "trainguard-" + path.split("/")[1].lower() + "-dlq"
            urls[path] = sqs.create_queue(QueueName=name)["QueueUrl"]
            names[path] = name
        return cls(aws, urls, names)

    def url_of_function(self) -> dict[str, str]:
        return {function: self.urls[path] for function, path in QUEUE_OF_FUNCTION.items()}

    def depth(self, path: str) -> int:
        attributes = self.aws.client("sqs").get_queue_attributes(
            QueueUrl=self.urls[path], AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"])


def model_disagreements(wiring: StackWiring, retry_attempts: int) -> list[str]:
    """Where the replay's model of Lambda differs from the stack (it must not)."""
    problems = []
    for function, handler in FUNCTIONS.items():
        if handler not in wiring.functions:
            problems.append(f"the template has no asynchronous invocation config for {handler}")
            continue
        retries, queue = wiring.functions[handler]
        if retries != retry_attempts:
            problems.append(f"{handler}: the template retries {retries} times, the replay {retry_attempts}")
        if queue != QUEUE_OF_FUNCTION[function]:
            problems.append(
                f"{handler}: the template sends failures to {queue}, the replay to {QUEUE_OF_FUNCTION[function]}"
            )
        if queue not in wiring.queue_alarms:
            problems.append(f"{queue} has no alarm in the template")
    return problems


def alarm_state(
    queues: DeadLetterQueues, wiring: StackWiring, path: str, arrivals: list[datetime], at: datetime
) -> tuple[str, str]:
    """The state the template's alarm on `path` has at `at`, when messages arrived at `arrivals` and none was
    taken out; and the alarm's reason."""
    cloudwatch = queues.aws.client("cloudwatch")
    properties = wiring.queue_alarms[path]
    name = f"{queues.names[path]}-not-empty"
    cloudwatch.put_metric_alarm(
        AlarmName=name,
        AlarmDescription=properties.get("AlarmDescription", ""),
        Namespace=properties["Namespace"],
        MetricName=properties["MetricName"],
        Dimensions=[{"Name": "QueueName", "Value": queues.names[path]}],
        Statistic=properties["Statistic"],
        Period=int(properties["Period"]),
        EvaluationPeriods=int(properties["EvaluationPeriods"]),
        Threshold=float(properties["Threshold"]),
        ComparisonOperator=properties["ComparisonOperator"],
        TreatMissingData=properties.get("TreatMissingData", "missing"),
    )
    [alarm] = cloudwatch.describe_alarms(AlarmNames=[name])["MetricAlarms"]
    rule = alarm_rule_of(alarm)
    starts = period_starts(rule, at)
    first, end = min(starts), max(starts) + timedelta(seconds=rule.period_seconds)
    _publish_depth(cloudwatch, properties, queues.names[path], arrivals, first, end)
    [query], _ = queries_of(alarm)
    stat = {key: value for key, value in query["MetricStat"].items() if value is not None}
    response = cloudwatch.get_metric_data(
        MetricDataQueries=[{"Id": "depth", "MetricStat": stat, "ReturnData": True}], StartTime=first, EndTime=end
    )
    series = {
        (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)): float(value)
        for result in response["MetricDataResults"]
        for stamp, value in zip(result["Timestamps"], result["Values"], strict=True)
    }
    evaluation = evaluate_alarm(rule, series, at, INSUFFICIENT_DATA)
    return evaluation.state, evaluation.reason


def _publish_depth(
    cloudwatch: Any, properties: dict[str, Any], queue: str, arrivals: list[datetime], start: datetime, end: datetime
) -> None:
    data, moment = [], start
    while moment < end:
        depth = sum(1 for arrived in arrivals if arrived <= moment)
        dimensions = [{"Name": "QueueName", "Value": queue}]
        data.append(
            {"MetricName": properties["MetricName"], "Dimensions": dimensions, "Timestamp": moment, "Value": depth}
        )
        moment += SQS_PUBLISHES_EVERY
    cloudwatch.put_metric_data(Namespace=properties["Namespace"], MetricData=data)


@dataclass(frozen=True)
class Redriven:
    function: str
    payload: Any
    request_id: str


def redrive(queues: DeadLetterQueues, path: str, invoke: Callable[[Redriven], None]) -> int:
    """The documented redrive: receive each message, invoke its function again asynchronously with the
    original event, delete the message. A Lambda on-failure record carries the event in `requestPayload`
    and the function in `requestContext.functionArn`; an EventBridge rule target's dead letter is the event
    itself, with the target in the TARGET_ARN message attribute
    (https://docs.aws.amazon.com/eventbridge/latest/userguide/rule-dlq.html)."""
    sqs = queues.aws.client("sqs")
    count = 0
    while True:
        batch = sqs.receive_message(
            QueueUrl=queues.urls[path], MaxNumberOfMessages=10, MessageAttributeNames=["All"]
        ).get("Messages", [])
        if not batch:
            return count
        for message in batch:
            body = json.loads(message["Body"])
            if "requestContext" in body and "requestPayload" in body:
                context = body["requestContext"]
                target = Redriven(function_of_arn(context["functionArn"]), body["requestPayload"], context["requestId"])
            else:
                arn = message["MessageAttributes"]["TARGET_ARN"]["StringValue"]
                target = Redriven(function_of_arn(arn), body, "")
            invoke(target)
            sqs.delete_message(QueueUrl=queues.urls[path], ReceiptHandle=message["ReceiptHandle"])
            count += 1
