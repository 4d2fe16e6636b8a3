"""The fleet's side of a trainguard run, on the stand-in: users launch jobs, training scripts write
checkpoints and log lines, SageMaker publishes GPU metrics, the account's quotas wall launches off.

Everything here goes through the world's clients, never trainguard's: none of it is trainguard's cost.
Where moto differs from AWS it is said where it is done: moto stamps S3 objects with the real time (the
checkpoint's LastModified is set to the virtual time); moto keeps every metric datapoint in one list
that GetMetricData scans whole (datapoints older than the longest look-back are dropped,
`prune_metrics`).
"""

from __future__ import annotations

import base64
import gzip
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from trainguard.adapters.job_activity import LOG_GROUP
from trainguard_local.fleet.catalogue import training_quota_name
from trainguard_local.fleet.trace import JobSpec
from trainguard_local.fleet.trainguard_run.clock import FleetClock
from trainguard_local.fleet.trainguard_run.simulated_services import FleetSageMaker, QuotaWall
from trainguard_local.stand_in.local_aws import ACCOUNT, REGION, TRAINING_ROLE
from trainguard_local.stand_in.service_quotas import SimulatedServiceQuotas

CHECKPOINT_BUCKET = "fleet-checkpoints"
TRAINING_IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.5"
GPU_NAMESPACE = "/aws/sagemaker/TrainingJobs"


class FleetSide:
    def __init__(
        self, clients: dict[str, Any], clock: FleetClock, plane: FleetSageMaker, quotas: SimulatedServiceQuotas
    ) -> None:
        self.clients, self.clock, self.plane, self.quotas = clients, clock, plane, quotas
        self._checkpoints_written: set[str] = set()
        self._streams: set[str] = set()

    def create_buckets_and_groups(self) -> None:
        self.clients["s3"].create_bucket(Bucket=CHECKPOINT_BUCKET)
        self.clients["logs"].create_log_group(logGroupName=LOG_GROUP)

    def launch(self, spec: JobSpec, name: str, *, root: str) -> str:
        """A user's (or a person's) CreateTrainingJob for `spec`, named `name`; '' or the error text."""
        tags = {
            "trainguard:enabled": "true",
            # The training script resumes from the newest checkpoint when there is one, and starts
            # afresh otherwise: a relaunch before the first checkpoint is what a person would do too.
            "trainguard:restart-without-checkpoint": "true",
            "team": spec.name.split("-", 2)[-1],
            "fleet:root": root,
        }
        if spec.fallback_types:
            tags["trainguard:fallback-types"] = "+".join(f"{kind}:{count}" for kind, count in spec.fallback_types)
        if spec.on_demand_after is not None:
            tags["trainguard:on-demand-after"] = str(spec.on_demand_after)
        if spec.owner == "pipelines":  # the tags a pipeline's step puts on its jobs (domain/ownership.py)
            tags["sagemaker:pipeline-execution-arn"] = (
                f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:pipeline/p/execution/{root}"
            )
        stopping: dict[str, int] = {"MaxRuntimeInSeconds": max(1, round(spec.max_runtime_hours * 3600))}
        request: dict[str, Any] = {
            "TrainingJobName": name,
            "RoleArn": TRAINING_ROLE,
            "AlgorithmSpecification": {"TrainingImage": TRAINING_IMAGE, "TrainingInputMode": "File"},
            "OutputDataConfig": {"S3OutputPath": f"s3://{CHECKPOINT_BUCKET}/output"},
            "ResourceConfig": {
                "InstanceType": spec.instance_type,
                "InstanceCount": spec.instance_count,
                "VolumeSizeInGB": 200,
            },
            "StoppingCondition": stopping,
            "CheckpointConfig": {"S3Uri": self.checkpoint_uri(spec), "LocalPath": "/opt/ml/checkpoints"},
            "HyperParameters": {"framework": spec.framework},
            "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
        }
        if spec.launched_with_preferences:
            resource = request["ResourceConfig"]
            own = {"InstanceType": resource.pop("InstanceType"), "InstanceCount": resource.pop("InstanceCount")}
            others = [{"InstanceType": kind, "InstanceCount": count} for kind, count in spec.fallback_types]
            resource["InstancePreferences"] = [own, *others]
        if spec.spot:
            request["EnableManagedSpotTraining"] = True
            stopping["MaxWaitTimeInSeconds"] = stopping["MaxRuntimeInSeconds"] + 4 * 3600
        if spec.in_vpc:
            request["VpcConfig"] = {
                "SecurityGroupIds": ["sg-0f1e2d3c4b5a69788"],
                "Subnets": ["subnet-0a1b2c3d4e5f60718"],
            }
        try:
            self.clients["sagemaker"].create_training_job(**request)
        except self.clients["sagemaker"].exceptions.ClientError as error:
            return f"{error.response['Error']['Code']}: {error.response['Error']['Message']}"
        return ""

    def checkpoint_uri(self, spec: JobSpec) -> str:
        return f"s3://{CHECKPOINT_BUCKET}/{spec.name}/"

    def write_checkpoint(self, spec: JobSpec, progress_hours: float, written_at: float) -> None:
        """The checkpoint of `progress_hours` of work, in the job's checkpoint prefix, stamped at the
        virtual time it was written (moto stamps the real time; the stamp is set afterwards)."""
        key = f"{spec.name}/checkpoint-{round(progress_hours * 60):06d}min.pt"
        if progress_hours <= 0 or key in self._checkpoints_written:
            return
        self._checkpoints_written.add(key)
        self.clients["s3"].put_object(Bucket=CHECKPOINT_BUCKET, Key=key, Body=b"weights")
        try:
            from moto.s3.models import s3_backends

            stamp = self.clock.at_hours(written_at).astimezone(UTC).replace(tzinfo=None)
            s3_backends[ACCOUNT]["global"].buckets[CHECKPOINT_BUCKET].keys[key].last_modified = stamp
        except (ImportError, KeyError, AttributeError):  # a moto without these internals: the age is off
            pass

    def write_log_line(self, job_name: str, at: datetime, message: str) -> dict[str, Any]:
        """A line in the job's first host's stream; the subscription filter's delivery of it (the event
        the log-activity function receives)."""
        stream = f"{job_name}/algo-1-{int(self.clock.base.timestamp())}"
        logs = self.clients["logs"]
        if stream not in self._streams:
            logs.create_log_stream(logGroupName=LOG_GROUP, logStreamName=stream)
            self._streams.add(stream)
        event = {"timestamp": int(at.timestamp() * 1000), "message": message}
        logs.put_log_events(logGroupName=LOG_GROUP, logStreamName=stream, logEvents=[event])
        payload = {
            "messageType": "DATA_MESSAGE",
            "owner": ACCOUNT,
            "logGroup": LOG_GROUP,
            "logStream": stream,
            "subscriptionFilters": ["trainguard"],
            "logEvents": [{"id": str(uuid.uuid4().int)[:20], **event}],
        }
        return {"awslogs": {"data": base64.b64encode(gzip.compress(json.dumps(payload).encode())).decode()}}

    def gpu_datapoints(self, job_name: str, hosts: int, values: list[tuple[datetime, float]]) -> None:
        """SageMaker's GPUUtilization of every host (100 per GPU), one value per minute."""
        data = [
            {
                "MetricName": "GPUUtilization",
                "Dimensions": [{"Name": "Host", "Value": f"{job_name}/algo-{n}"}],
                "Timestamp": moment,
                "Value": value,
                "Unit": "Percent",
            }
            for n in range(1, hosts + 1)
            for moment, value in values
        ]
        for start in range(0, len(data), 1000):
            self.clients["cloudwatch"].put_metric_data(Namespace=GPU_NAMESPACE, MetricData=data[start : start + 1000])

    def prune_metrics(self, before: datetime) -> None:
        """Drop datapoints older than `before` from moto's store, which GetMetricData scans whole on every
        call. Nothing reads that far back: the caller passes the longest look-back of any alarm or check."""
        try:
            from moto.cloudwatch.models import cloudwatch_backends

            backend = cloudwatch_backends[ACCOUNT][REGION]
        except (ImportError, KeyError):
            return
        cut = before.astimezone(UTC)
        backend.metric_data = [d for d in backend.metric_data if _aware(d.timestamp) >= cut]

    def quota_wall(self, spec: JobSpec, root: str, approval_hours: float) -> str:
        """Put up the trace's quota wall for this lineage, and script how AWS decides the increases of
        that quota from now on: approved, `approval_hours` after each request. A request already open for
        the quota keeps its own schedule (scripting it again would move its decision)."""
        quota = training_quota_name(spec.instance_type)
        self.quotas.advance()
        needed = self.quotas.quota_value(quota) + spec.instance_count
        self.plane.walls[root] = QuotaWall(quota, spec.instance_type, spec.instance_count, needed)
        if not any(
            r["QuotaName"] == quota and r["Status"] in ("PENDING", "CASE_OPENED") for r in self.quotas.requests()
        ):
            self.quotas.decide(quota, "APPROVED", after=timedelta(hours=approval_hours))
        return quota


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
