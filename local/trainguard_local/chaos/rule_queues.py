"""What the stack's rules matched, taken from the stand-in's SQS targets after every step of the replay.

Receiving from an empty queue is an HTTP round trip, and the replay looks after every step (thousands); so
it first peeks at the queue's depth in moto's own state (the server runs in this process and shares it, as
stand_in/local_aws.py notes) and receives only from a queue that holds something.
"""

from __future__ import annotations

from typing import Any

from trainguard_local.stand_in.local_aws import LocalAWS
from trainguard_local.stand_in.stack_resources import ACCOUNT, REGION


class RuleQueues:
    def __init__(self, aws: LocalAWS) -> None:
        self._aws = aws
        self.job_events = aws.rule_queue_url
        self.stall_alarms = aws.stall_alarms_queue_url
        self.failed_launches = aws.launch_failures_queue_url
        self.inbox = aws.inbox_queue_url

    def take(self, queue_url: str) -> list[dict[str, Any]]:
        if not _holds_messages(queue_url):
            return []
        return self._aws.drain(queue_url)


def _holds_messages(queue_url: str) -> bool:
    from moto.sqs.models import sqs_backends

    queue = sqs_backends[ACCOUNT][REGION].get_queue(queue_url.rsplit("/", 1)[-1])
    return bool(queue.approximate_number_of_messages)
