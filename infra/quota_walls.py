"""Quota walls: the periodic check of quota requests and waiting launches, and (optionally) the rule
on CreateTrainingJob calls that SageMaker refused for a quota.

    EventBridge schedule rate(N minutes) --(retry 2x, then DLQ)--> quota-watch function
    EventBridge rule "AWS API Call via CloudTrail" --(retry 8x / 2 h, then DLQ)--> failed-launches function
    both functions --(async retry 2x, then DLQ)

The second rule is built only with the setting `watch_failed_launches`: EventBridge receives
management events from CloudTrail only when the account has a trail that logs them
(https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-service-event-cloudtrail.html), so without
a trail the rule and its function would wait for events that never come.

Neither function schedules relaunches (no scheduler rights). The stack grants Service Quotas, the
ledger, the topic and, to the quota watcher only (it launches what waited), SageMaker.
"""

from __future__ import annotations

from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from constructs import Construct

from infra.event_patterns import failed_training_job_launch_pattern
from infra.guard_function import FunctionGroup

QUOTA_WATCH_HANDLER = "trainguard.handlers.quota_watch.handler"
FAILED_LAUNCHES_HANDLER = "trainguard.handlers.failed_launches.handler"


class QuotaWalls(FunctionGroup):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        alarm_topic: sns.ITopic,
        check_every_minutes: int,
        watch_failed_launches: bool,
    ) -> None:
        rules = (
            "the quota-check schedule, the failed-launch rule" if watch_failed_launches else "the quota-check schedule"
        )
        holds = f"{rules} and their functions' asynchronous invocations"
        super().__init__(scope, construct_id, alarm_topic=alarm_topic, owner="quota walls", holds=holds)
        self.quota_watch_function = self.add_function("QuotaWatchFunction", QUOTA_WATCH_HANDLER)
        self.schedule_rule = self.add_schedule("QuotaCheckSchedule", self.quota_watch_function, check_every_minutes)
        self.failed_launches_function: lambda_.Function | None = None
        self.failed_launch_rule: events.Rule | None = None
        if watch_failed_launches:  # CreateTrainingJob calls refused for a quota (via CloudTrail)
            self.failed_launches_function = self.add_function("FailedLaunchesFunction", FAILED_LAUNCHES_HANDLER)
            pattern = failed_training_job_launch_pattern()
            self.failed_launch_rule = self.add_rule("FailedLaunchRule", self.failed_launches_function, pattern)
