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

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from constructs import Construct

from infra.event_patterns import failed_training_job_launch_pattern
from infra.guard_function import (
    add_environment,
    dead_letter_queue,
    dead_letter_queue_alarm,
    errors_alarm,
    function_for_rule,
    guard_function,
    schedule_to_function,
)
from infra.lambda_asset import guard_code

QUOTA_WATCH_HANDLER = "trainguard.handlers.quota_watch.handler"
FAILED_LAUNCHES_HANDLER = "trainguard.handlers.failed_launches.handler"
# A scheduled check that EventBridge could not deliver is worth two more tries, not more: the next
# check comes at the next interval anyway.
SCHEDULE_RETRY_ATTEMPTS = 2


class QuotaWalls(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        alarm_topic: sns.ITopic,
        check_every_minutes: int,
        watch_failed_launches: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        rules = (
            "the quota-check schedule, the failed-launch rule" if watch_failed_launches else "the quota-check schedule"
        )
        self.dead_letter_queue = dead_letter_queue(
            self, "DeadLetterQueue", holds=f"{rules} and their functions' asynchronous invocations"
        )
        code = guard_code()
        self._build_quota_watch(code, alarm_topic, check_every_minutes)
        self.failed_launches_function: lambda_.Function | None = None
        self.failed_launch_rule: events.Rule | None = None
        if watch_failed_launches:
            self._build_failed_launches(code, alarm_topic)
        dead_letter_queue_alarm(self, self.dead_letter_queue, topic=alarm_topic, owner="quota walls")

    def _build_quota_watch(self, code: lambda_.Code, alarm_topic: sns.ITopic, check_every_minutes: int) -> None:
        """The quota watcher, its schedule every `check_every_minutes` and its errors alarm."""
        self.quota_watch_function = guard_function(
            self,
            "QuotaWatchFunction",
            code=code,
            handler=QUOTA_WATCH_HANDLER,
            description="trainguard: follows quota increase requests and launches what waited for them",
            dead_letter_queue=self.dead_letter_queue,
        )
        self.schedule_rule = schedule_to_function(
            self,
            "QuotaCheckSchedule",
            description="trainguard: the periodic check of quota requests and waiting launches",
            # Spelled out rather than Schedule.rate(), which writes whole hours as "rate(1 hour)".
            expression=f"rate({check_every_minutes} minutes)",
            function=self.quota_watch_function,
            dead_letter_queue=self.dead_letter_queue,
            max_event_age=Duration.minutes(check_every_minutes),
            retry_attempts=SCHEDULE_RETRY_ATTEMPTS,
        )
        errors_alarm(self, "QuotaWatchErrorsAlarm", self.quota_watch_function, topic=alarm_topic, name="quota-watch")

    def _build_failed_launches(self, code: lambda_.Code, alarm_topic: sns.ITopic) -> None:
        """The function on CreateTrainingJob calls refused for a quota (via CloudTrail), and its errors alarm."""
        self.failed_launches_function, self.failed_launch_rule = function_for_rule(
            self,
            "FailedLaunchesFunction",
            code=code,
            handler=FAILED_LAUNCHES_HANDLER,
            description="trainguard: requests the quota a refused CreateTrainingJob needed, and keeps the launch",
            rule_id="FailedLaunchRule",
            rule_description="trainguard: CreateTrainingJob calls refused, ResourceLimitExceeded (via CloudTrail)",
            pattern=failed_training_job_launch_pattern(),
            dead_letter_queue=self.dead_letter_queue,
        )
        errors_alarm(
            self, "FailedLaunchesErrorsAlarm", self.failed_launches_function, topic=alarm_topic, name="failed-launches"
        )

    @property
    def functions(self) -> tuple[lambda_.Function, ...]:
        if self.failed_launches_function is None:
            return (self.quota_watch_function,)
        return (self.quota_watch_function, self.failed_launches_function)

    def add_environment(self, environment: dict[str, str]) -> None:
        """Give every function the same variables (the stack passes `GuardConfig.to_env()`)."""
        add_environment(self.functions, environment)
