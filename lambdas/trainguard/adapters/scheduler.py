"""EventBridge Scheduler: a one-time schedule that fires a delayed relaunch.

The delay runs in an AWS-managed scheduler, never in a sleeping Lambda. The schedule's name is
derived from the failed job, so a second delivery of the same failure finds it already there
(ConflictException) instead of scheduling a second relaunch. In an organization's hub, a relaunch in an
enrolled spoke carries the job's account and region in its input, and its name is derived from them too.
The schedule deletes itself after it fires (ActionAfterCompletion=DELETE).
API: https://docs.aws.amazon.com/scheduler/latest/APIReference/API_CreateSchedule.html.

IAM: each method's `needs`, on the trainguard schedule group (the scheduler action takes the resource
type `schedule`: https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazoneventbridgescheduler.html);
iam:PassRole on the scheduler's role.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from trainguard.adapters.permissions import needs
from trainguard.domain.origin import Location

_NAME_LIMIT = 64  # Schedule names: 1-64 characters, [0-9a-zA-Z-_.]+


class RelaunchScheduler:
    def __init__(
        self, client: Any, *, group_name: str, target_arn: str, role_arn: str, spoke: Location | None = None
    ) -> None:
        self._client = client
        self._group = group_name
        self._target_arn = target_arn
        self._role_arn = role_arn
        self._spoke = spoke  # None: the hub's own account and region (and every single-account stack)

    @needs("scheduler:CreateSchedule", "iam:PassRole")
    def schedule_relaunch(self, failed_job: str, at: datetime, reason: str) -> str:
        """Schedule the relaunch of `failed_job` at `at` (UTC); returns the schedule's name."""
        name = schedule_name(failed_job, self._spoke)
        where = {"account": self._spoke.account, "region": self._spoke.region} if self._spoke else {}
        try:
            self._client.create_schedule(
                Name=name,
                GroupName=self._group,
                ScheduleExpression=f"at({at.strftime('%Y-%m-%dT%H:%M:%S')})",
                ScheduleExpressionTimezone="UTC",
                FlexibleTimeWindow={"Mode": "OFF"},
                ActionAfterCompletion="DELETE",
                Target={
                    "Arn": self._target_arn,
                    "RoleArn": self._role_arn,
                    "Input": json.dumps({"failed_job_name": failed_job, "reason": reason[:1000], **where}),
                    "RetryPolicy": {"MaximumEventAgeInSeconds": 3600, "MaximumRetryAttempts": 10},
                },
                Description=f"trainguard: relaunch {failed_job}"[:512],
            )
        except ClientError as err:
            if err.response["Error"]["Code"] != "ConflictException":
                raise
        return name


def schedule_name(failed_job: str, spoke: Location | None = None) -> str:
    unique = failed_job if spoke is None else f"{spoke.account}/{spoke.region}/{failed_job}"
    digest = hashlib.sha256(unique.encode("utf-8")).hexdigest()[:8]
    readable = re.sub(r"[^0-9a-zA-Z_.-]", "-", failed_job)[: _NAME_LIMIT - len("relaunch--") - len(digest)]
    return f"relaunch-{readable}-{digest}"
