"""The trace's jobs on the fleet side (stand_in/fleet_side.py, the model the chaos suite and the sandbox
share): a trace job's launch (its tags, instance preferences, spot wait, VPC), each checkpoint of its
progress written once and stamped with the virtual time it was written, and the account's quota walls.

Everything goes through the world's clients, never trainguard's: none of it is trainguard's cost. moto keeps
every metric datapoint in one list that GetMetricData scans whole: datapoints older than the longest
look-back are dropped (`prune_metrics`).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from trainguard_local.fleet.trainguard_run.simulated_services import FleetSageMaker, QuotaWall
from trainguard_local.simulation.catalogue import training_quota_name
from trainguard_local.simulation.clock import SimClock
from trainguard_local.simulation.trace import JobSpec
from trainguard_local.stand_in.fleet_side import FleetSide, training_request, with_spot
from trainguard_local.stand_in.service_quotas import SimulatedServiceQuotas
from trainguard_local.stand_in.stack_resources import ACCOUNT, REGION

CHECKPOINT_BUCKET = "fleet-checkpoints"
SPOT_EXTRA_WAIT_SECONDS = 4 * 3600


class TraceSide(FleetSide):
    def __init__(
        self, clients: dict[str, Any], clock: SimClock, plane: FleetSageMaker, quotas: SimulatedServiceQuotas
    ) -> None:
        super().__init__(clients.__getitem__)
        self.clock, self.plane, self.quotas = clock, plane, quotas
        self._checkpoints_written: set[str] = set()
        self.owner_tags: dict[str, str] = {}  # tags every owner puts on their jobs besides the trace's

    def launch_spec(self, spec: JobSpec, name: str, *, root: str) -> str:
        """A user's (or a person's) CreateTrainingJob for `spec`, named `name`; '' or the error text."""
        request = training_request(
            name,
            spec.instance_type,
            spec.instance_count,
            self.launch_tags(spec, root),
            bucket=CHECKPOINT_BUCKET,
            checkpoint_uri=self.checkpoint_uri(spec),
            max_runtime_seconds=max(1, round(spec.max_runtime_hours * 3600)),
            hyper_parameters={"framework": spec.framework},
        )
        if spec.launched_with_preferences:
            resource = request["ResourceConfig"]
            own = {"InstanceType": resource.pop("InstanceType"), "InstanceCount": resource.pop("InstanceCount")}
            others = [{"InstanceType": kind, "InstanceCount": count} for kind, count in spec.fallback_types]
            resource["InstancePreferences"] = [own, *others]
        if spec.spot:
            with_spot(request, SPOT_EXTRA_WAIT_SECONDS)
        if spec.in_vpc:
            request["VpcConfig"] = {
                "SecurityGroupIds": ["sg-0f1e2d3c4b5a69788"],
                "Subnets": ["subnet-0a1b2c3d4e5f60718"],
            }
        return self.launch(request)

    def launch_tags(self, spec: JobSpec, root: str) -> dict[str, str]:
        """The tags a user's (or a person's) launch of `spec` carries, in the lineage of `root`."""
        tags = {
            "trainguard:enabled": "true",
            # The training script resumes from the newest checkpoint when there is one, and starts
            # afresh otherwise: a relaunch before the first checkpoint is what a person would do too.
            "trainguard:restart-without-checkpoint": "true",
            "team": spec.name.split("-", 2)[-1],
            "fleet:root": root,
        }
        tags.update(spec.reporting.tags)  # a job that declares its progress rule by tags (simulation/reporting.py)
        tags.update(self.owner_tags)  # what every owner adds (the leave to act on findings, in one strategy)
        tags.update(spec.owner_tags)
        if spec.fallback_types:
            tags["trainguard:fallback-types"] = "+".join(f"{kind}:{count}" for kind, count in spec.fallback_types)
        if spec.on_demand_after is not None:
            tags["trainguard:on-demand-after"] = str(spec.on_demand_after)
        if spec.owner == "pipelines":  # the tags a pipeline's step puts on its jobs (domain/ownership.py)
            tags["sagemaker:pipeline-execution-arn"] = (
                f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:pipeline/p/execution/{root}"
            )
        return tags

    def checkpoint_uri(self, spec: JobSpec) -> str:
        return f"s3://{CHECKPOINT_BUCKET}/{spec.name}/"

    def write_progress_checkpoint(self, spec: JobSpec, progress_hours: float, written_at: float) -> None:
        """The checkpoint of `progress_hours` of work, once, stamped at the virtual time it was written."""
        file = f"checkpoint-{round(progress_hours * 60):06d}min.pt"
        key = f"{spec.name}/{file}"
        if progress_hours <= 0 or key in self._checkpoints_written:
            return
        self._checkpoints_written.add(key)
        self.write_checkpoint(self.checkpoint_uri(spec), file, stamped_at=self.clock.at_hours(written_at))

    def prune_metrics(self, before: datetime) -> None:
        """Drop datapoints older than `before` from moto's store, which GetMetricData scans whole on every
        call. Nothing reads that far back: the caller passes the longest look-back of any alarm or check."""
        from moto.cloudwatch.models import cloudwatch_backends

        backend = cloudwatch_backends[ACCOUNT][REGION]
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
