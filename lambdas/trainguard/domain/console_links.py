"""The console links of a notification, built from structured fields only: a region of AWS's shape and a job name
SageMaker would accept. Text (a failure reason, a log line, a tag) never makes a link (trainguard.domain.user_text);
a name that is not a valid job name (a quota's name, a name CloudTrail recorded for a refused launch) gets no link
of its own."""

from __future__ import annotations

import re
from dataclasses import dataclass

from trainguard.domain.naming import is_valid_job_name

# Region codes: us-east-1, eu-central-2, ap-southeast-5, us-gov-west-1, cn-north-1, il-central-1.
REGION_PATTERN = re.compile(r"^[a-z]{2}(-[a-z]+){1,2}-\d{1,2}$")


@dataclass(frozen=True)
class Link:
    label: str  # "job", "logs", "new job", "quotas": the email shows "Job: <url>", the chat "Open the job: <url>"
    url: str


def console_links(
    region: str, job_name: str, *, logs: bool = True, quotas: bool = False, new_job: str = ""
) -> tuple[Link, ...]:
    """The job's console page and its logs (or the SageMaker quotas), and a relaunch's page."""
    if not REGION_PATTERN.match(region):
        return ()
    links = []
    if is_valid_job_name(job_name):
        links.append(Link("job", job_console_url(job_name, region)))
        if logs:
            links.append(Link("logs", job_logs_url(job_name, region)))
    if quotas:
        links.append(Link("quotas", quotas_console_url(region)))
    if new_job and is_valid_job_name(new_job):
        links.append(Link("new job", job_console_url(new_job, region)))
    return tuple(links)


def quotas_console_url(region: str) -> str:
    return f"https://{region}.console.aws.amazon.com/servicequotas/home/services/sagemaker/quotas?region={region}"


def job_console_url(job_name: str, region: str) -> str:
    return f"https://{region}.console.aws.amazon.com/sagemaker/home?region={region}#/jobs/{job_name}"


def job_logs_url(job_name: str, region: str) -> str:
    # The console's log-group URL escapes '/' as $252F and '?'/'=' as $3F/$3D.
    group = "$252Faws$252Fsagemaker$252FTrainingJobs"
    return (
        f"https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}"
        f"#logsV2:log-groups/log-group/{group}$3FlogStreamNameFilter$3D{job_name}"
    )
