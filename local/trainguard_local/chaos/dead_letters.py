"""The dead-letter path: the stack's three dead-letter queues (on the stand-in's SQS), their alarms as the
synthesized template defines them, and the redrive an operator runs (docs/local-tools.md, "Reliability").

An alarm is evaluated as CloudWatch would (stand_in/alarm_evaluation.py) on what SQS publishes every minute,
ApproximateNumberOfMessagesVisible (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/
monitoring-using-cloudwatch.html), here the queue's depth over time.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from trainguard_local.chaos.lambda_runtime import FUNCTIONS, function_of_arn
from trainguard_local.chaos.stack_wiring import StackWiring
from trainguard_local.stand_in.alarm_definitions import alarm_rule_of
from trainguard_local.stand_in.alarm_evaluation import INSUFFICIENT_DATA, evaluate_alarm, period_starts

# Which queue takes each function's failed invocations: the construct that owns the function (infra/).
QUEUE_OF_FUNCTION = {
    "job-events": "TrainGuard/JobEvents/DeadLetterQueue",
    "retry-launcher": "TrainGuard/JobEvents/DeadLetterQueue",
    "failed-launches": "TrainGuard/QuotaWalls/DeadLetterQueue",
    "quota-watch": "TrainGuard/QuotaWalls/DeadLetterQueue",
    "stall-alarms": "TrainGuard/StallDetection/DeadLetterQueue",
    "log-activity": "TrainGuard/StallDetection/DeadLetterQueue",
    "stall-prober": "TrainGuard/StallDetection/DeadLetterQueue",
}
SQS_PUBLISHES_EVERY = timedelta(minutes=1)


@dataclass
class DeadLetterQueues:
    sqs: Any  # an SQS client of the stand-in
    urls: dict[str, str]  # construct path -> queue URL

    @classmethod
    def create(cls, sqs: Any) -> DeadLetterQueues:
        names = {
            path: f"trainguard-{path.split('/')[1].lower()}-dlq" for path in sorted(set(QUEUE_OF_FUNCTION.values()))
        }
        return cls(sqs, {path: sqs.create_queue(QueueName=name)["QueueUrl"] for path, name in names.items()})

    def url_of_function(self) -> dict[str, str]:
        return {function: self.urls[path] for function, path in QUEUE_OF_FUNCTION.items()}

    def depth(self, path: str) -> int:
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=self.urls[path], AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"])


def model_disagreements(wiring: StackWiring, retry_attempts: int) -> list[str]:
    """Where the chaos suite's model of Lambda differs from the stack (it must not)."""
    problems = []
    for function, handler in FUNCTIONS.items():
        if handler not in wiring.functions:
            problems.append(f"the template has no asynchronous invocation config for {handler}")
            continue
        retries, queue = wiring.functions[handler]
        if retries != retry_attempts:
            problems.append(f"{handler}: the template retries {retries} times, the model {retry_attempts}")
        if queue != QUEUE_OF_FUNCTION[function]:
            problems.append(
                f"{handler}: the template sends failures to {queue}, the model to {QUEUE_OF_FUNCTION[function]}"
            )
        if queue not in wiring.queue_alarms:
            problems.append(f"{queue} has no alarm in the template")
    return problems


def alarm_state(wiring: StackWiring, path: str, arrivals: list[datetime], at: datetime) -> str:
    """The state the template's alarm on `path` has at `at`, when messages arrived at `arrivals` and none was
    taken out: each period's Maximum of the depth SQS publishes every minute, evaluated by CloudWatch's rules."""
    properties = wiring.queue_alarms[path]
    if properties["Statistic"] != "Maximum":
        raise NotImplementedError(f"{path}: the chaos suite reads a Maximum alarm, the template has {properties}")
    rule = alarm_rule_of({"AlarmName": path, **properties})
    last_minute = timedelta(seconds=rule.period_seconds) - SQS_PUBLISHES_EVERY
    series = {start: float(sum(1 for t in arrivals if t <= start + last_minute)) for start in period_starts(rule, at)}
    return evaluate_alarm(rule, series, at, INSUFFICIENT_DATA).state


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
    sqs = queues.sqs
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
