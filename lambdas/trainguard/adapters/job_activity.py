"""The evidence of a stall, read at the moment of the verdict: the job's newest log line, and the
GPU figures of its hosts.

Logs: one group for all jobs, `/aws/sagemaker/TrainingJobs`, streams `<job>/algo-<n>-<epoch>`
(docs/aws-facts.md). FilterLogEvents is throttled per account at a few calls per second, so it is called
only here, once per alarm, never per job per minute (the prober reads the ledger instead).
GPU: namespace `/aws/sagemaker/TrainingJobs`, metric GPUUtilization, dimension Host=<job>/algo-<n>.

IAM: each method's `needs`; FilterLogEvents is granted on the SageMaker training log group only.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from trainguard.adapters.permissions import needs

LOG_GROUP = "/aws/sagemaker/TrainingJobs"
GPU_NAMESPACE = "/aws/sagemaker/TrainingJobs"
MAX_LOG_PAGES = 10
_QUERIES_PER_CALL = 500  # GetMetricData: up to 500 MetricDataQuery structures per call


class JobLogs:
    def __init__(self, client: Any) -> None:
        self._client = client

    @needs("logs:FilterLogEvents")
    def newest_event(self, job_name: str, since: datetime) -> tuple[datetime | None, str]:
        """The newest log event of any of the job's streams after `since`, and its message."""
        kwargs: dict[str, Any] = {
            "logGroupName": LOG_GROUP,
            "logStreamNamePrefix": f"{job_name}/",
            "startTime": int(since.timestamp() * 1000),
        }
        newest: tuple[int, str] | None = None
        for _ in range(MAX_LOG_PAGES):
            page = self._client.filter_log_events(**kwargs)
            for event in page.get("events", []):
                if newest is None or event["timestamp"] >= newest[0]:
                    newest = (int(event["timestamp"]), str(event.get("message", "")))
            if not page.get("nextToken"):
                break
            kwargs["nextToken"] = page["nextToken"]
        if newest is None:
            return None, ""
        return datetime.fromtimestamp(newest[0] / 1000, tz=UTC), newest[1][:300].rstrip("\n")


class GpuMetrics:
    def __init__(self, client: Any) -> None:
        self._client = client

    @needs("cloudwatch:GetMetricData")
    def busiest_by_host(self, job_name: str, host_count: int, since: datetime, now: datetime) -> dict[str, float]:
        """Each host's highest GPUUtilization (1-minute Maximum) between `since` and `now`; hosts that
        published nothing are absent."""
        found = self._by_host(job_name, host_count, since, now, "Maximum")
        return {host: max(values) for host, values in found.items()}

    @needs("cloudwatch:GetMetricData")
    def average_by_host(self, job_name: str, host_count: int, since: datetime, now: datetime) -> dict[str, float]:
        """Each host's mean GPUUtilization (of its 1-minute Averages) between `since` and `now`; hosts that
        published nothing are absent."""
        found = self._by_host(job_name, host_count, since, now, "Average")
        return {host: sum(values) / len(values) for host, values in found.items()}

    def _by_host(
        self, job_name: str, host_count: int, since: datetime, now: datetime, stat: str
    ) -> dict[str, list[float]]:
        """Each host's 1-minute `stat` values of GPUUtilization between `since` and `now`."""
        hosts = [f"{job_name}/algo-{n}" for n in range(1, host_count + 1)]
        found: dict[str, list[float]] = {}
        for start in range(0, len(hosts), _QUERIES_PER_CALL):
            chunk = hosts[start : start + _QUERIES_PER_CALL]
            queries = [
                {
                    "Id": f"h{i}",
                    "Label": host,
                    "MetricStat": {
                        "Metric": {
                            "Namespace": GPU_NAMESPACE,
                            "MetricName": "GPUUtilization",
                            "Dimensions": [{"Name": "Host", "Value": host}],
                        },
                        "Period": 60,
                        "Stat": stat,
                    },
                    "ReturnData": True,
                }
                for i, host in enumerate(chunk)
            ]
            kwargs: dict[str, Any] = {"MetricDataQueries": queries, "StartTime": since, "EndTime": now}
            while True:
                page = self._client.get_metric_data(**kwargs)
                for result in page.get("MetricDataResults", []):
                    values = result.get("Values", [])
                    if values:
                        label = result.get("Label") or chunk[int(result["Id"][1:])]
                        found.setdefault(label, []).extend(float(v) for v in values)
                if not page.get("NextToken"):
                    break
                kwargs["NextToken"] = page["NextToken"]
        return found
