"""An embedded AWS stand-in on 127.0.0.1: moto server for what it covers, our simulated SageMaker
control plane for the job lifecycle, and a dispatcher that plays EventBridge -> Lambda.

The resources mirror the stack (infra/), from the one description the fleet simulator's world shares
(stack_resources.py): the ledger table, the topic, the schedule group, the training log group, and the
rules with the stack's own event patterns (infra/event_patterns.py). moto cannot invoke a Lambda
target (LOCAL_AWS.md), so the rule targets an SQS queue and `deliver_events()` hands what arrives
to the production handler, as Lambda would. The production adapters run unmodified: only the
endpoints differ (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_SAGEMAKER).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
from moto.server import ThreadedMotoServer

from trainguard.config import GuardConfig
from trainguard_local.simulation.clock import SimClock
from trainguard_local.stand_in.cloudtrail import cloudtrail_forwarder
from trainguard_local.stand_in.fleet_side import CHECKPOINT_BUCKET
from trainguard_local.stand_in.sagemaker_control_plane import SimulatedSageMaker
from trainguard_local.stand_in.sagemaker_events import eventbridge_forwarder
from trainguard_local.stand_in.sagemaker_server import SageMakerServer
from trainguard_local.stand_in.service_quotas import SimulatedServiceQuotas
from trainguard_local.stand_in.service_quotas_server import ENDPOINT_VARIABLE as QUOTAS_ENDPOINT_VARIABLE
from trainguard_local.stand_in.service_quotas_server import ServiceQuotasServer
from trainguard_local.stand_in.stack_resources import (
    ACCOUNT,
    FAILED_LAUNCHES_RULE,
    JOB_EVENTS_RULE,
    REGION,
    STALL_ALARMS_RULE,
    create_stack_resources,
    rule_pattern,
    stack_config,
)

# The stand-in account: room for the demo's ordinary jobs; p4d and trn1 at 0, as in a new account.
ACCOUNT_QUOTAS = {
    "Number of instances across all training jobs": 64,
    "ml.p5.48xlarge for training job usage": 8,
    "ml.g5.12xlarge for training job usage": 4,
    "ml.g5.xlarge for training job usage": 4,
    "ml.p4d.24xlarge for training job usage": 0,
    "ml.trn1.32xlarge for training job usage": 0,
}


@dataclass
class LambdaContext:
    """What Powertools reads from the Lambda context object."""

    function_name: str = "trainguard-job-events"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:trainguard-job-events"
    aws_request_id: str = "local"


@dataclass
class LocalAWS:
    moto_url: str
    plane: SimulatedSageMaker
    quotas: SimulatedServiceQuotas
    clock: SimClock
    config: GuardConfig
    rule_queue_url: str
    launch_failures_queue_url: str
    inbox_queue_url: str
    stall_alarms_queue_url: str

    def client(self, service: str) -> Any:
        return boto3.client(service, region_name=REGION)

    def receive_rule_events(self) -> list[dict[str, Any]]:
        """Drain what the stack's rule matched (the events EventBridge would hand the function)."""
        return self.drain(self.rule_queue_url)

    def receive_stall_alarms(self) -> list[dict[str, Any]]:
        """Drain what the stack's stall-alarm rule matched (alarm state changes of trainguard's alarms)."""
        return self.drain(self.stall_alarms_queue_url)

    def receive_failed_launches(self) -> list[dict[str, Any]]:
        """Drain what the stack's CloudTrail rule matched: CreateTrainingJob calls refused by a quota."""
        return self.drain(self.launch_failures_queue_url)

    def notifications(self) -> list[dict[str, Any]]:
        """The SNS messages trainguard published, as an SQS subscriber of the topic receives them."""
        return self.drain(self.inbox_queue_url)

    def drain(self, queue_url: str) -> list[dict[str, Any]]:
        return drain_queue(self.client("sqs"), queue_url)


def _teach_moto_stream_prefixes() -> None:
    """moto 5.2.5's FilterLogEvents ignores `logStreamNamePrefix` and searches every stream of the group
    (moto/logs/responses.py reads only logStreamNames). AWS honours it, and trainguard's JobLogs adapter
    relies on it; so the stand-in turns the prefix into the stream names before moto answers."""
    from moto.logs.responses import LogsResponse

    if getattr(LogsResponse.filter_log_events, "_trainguard_prefix", False):
        return
    original = LogsResponse.filter_log_events

    def filter_log_events(self: Any) -> Any:
        prefix = self._get_param("logStreamNamePrefix")
        if prefix and not self._get_param("logStreamNames"):
            group = self.logs_backend.groups[self._get_param("logGroupName")]
            names = [name for name in group.streams if name.startswith(prefix)] or ["\x00no-stream"]
            self._get_param = _with_param(self._get_param, "logStreamNames", names)
        return original(self)

    filter_log_events._trainguard_prefix = True  # type: ignore[attr-defined]
    LogsResponse.filter_log_events = filter_log_events  # type: ignore[method-assign]


def _with_param(get: Any, name: str, value: Any) -> Any:
    return lambda key, default=None: value if key == name else get(key, default)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def moto_on_loopback() -> Iterator[str]:
    """moto server on 127.0.0.1, from a clean slate, with this process's AWS clients pointed at it (its URL);
    the environment is restored after."""
    saved = dict(os.environ)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto server's access log
    port = _free_port()
    _teach_moto_stream_prefixes()
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    moto.start()
    moto_url = f"http://127.0.0.1:{port}"
    # A moto server started in this process shares moto's in-process state: start from a clean slate.
    urllib.request.urlopen(urllib.request.Request(f"{moto_url}/moto-api/reset", method="POST"), timeout=10).close()
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION,
            "AWS_ENDPOINT_URL": moto_url,
            "AWS_EC2_METADATA_DISABLED": "true",
        }
    )
    os.environ.pop("AWS_SESSION_TOKEN", None)
    try:
        yield moto_url
    finally:
        moto.stop()
        os.environ.clear()
        os.environ.update(saved)


@contextmanager
def local_aws(**config_overrides: Any) -> Iterator[LocalAWS]:
    """Start the stand-in, create the stack's resources in it, and point this process's AWS clients at it."""
    with moto_on_loopback() as moto_url:
        clock = SimClock()
        quotas = SimulatedServiceQuotas(clock=clock, values=ACCOUNT_QUOTAS, account_id=ACCOUNT, region=REGION)
        events = boto3.client("events", region_name=REGION)
        plane = SimulatedSageMaker(
            clock=clock,
            on_event=eventbridge_forwarder(events),
            on_failed_call=cloudtrail_forwarder(events, account=ACCOUNT, region=REGION, clock=clock),
            instance_limits=lambda instance_type: training_limit(quotas, instance_type),
            account_id=ACCOUNT,
            region=REGION,
        )
        server = SageMakerServer(plane).start()
        quotas_server = ServiceQuotasServer(quotas).start()
        os.environ["AWS_ENDPOINT_URL_SAGEMAKER"] = server.endpoint_url
        os.environ[QUOTAS_ENDPOINT_VARIABLE] = quotas_server.endpoint_url
        try:
            stand_in = _create_stack_resources(moto_url, plane, quotas, clock, config_overrides)
            os.environ.update(stand_in.config.to_env())
            yield stand_in
        finally:
            quotas_server.stop()
            server.stop()


def training_limit(quotas: SimulatedServiceQuotas, instance_type: str) -> int | None:
    try:
        return int(quotas.quota_value(f"{instance_type} for training job usage"))
    except KeyError:
        return None


def _create_stack_resources(
    moto_url: str,
    plane: SimulatedSageMaker,
    quotas: SimulatedServiceQuotas,
    clock: SimClock,
    overrides: dict[str, Any],
) -> LocalAWS:
    """The stack's resources (stack_resources.py); each rule targets an SQS queue, which `drain` reads, and
    the topic has an SQS subscriber (`notifications`)."""
    topic = create_stack_resources(
        lambda service: boto3.client(service, region_name=REGION), checkpoint_bucket=CHECKPOINT_BUCKET
    )
    sqs, sns, events = (boto3.client(s, region_name=REGION) for s in ("sqs", "sns", "events"))
    inbox = sqs.create_queue(QueueName="trainguard-inbox")["QueueUrl"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=_queue_arn(sqs, inbox))
    queues = {}
    for rule, queue in (
        (JOB_EVENTS_RULE, "trainguard-job-events"),
        (FAILED_LAUNCHES_RULE, "trainguard-failed-launches"),
        (STALL_ALARMS_RULE, "trainguard-stall-alarms"),
    ):
        queues[rule] = sqs.create_queue(QueueName=queue)["QueueUrl"]
        events.put_rule(Name=rule, EventPattern=rule_pattern(rule))
        events.put_targets(Rule=rule, Targets=[{"Id": "handler", "Arn": _queue_arn(sqs, queues[rule])}])
    config = stack_config(topic, **overrides)
    return LocalAWS(
        moto_url,
        plane,
        quotas,
        clock,
        config,
        queues[JOB_EVENTS_RULE],
        queues[FAILED_LAUNCHES_RULE],
        inbox,
        queues[STALL_ALARMS_RULE],
    )


def _queue_arn(sqs: Any, url: str) -> str:
    return str(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"])


def drain_queue(sqs: Any, queue_url: str) -> list[dict[str, Any]]:
    """Every message waiting in the queue, as parsed JSON bodies; each is deleted once read."""
    bodies: list[dict[str, Any]] = []
    while batch := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", []):
        for message in batch:
            bodies.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    return bodies
