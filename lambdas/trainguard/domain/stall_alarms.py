"""The CloudWatch alarms that watch one training job for a stall: what to create, and how to recognise them.

Two signals (stalls.py), created when training starts and deleted when the job ends:

1. Log silence, on our own metric: the prober publishes `TrainGuard/LogSilenceOverLimitMinutes`
   (dimension JobName) every minute: the job's log silence minus its own limit (stalls.py,
   log_rhythm.py), negative until the limit is reached. One metric alarm: Maximum over 60 s >= 0, 1 of 1
   datapoints. The limit lives in the prober, so a job's learned limit changes without PutMetricAlarm.
   Missing data is notBreaching: if the prober stops, no job is stopped for it (the prober's own
   health is alarmed elsewhere).
2. Idle GPUs, on AWS's own metric `/aws/sagemaker/TrainingJobs` GPUUtilization, dimension
   `Host=<job>/algo-<n>`, which runs from 0 to 100 x the GPUs of the host (docs/aws-facts.md). "Idle" is every
   host at or below gpu-idle-percent x GPUs for gpu-idle-minutes consecutive minutes, so each alarm
   watches MAX(METRICS()) over its hosts, <= the per-host limit, N of N datapoints.

Why this shape holds for any host count SageMaker accepts (each quote with its source):
- SageMaker sets no upper bound of its own: botocore's TrainingInstanceCount (ResourceConfig.InstanceCount and
  InstanceGroup.InstanceCount) has only "min": 0; a job's size is bounded by the account's quotas (instances per
  training job, 20 by default, adjustable), so trainguard must not assume a ceiling it cannot see.
- "Alarms based on metric math expressions can reference a maximum of 10 metrics. This is a hard
  limit that cannot be increased." (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/
  alarm-limits.html; botocore's MetricDataQuery: at most 10 MetricStat structures per PutMetricAlarm.)
  So hosts go in groups of at most 10, one metric-math alarm per group: 256 hosts -> 26 groups.
- AWS's own workaround is to "split your logic across multiple alarms and combine them using a
  composite alarm" (same page). The composite's rule is ALARM(part1) AND ... (every host idle). A rule
  "can specify as many as 100 children alarms" and "as many as 500 elements", and is at most 10,240
  characters (botocore, PutCompositeAlarm AlarmRule): 100 children of at most 96 characters, joined by
  " AND ", are 10,095 characters for a 63-character job name (a test checks). So one composite watches
  up to 1,000 hosts (MAX_GPU_HOSTS).
- Above 1,000 hosts the idle-GPU signal would need composites of composites ("The alarms specified in a
  composite alarm's rule expression can include metric alarms and other composite alarms", CloudWatch API
  Reference, PutCompositeAlarm); trainguard does not build them: such a job is watched on log silence (its
  alarm does not depend on the host count), and its owners are told that its GPUs are not (`gpu_unwatched`).
  When its log-silence alarm fires, the stall-alarms function still reads every host's GPUs itself
  (GetMetricData, 500 metrics a call).
- Cost: "you incur a cost for each alarm-metric that's referenced in the metric math expression"
  (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch_billing.html), so the
  split costs nothing extra: a job is billed one alarm metric per host, plus one for log silence,
  plus one composite alarm when it has more than 10 hosts: at the prices of the fleet model
  (local/trainguard_local/fleet/prices.py) 256 hosts cost 256 x $0.10 + $0.10 + $0.50 = $26.20 a month,
  prorated by the hour (docs/decisions.md, "Every guarded job is watched").
- Metrics Insights alarms, which could watch every host in one query, are limited to "a default of 200
  alarms using the Metrics Insights query per account per Region" (alarm-limits.html): too few for one per job.

Names: `alarm_name(signal, job)` for the two signals; `trainguard-gpu-part-<i>-<job>` for the groups
of a job with more than 10 hosts. The part prefix does not start with `trainguard-stall-`, so the
EventBridge rule on that prefix sees only the composite, never a part.

Assumption: a heterogeneous cluster numbers its hosts algo-1 .. algo-<sum of the groups' counts>,
like a homogeneous one (its log streams are "not grouped by instance groups", SM-DG
train-heterogeneous-cluster.md; the Host numbering itself is not documented). A host without GPUs
reports no GPUUtilization, which MAX(METRICS()) simply leaves out. For such a cluster, pass the GPU
instance type with the fewest GPUs: the per-host limit is then the strictest, so "idle" is never
reached more easily than it should be.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from trainguard.domain.instance_types import gpus_per_host
from trainguard.domain.policy import TagKeys
from trainguard.domain.stalls import ALARM_PREFIX, StallSignal, StallThresholds, alarm_name, parse_alarm_name
from trainguard.domain.wording import counted

LOG_SILENCE_NAMESPACE = "TrainGuard"
LOG_SILENCE_METRIC = "LogSilenceOverLimitMinutes"
LOG_SILENCE_DIMENSION = "JobName"
GPU_NAMESPACE = "/aws/sagemaker/TrainingJobs"
GPU_METRIC = "GPUUtilization"
GPU_DIMENSION = "Host"
GPU_PART_PREFIX = "trainguard-gpu-part-"
OWNED_PREFIXES = (ALARM_PREFIX, GPU_PART_PREFIX)

PERIOD_SECONDS = 60
HOSTS_PER_ALARM = 10  # metric math: at most 10 metrics per alarm, a hard limit
MAX_GPU_PARTS = 100  # PutCompositeAlarm AlarmRule: "as many as 100 children alarms"
MAX_GPU_HOSTS = MAX_GPU_PARTS * HOSTS_PER_ALARM  # 1,000: the most hosts one composite's idle-GPU signal watches
MAX_RULE_CHARACTERS = 10240  # PutCompositeAlarm AlarmRule: max 10,240 (botocore)
MAX_EVALUATION_MINUTES = 1440  # Period x EvaluationPeriods may not exceed one day for periods under an hour
DEFAULT_TAG_KEYS = TagKeys()  # the job tag is `<tag_prefix>:job`
_PART_NAME = re.compile(rf"^{re.escape(GPU_PART_PREFIX)}([1-9][0-9]*)-(.+)$")


class AlarmKind(StrEnum):
    """The two kinds, spelled as DescribeAlarms' AlarmTypes spells them."""

    METRIC = "MetricAlarm"
    COMPOSITE = "CompositeAlarm"


@dataclass(frozen=True)
class StallAlarmPlan:
    """The alarms of one job, as PutMetricAlarm and PutCompositeAlarm keyword arguments.

    Order matters both ways: a composite alarm can be created only once every alarm in its rule
    exists ("Could not save the composite alarm as alarms ... in the alarm rule do not exist",
    awsdocs/aws-cloudformation-user-guide#911), and an alarm cannot be deleted while a composite
    depends on it ("ValidationError ... Cannot delete ... as there are composite alarm(s) depending on
    them", cloud-custodian/cloud-custodian#7763, where the whole call deleted nothing). So composites
    are created after their children and deleted before them: `creation_order()`, `deletion_order()`.
    """

    job_name: str
    metric_alarms: list[dict[str, Any]]
    composite_alarms: list[dict[str, Any]] = field(default_factory=list)
    gpu_unwatched: str = ""  # why the job's GPUs have no alarm (it is watched on log silence only); "" if they do

    def creation_order(self) -> list[tuple[AlarmKind, dict[str, Any]]]:
        return [(AlarmKind.METRIC, alarm) for alarm in self.metric_alarms] + [
            (AlarmKind.COMPOSITE, alarm) for alarm in self.composite_alarms
        ]

    def deletion_order(self) -> list[str]:
        return [a["AlarmName"] for a in self.composite_alarms] + [a["AlarmName"] for a in self.metric_alarms]

    @property
    def all_names(self) -> list[str]:
        """Every alarm of the job, in creation order."""
        return [alarm["AlarmName"] for _, alarm in self.creation_order()]


def plan_stall_alarms(
    job_name: str,
    instance_type: str,
    host_count: int,
    thresholds: StallThresholds,
    *,
    keys: TagKeys = DEFAULT_TAG_KEYS,
) -> StallAlarmPlan:
    """The alarms that watch `job_name` (`host_count` hosts of `instance_type`) with `thresholds`."""
    if not job_name:
        raise ValueError("a stall alarm needs a job name")
    if not 1 <= thresholds.gpu_idle_minutes <= MAX_EVALUATION_MINUTES:
        raise ValueError(
            f"gpu-idle-minutes must be 1 to {MAX_EVALUATION_MINUTES} (one day of one-minute periods), "
            f"not {thresholds.gpu_idle_minutes}"
        )
    tags = [{"Key": keys.key("job"), "Value": job_name}]
    log_alarm = _log_silence_alarm(job_name, thresholds, tags)
    if unwatched := gpus_unwatched_because(host_count):
        return StallAlarmPlan(job_name, [log_alarm], gpu_unwatched=unwatched)
    per_host_limit = float(thresholds.gpu_idle_percent * (gpus_per_host(instance_type) or 1))
    hosts = list(range(1, host_count + 1))
    groups = [hosts[i : i + HOSTS_PER_ALARM] for i in range(0, host_count, HOSTS_PER_ALARM)]
    gpu_name = alarm_name(StallSignal.IDLE_GPU, job_name)
    if len(groups) == 1:
        gpu_alarm = _idle_gpu_alarm(gpu_name, job_name, groups[0], per_host_limit, thresholds, tags)
        return StallAlarmPlan(job_name, [log_alarm, gpu_alarm])
    parts = [
        _idle_gpu_alarm(gpu_part_name(i, job_name), job_name, group, per_host_limit, thresholds, tags)
        for i, group in enumerate(groups, start=1)
    ]
    composite = {
        "AlarmName": gpu_name,
        "AlarmDescription": (
            f"trainguard stall alarm (managed by trainguard; do not edit): all {host_count} hosts of SageMaker "
            f"training job {job_name} idle, that is every one of its {len(parts)} {GPU_PART_PREFIX}* alarms in ALARM."
        ),
        "AlarmRule": " AND ".join(f'ALARM("{part["AlarmName"]}")' for part in parts),
        "Tags": tags,
    }
    return StallAlarmPlan(job_name, [log_alarm, *parts], [composite])


def gpus_unwatched_because(host_count: int) -> str:
    """Why a job of `host_count` hosts gets no idle-GPU alarm ("" when it gets one)."""
    if host_count < 1:
        return (
            f"its description gives {counted(host_count, 'host')}, so trainguard cannot name the hosts whose "
            f"{GPU_METRIC} it would watch"
        )
    if host_count > MAX_GPU_HOSTS:
        return (
            f"it has {counted(host_count, 'host')}, and one composite alarm combines at most "
            f"{counted(MAX_GPU_PARTS, 'alarm')} of {counted(HOSTS_PER_ALARM, 'host')} each, "
            f"{counted(MAX_GPU_HOSTS, 'host')} in all (both are CloudWatch limits)"
        )
    return ""


def gpu_part_name(index: int, job_name: str) -> str:
    return f"{GPU_PART_PREFIX}{index}-{job_name}"


def possible_gpu_part_names(job_name: str) -> list[str]:
    """Every part name a job whose GPUs are watched can have (most jobs have none): at most 100, as many as one
    DescribeAlarms call takes (AlarmNames: max 100, botocore)."""
    return [gpu_part_name(i, job_name) for i in range(1, MAX_GPU_PARTS + 1)]


def parse_gpu_part_name(name: str) -> tuple[int, str] | None:
    """(group index, job) of a `trainguard-gpu-part-<i>-<job>` name, or None."""
    match = _PART_NAME.match(name)
    return (int(match.group(1)), match.group(2)) if match else None


def owned_alarm_job(name: str) -> str | None:
    """The job of any alarm trainguard creates for stalls (signal or part), or None if it is not one."""
    parsed = parse_alarm_name(name)
    if parsed is not None:
        return parsed[1]
    part = parse_gpu_part_name(name)
    return part[1] if part is not None else None


def is_never_composite(name: str) -> bool:
    """True for names that are always metric alarms: log silence and GPU parts.

    The idle-GPU signal alarm is a metric alarm for up to 10 hosts and a composite above; the name
    alone cannot tell which.
    """
    parsed = parse_alarm_name(name)
    return (parsed is not None and parsed[0] is StallSignal.LOG_SILENCE) or parse_gpu_part_name(name) is not None


def _log_silence_alarm(job_name: str, thresholds: StallThresholds, tags: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "AlarmName": alarm_name(StallSignal.LOG_SILENCE, job_name),
        "AlarmDescription": (
            f"trainguard stall alarm (managed by trainguard; do not edit): SageMaker training job {job_name} has "
            "written no log line for longer than its own limit (its stall-minutes tag, its learned log rhythm, or "
            f"{thresholds.stall_minutes} min): {LOG_SILENCE_NAMESPACE}/{LOG_SILENCE_METRIC} >= 0, published each "
            "minute by trainguard's prober; missing data is not a stall."
        ),
        "Namespace": LOG_SILENCE_NAMESPACE,
        "MetricName": LOG_SILENCE_METRIC,
        "Dimensions": [{"Name": LOG_SILENCE_DIMENSION, "Value": job_name}],
        "Statistic": "Maximum",
        "Period": PERIOD_SECONDS,
        "EvaluationPeriods": 1,
        "DatapointsToAlarm": 1,
        "Threshold": 0.0,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "TreatMissingData": "notBreaching",
        "Tags": tags,
    }


def _idle_gpu_alarm(
    name: str,
    job_name: str,
    hosts: list[int],
    per_host_limit: float,
    thresholds: StallThresholds,
    tags: list[dict[str, str]],
) -> dict[str, Any]:
    queries: list[dict[str, Any]] = [
        {
            "Id": f"m{i}",
            "MetricStat": {
                "Metric": {
                    "Namespace": GPU_NAMESPACE,
                    "MetricName": GPU_METRIC,
                    "Dimensions": [{"Name": GPU_DIMENSION, "Value": f"{job_name}/algo-{host}"}],
                },
                "Period": PERIOD_SECONDS,
                "Stat": "Maximum",
            },
            "ReturnData": False,
        }
        for i, host in enumerate(hosts, start=1)
    ]
    queries.append({"Id": "busiest", "Expression": "MAX(METRICS())", "Label": "busiest host", "ReturnData": True})
    span = f"algo-{hosts[0]}" if len(hosts) == 1 else f"algo-{hosts[0]}..algo-{hosts[-1]}"
    return {
        "AlarmName": name,
        "AlarmDescription": (
            f"trainguard stall alarm (managed by trainguard; do not edit): GPUs idle on hosts {span} of SageMaker "
            f"training job {job_name}: the busiest host's {GPU_METRIC} <= {per_host_limit:g} "
            f"({thresholds.gpu_idle_percent}% of each GPU) for {thresholds.gpu_idle_minutes} min."
        ),
        "Metrics": queries,
        "EvaluationPeriods": thresholds.gpu_idle_minutes,
        "DatapointsToAlarm": thresholds.gpu_idle_minutes,
        "Threshold": per_host_limit,
        "ComparisonOperator": "LessThanOrEqualToThreshold",
        "TreatMissingData": "notBreaching",
        "Tags": tags,
    }
