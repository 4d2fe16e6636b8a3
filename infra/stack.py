"""The trainguard stack: composes the constructs and makes the grants between them.

The functions' environment is one `GuardConfig`, built here once from the constructs' names and
ARNs (CDK tokens) and passed through `to_env()`, so no variable name is typed in the infrastructure.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack
from constructs import Construct
from trainguard.config import GuardConfig

from infra.job_events import JobEvents
from infra.ledger import Ledger
from infra.notifications import Notifications
from infra.settings import Settings


def guard_config(settings: Settings, *, ledger_table_name: str, topic_arn: str, retry_launcher_arn: str,
                 scheduler_role_arn: str, schedule_group_name: str) -> GuardConfig:
    """Settings plus the deployed resources' names: what the handlers read back with `from_env()`."""
    return GuardConfig(
        ledger_table_name=ledger_table_name,
        topic_arn=topic_arn,
        tag_prefix=settings.tag_prefix,
        default_max_retries=settings.default_max_retries,
        retry_budget_per_hour=settings.retry_budget_per_hour,
        dry_run=settings.dry_run,
        capacity_backoff_minutes=settings.capacity_backoff_minutes,
        capacity_backoff_max_minutes=settings.capacity_backoff_max_minutes,
        retry_launcher_arn=retry_launcher_arn,
        scheduler_role_arn=scheduler_role_arn,
        schedule_group_name=schedule_group_name,
        passable_role_arns=settings.passable_role_arns,
    )


class TrainGuardStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, settings: Settings, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.settings = settings
        self.notifications = Notifications(self, "Notifications", notification_emails=settings.notification_emails)
        self.ledger = Ledger(self, "Ledger")
        self.job_events = JobEvents(
            self,
            "JobEvents",
            alarm_topic=self.notifications.topic,
            tag_prefix=settings.tag_prefix,
            passable_role_arns=settings.passable_role_arns,
            checkpoint_buckets=settings.checkpoint_buckets,
        )
        for function in self.job_events.functions:
            self.ledger.grant_ledger_access(function)
            self.notifications.grant_publish(function)

        self.guard_config = guard_config(
            settings,
            ledger_table_name=self.ledger.table.table_name,
            topic_arn=self.notifications.topic.topic_arn,
            retry_launcher_arn=self.job_events.retry_launcher_arn,
            scheduler_role_arn=self.job_events.scheduler_role.role_arn,
            schedule_group_name=self.job_events.schedule_group.schedule_group_name,
        )
        self.job_events.add_environment(self.guard_config.to_env())
