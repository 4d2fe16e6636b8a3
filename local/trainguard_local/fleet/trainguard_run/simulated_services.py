"""The simulated services as a fleet run needs them: SageMaker with the trace's quota walls, and
CloudWatch's evaluation of one job's stall alarms."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from trainguard_local.simulation.catalogue import limit_exceeded_message, training_quota_name
from trainguard_local.stand_in.alarm_evaluator import LocalAlarmEvaluator
from trainguard_local.stand_in.sagemaker_api_model import SageMakerApiError
from trainguard_local.stand_in.sagemaker_control_plane import SimulatedSageMaker
from trainguard_local.stand_in.sagemaker_training_job import TrainingJobRecord
from trainguard_local.stand_in.service_quotas import SimulatedServiceQuotas


@dataclass(frozen=True)
class QuotaWall:
    """A lineage whose launches the account's quota refuses: its `instance_count` instances do not fit
    while others use all of the quota, until the quota is raised to `needed` (what it was + the count)."""

    quota_name: str
    instance_type: str
    instance_count: int
    needed: float


class FleetSageMaker(SimulatedSageMaker):
    """The simulated SageMaker, with the trace's quota walls instead of counting instances in use.

    A quota wall refuses the launches of one lineage (the job and every relaunch that names it as root)
    with ResourceLimitExceeded in AWS's wording, the quota's value as both its limit and its current
    utilisation (the others use all of it), until Service Quotas' value of that quota reaches what the
    launch needs; so are its launches on an alternative the trace gave no room (`leave_no_room`), until that quota
    makes room beside the others' use. Other jobs are not counted: the trace's jobs do not compete for quota, as in the
    anchors' models; but two walls of one quota share its value and its increase requests."""

    def __init__(self, quotas: SimulatedServiceQuotas, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._quotas = quotas
        self.walls: dict[str, QuotaWall] = {}  # by root job name
        # Alternatives whose quota others use up while a lineage's own type is walled: (root, type) -> the instances
        # the others use, all of the quota's value when the wall went up.
        self.short_alternatives: dict[tuple[str, str], float] = {}

    def leave_no_room(self, root: str, instance_type: str) -> None:
        """Others' jobs use all of `instance_type`'s quota, as it stands now, while `root`'s lineage is walled: its
        launches on that type are refused until an increase makes room beside them. Walled again, the others' use
        stays what it was (the quota's value by then may hold an increase made for this lineage)."""
        others = self._quotas.quota_value(training_quota_name(instance_type))
        self.short_alternatives.setdefault((root, instance_type), others)

    def _check_instance_limits(self, job: TrainingJobRecord) -> None:
        tags = {tag["Key"]: tag["Value"] for tag in job.tags}
        root = tags.get("trainguard:root-job") or tags.get("fleet:root") or job.name
        types = job.instances_by_type()
        self._quotas.advance()  # apply the decisions due now
        for instance_type, count in types.items():
            others = self.short_alternatives.get((root, instance_type))
            if others is None:
                continue
            value = self._quotas.quota_value(training_quota_name(instance_type))
            if value < others + count:
                text = limit_exceeded_message(instance_type, limit=int(value), in_use=int(others), delta=count)
                raise SageMakerApiError("ResourceLimitExceeded", text)
        wall = self.walls.get(root)
        if wall is None or wall.instance_type not in types:
            return
        value = self._quotas.quota_value(wall.quota_name)
        if value >= wall.needed:
            return
        text = limit_exceeded_message(
            wall.instance_type, limit=int(value), in_use=int(value), delta=wall.instance_count
        )
        raise SageMakerApiError("ResourceLimitExceeded", text)


class JobAlarmEvaluator(LocalAlarmEvaluator):
    """CloudWatch's evaluation of one job's stall alarms (LocalAlarmEvaluator, limited to these names)."""

    def __init__(self, names: list[str], cloudwatch: Any, events: Any, clock: Callable[[], datetime]) -> None:
        super().__init__(cloudwatch, events, clock)
        self._names = names

    def _describe_alarms(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        found = self._cloudwatch.describe_alarms(AlarmNames=self._names, AlarmTypes=["MetricAlarm", "CompositeAlarm"])
        return list(found.get("MetricAlarms", [])), list(found.get("CompositeAlarms", []))
