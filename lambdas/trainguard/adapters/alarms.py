"""CloudWatch: create and delete a job's stall alarms, list the ones trainguard owns, publish log silence.

API limits this module keeps to (botocore's CloudWatch model and the CloudWatch API Reference, quoted):
- DeleteAlarms: "up to 100 alarms in one operation. However, this total can include no more than one
  composite alarm". And "If you specify any incorrect alarm names, the alarms you specify with
  correct names are still deleted", so ResourceNotFound is an idempotent no-op here.
- An alarm cannot be deleted while a composite depends on it: "ValidationError ... Cannot delete X as
  there are composite alarm(s) depending on them", and nothing in that call is deleted
  (cloud-custodian/cloud-custodian#7763, ekristen/aws-nuke#462). So composites go first, in calls of
  their own, and the metric alarms they watch in later calls.
- PutMetricAlarm and PutCompositeAlarm create or overwrite ("the update completely overwrites the
  previous configuration"), so `create` can be repeated; tags given on an update "are ignored".
- PutMetricData: "no more than 1000 different metrics" per call, and 1 MB per request (1,000 data
  of one dimension with a 63-character job name are far below it); values may not be NaN or infinite.
- DescribeAlarms returns composite alarms only when AlarmTypes asks for them ("If you omit this
  parameter, only metric alarms are returned").
Rates: PutMetricAlarm and PutCompositeAlarm 3/s (adjustable), DeleteAlarms 3/s (not adjustable),
DescribeAlarms 9/s, PutMetricData 500/s (cw_region.html). boto3's own retries absorb throttling.

IAM (each method's `needs`; the stack scopes them):
- cloudwatch:TagResource, because every alarm is tagged on creation: "To be able to associate tags
  with the alarm when you create the alarm, you must have the cloudwatch:TagResource permission"
  (botocore, PutMetricAlarm and PutCompositeAlarm, Tags).
- cloudwatch:PutCompositeAlarm must be "scoped to *", and DescribeAlarms too to see composite alarms
  (botocore, PutCompositeAlarm and DescribeAlarms). PutMetricAlarm, DeleteAlarms and TagResource can
  be scoped to the alarm ARNs `arn:aws:cloudwatch:<region>:<account>:alarm:trainguard-*`.
- cloudwatch:SetAlarmState (for `rearm`) can be scoped to the same alarm ARNs.
- cloudwatch:PutMetricData takes no resource; scope it with the condition `cloudwatch:namespace` =
  TrainGuard (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/iam-cw-condition-keys-namespace.html).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from trainguard.adapters.permissions import needs
from trainguard.domain.stall_alarms import (
    LOG_SILENCE_DIMENSION,
    LOG_SILENCE_METRIC,
    LOG_SILENCE_NAMESPACE,
    OWNED_PREFIXES,
    AlarmKind,
    StallAlarmPlan,
    is_never_composite,
    owned_alarm_job,
    parse_gpu_part_name,
    possible_gpu_part_names,
)
from trainguard.domain.stalls import StallSignal, alarm_name, parse_alarm_name

DELETE_BATCH = 100  # DeleteAlarms: AlarmNames holds at most 100 names, at most one of them a composite
METRICS_PER_PUT = 1000  # PutMetricData: at most 1000 different metrics per call


class StallAlarms:
    def __init__(self, client: Any) -> None:
        self._client = client

    @needs("cloudwatch:PutMetricAlarm", "cloudwatch:PutCompositeAlarm", "cloudwatch:TagResource")
    def create(self, plan: StallAlarmPlan) -> None:
        """Put the plan's alarms, children before the composite that names them. Safe to repeat."""
        for kind, request in plan.creation_order():
            if kind is AlarmKind.COMPOSITE:
                self._client.put_composite_alarm(**request)
            else:
                self._client.put_metric_alarm(**request)

    @needs("cloudwatch:PutMetricAlarm", "cloudwatch:TagResource")
    def put_metric_alarm(self, request: Mapping[str, Any]) -> None:
        """Put one metric alarm of a plan again (an alarm an earlier version made differently)."""
        self._client.put_metric_alarm(**request)

    @needs("cloudwatch:DescribeAlarms")
    def outdated_log_silence_alarms(self) -> list[str]:
        """The log-silence alarms that watch another metric than this version publishes: made by an earlier
        version (LogSilenceMinutes against a fixed threshold), they would never fire again."""
        prefix = alarm_name(StallSignal.LOG_SILENCE, "")
        outdated = []
        for page in self._client.get_paginator("describe_alarms").paginate(
            AlarmNamePrefix=prefix, AlarmTypes=["MetricAlarm"]
        ):
            outdated += [
                a["AlarmName"] for a in page.get("MetricAlarms", []) if a.get("MetricName") != LOG_SILENCE_METRIC
            ]
        return outdated

    @needs("cloudwatch:DeleteAlarms")
    def delete(self, names: Iterable[str]) -> None:
        """Delete these alarms, composites first. Names already gone are not an error."""
        for batch in delete_batches(names):
            try:
                self._client.delete_alarms(AlarmNames=batch)
            except ClientError as err:
                if err.response.get("Error", {}).get("Code") != "ResourceNotFound":
                    raise

    @needs("cloudwatch:DescribeAlarms")
    def list_owned(self) -> dict[str, str]:
        """Every stall alarm trainguard owns (signals and GPU parts, of any job): name -> state."""
        states: dict[str, str] = {}
        paginator = self._client.get_paginator("describe_alarms")
        for prefix in OWNED_PREFIXES:
            pages = paginator.paginate(AlarmNamePrefix=prefix, AlarmTypes=[kind.value for kind in AlarmKind])
            for page in pages:
                for alarm in [*page.get("MetricAlarms", []), *page.get("CompositeAlarms", [])]:
                    if owned_alarm_job(alarm["AlarmName"]) is not None:
                        states[alarm["AlarmName"]] = alarm["StateValue"]
        return states

    @needs("cloudwatch:DescribeAlarms", "cloudwatch:SetAlarmState")
    def rearm(self, alarm_name: str, reason: str) -> None:
        """Set the alarm back to OK, so that it fires again (a new state-change event) if its condition
        still holds at the next evaluation; an alarm that stays in ALARM sends no new event.

        SetAlarmState: "Metric alarms returns to their actual state quickly, often within seconds", but
        a composite "returns to its actual state only once any of its children alarms change state"
        (botocore, SetAlarmState). So for the idle-GPU composite, its parts in ALARM are set to OK first;
        each then returns to ALARM at its next evaluation, and the composite with them. An alarm that
        is already gone is a no-op.
        """
        parsed = parse_alarm_name(alarm_name)
        if parsed is not None and parsed[0] is StallSignal.IDLE_GPU:
            for part in self._parts_in_alarm(parsed[1]):
                self._set_ok(part, reason)
        self._set_ok(alarm_name, reason)

    def _parts_in_alarm(self, job_name: str) -> list[str]:
        names = possible_gpu_part_names(job_name)  # at most 100: one DescribeAlarms call (AlarmNames max 100)
        found = self._client.describe_alarms(AlarmNames=names, AlarmTypes=[AlarmKind.METRIC.value])
        return [a["AlarmName"] for a in found.get("MetricAlarms", []) if a["StateValue"] == "ALARM"]

    def _set_ok(self, alarm_name: str, reason: str) -> None:
        try:
            self._client.set_alarm_state(AlarmName=alarm_name, StateValue="OK", StateReason=reason[:1023])
        except ClientError as err:
            if err.response.get("Error", {}).get("Code") != "ResourceNotFound":
                raise

    @needs("cloudwatch:PutMetricData")
    def publish_log_silence(self, values: Mapping[str, float], at: datetime) -> None:
        """Publish each job's log silence over its own limit (minutes; negative: minutes left), as of `at`,
        in calls of 1000 metrics."""
        data = []
        for job_name, minutes in values.items():
            if not math.isfinite(minutes):
                raise ValueError(f"log silence of {job_name} is {minutes}: CloudWatch rejects NaN and infinity")
            data.append(
                {
                    "MetricName": LOG_SILENCE_METRIC,
                    "Dimensions": [{"Name": LOG_SILENCE_DIMENSION, "Value": job_name}],
                    "Timestamp": at,
                    "Value": float(minutes),
                }
            )
        for start in range(0, len(data), METRICS_PER_PUT):
            self._client.put_metric_data(
                Namespace=LOG_SILENCE_NAMESPACE, MetricData=data[start : start + METRICS_PER_PUT]
            )


def delete_batches(names: Iterable[str]) -> list[list[str]]:
    """DeleteAlarms calls for `names`: each may-be-composite name heads a call of its own, filled up with
    alarms no composite of ours names (log silence); the GPU parts and the rest follow in calls of 100.

    The idle-GPU signal alarm is a composite for more than 10 hosts; the name cannot tell, so each such
    name (and any name trainguard does not recognise) is treated as a possible composite.
    """
    unique = list(dict.fromkeys(names))
    maybe_composite = [n for n in unique if not is_never_composite(n)]
    fillers = [n for n in unique if is_never_composite(n) and parse_gpu_part_name(n) is None]
    children = [n for n in unique if parse_gpu_part_name(n) is not None]
    batches: list[list[str]] = []
    for name in maybe_composite:
        take, fillers = fillers[: DELETE_BATCH - 1], fillers[DELETE_BATCH - 1 :]
        batches.append([name, *take])
    rest = fillers + children
    batches.extend(rest[i : i + DELETE_BATCH] for i in range(0, len(rest), DELETE_BATCH))
    return batches
