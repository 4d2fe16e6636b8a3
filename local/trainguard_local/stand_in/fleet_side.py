"""The fleet's side on the stand-in, one model for every harness (the fleet simulator, the chaos suite, the
sandbox, the demo): a user's CreateTrainingJob, and what a running job writes on AWS — its checkpoints
under its CheckpointConfig.S3Uri, its log lines in the SageMaker training log group (with the
subscription filter's delivery of each, the log-activity function's event), and its hosts'
GPUUtilization as SageMaker publishes it (namespace /aws/sagemaker/TrainingJobs, dimension
Host=<job>/algo-<n>, 100 per GPU).

When a job does what (its faults, its timings) is each harness's own; everything goes through the world's
clients, never trainguard's. Where moto differs from AWS it is said where it is done: moto stamps S3 objects
with the real time (`write_checkpoint(stamped_at=...)` sets the virtual time, in process).
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlparse

from trainguard.adapters.job_activity import GPU_NAMESPACE
from trainguard_local.stand_in.stack_resources import ACCOUNT, TRAINING_LOG_GROUP, TRAINING_ROLE

TRAINING_IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.5"
CHECKPOINT_BUCKET = "demo-checkpoints"  # the users' bucket on the stand-in (local_aws creates it)
_METRICS_PER_CALL = 1000  # PutMetricData's limit of datapoints per request
_SERVICES = ("sagemaker", "s3", "logs", "cloudwatch")


def training_request(
    name: str,
    instance_type: str,
    count: int,
    tags: dict[str, str],
    *,
    bucket: str = CHECKPOINT_BUCKET,
    checkpoint_uri: str = "",
    max_runtime_seconds: int = 432000,
    hyper_parameters: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A CreateTrainingJob request like a user's: PyTorch image, output and checkpoints in `bucket`
    (checkpoints under `<name>/` unless `checkpoint_uri` says where)."""
    return {
        "TrainingJobName": name,
        "RoleArn": TRAINING_ROLE,
        "AlgorithmSpecification": {"TrainingImage": TRAINING_IMAGE, "TrainingInputMode": "File"},
        "OutputDataConfig": {"S3OutputPath": f"s3://{bucket}/output"},
        "ResourceConfig": {"InstanceType": instance_type, "InstanceCount": count, "VolumeSizeInGB": 200},
        "StoppingCondition": {"MaxRuntimeInSeconds": max_runtime_seconds},
        "CheckpointConfig": {"S3Uri": checkpoint_uri or f"s3://{bucket}/{name}/", "LocalPath": "/opt/ml/checkpoints"},
        "HyperParameters": dict(hyper_parameters or {"epochs": "3"}),
        "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
    }


def with_spot(request: dict[str, Any], extra_wait_seconds: int) -> dict[str, Any]:
    """The request as a managed spot job that waits at most `extra_wait_seconds` beyond its runtime."""
    request["EnableManagedSpotTraining"] = True
    stopping = request["StoppingCondition"]
    stopping["MaxWaitTimeInSeconds"] = stopping["MaxRuntimeInSeconds"] + extra_wait_seconds
    return request


def log_delivery(stream: str, events: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A subscription filter's delivery of one stream's events ({id, timestamp (ms), message}) to a Lambda
    function: base64 of gzipped JSON (https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/SubscriptionFilters.html)."""
    payload = {
        "messageType": "DATA_MESSAGE",
        "owner": ACCOUNT,
        "logGroup": TRAINING_LOG_GROUP,
        "logStream": stream,
        "subscriptionFilters": ["trainguard"],
        "logEvents": list(events),
    }
    return {"awslogs": {"data": base64.b64encode(gzip.compress(json.dumps(payload).encode())).decode()}}


class FleetSide:
    """The jobs' launches and writes, through the world's clients: `client(service)`, asked once for each
    service, here (the chaos suite's faults go into the clients its handlers' sessions build later)."""

    def __init__(self, client: Callable[[str], Any]) -> None:
        self._clients = {service: client(service) for service in _SERVICES}
        self._streams: set[str] = set()

    def client(self, service: str) -> Any:
        return self._clients[service]

    def launch(self, request: dict[str, Any]) -> str:
        """The user's CreateTrainingJob; '' or the refusal, "Code: Message"."""
        sagemaker = self.client("sagemaker")
        try:
            sagemaker.create_training_job(**request)
        except sagemaker.exceptions.ClientError as error:
            return f"{error.response['Error']['Code']}: {error.response['Error']['Message']}"
        return ""

    def write_checkpoint(
        self, s3_uri: str, file: str, body: bytes = b"weights", *, stamped_at: datetime | None = None
    ) -> str:
        """Write `file` under the job's checkpoint prefix `s3_uri`; its key. `stamped_at`: the virtual time
        it was written (moto stamps the real time; the stamp is set afterwards, in moto's own state)."""
        parsed = urlparse(s3_uri)
        prefix = parsed.path.strip("/")
        key = f"{prefix + '/' if prefix else ''}{file}"
        self.client("s3").put_object(Bucket=parsed.netloc, Key=key, Body=body)
        if stamped_at is not None:
            _stamp(parsed.netloc, key, stamped_at)
        return key

    def write_log_lines(
        self, job_name: str, stream_started: datetime, lines: Sequence[tuple[datetime, str]]
    ) -> tuple[str, list[dict[str, Any]]]:
        """Lines (at, message), in time order, in one PutLogEvents into the job's first host's stream; the
        stream and the events as written."""
        stream = f"{job_name}/algo-1-{int(stream_started.timestamp())}"
        logs = self.client("logs")
        if stream not in self._streams:
            logs.create_log_stream(logGroupName=TRAINING_LOG_GROUP, logStreamName=stream)
            self._streams.add(stream)
        events = [{"timestamp": int(at.timestamp() * 1000), "message": message} for at, message in lines]
        logs.put_log_events(logGroupName=TRAINING_LOG_GROUP, logStreamName=stream, logEvents=events)
        return stream, events

    def put_gpu_utilization(
        self, job_name: str, hosts: int, values: Sequence[tuple[datetime, float | Sequence[float]]]
    ) -> None:
        """SageMaker's GPUUtilization of every host of the job, one datapoint per (moment, value): one value for
        every host, or one per host."""
        data = [
            {
                "MetricName": "GPUUtilization",
                "Dimensions": [{"Name": "Host", "Value": f"{job_name}/algo-{n}"}],
                "Timestamp": moment,
                "Value": value if isinstance(value, int | float) else value[n - 1],
                "Unit": "Percent",
            }
            for n in range(1, hosts + 1)
            for moment, value in values
        ]
        for start in range(0, len(data), _METRICS_PER_CALL):
            self.client("cloudwatch").put_metric_data(
                Namespace=GPU_NAMESPACE, MetricData=data[start : start + _METRICS_PER_CALL]
            )


def _stamp(bucket: str, key: str, moment: datetime) -> None:
    from moto.s3.models import s3_backends

    stamp = moment.astimezone(UTC).replace(tzinfo=None)
    s3_backends[ACCOUNT]["global"].buckets[bucket].keys[key].last_modified = stamp
