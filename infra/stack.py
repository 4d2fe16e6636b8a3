"""The trainguard stack: composes the constructs and makes the grants between them.

The functions' environment is one `GuardConfig`, built here once from the constructs' names and
ARNs (CDK tokens) and passed through `to_env()`, so no variable name is typed in the infrastructure.
The functions' SageMaker, Service Quotas, CloudWatch, CloudWatch Logs and S3 rights come from the
adapters' actions, in the groups of infra/action_groups.py; each group's statement is built by
infra/grants.py, and the stack says here which function gets which groups: those its workflows call.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.action_groups import check_adapter_actions_are_placed
from infra.dashboard import GuardDashboard
from infra.grants import Grants
from infra.job_events import JobEvents
from infra.ledger import Ledger
from infra.nag import PendingAcknowledgments
from infra.notifications import Notifications
from infra.quota_walls import QuotaWalls
from infra.settings import Settings
from infra.stall_detection import StallDetection
from trainguard.config import GuardConfig


class TrainGuardStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, settings: Settings, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        check_adapter_actions_are_placed()
        self.settings = settings
        self.grants = Grants(stack=self, settings=settings, acknowledgments=PendingAcknowledgments())
        self._build_constructs()
        self._grant_job_and_quota_functions()
        self._grant_stall_detection()
        self.dashboard = GuardDashboard(
            self,
            "Dashboard",
            functions=self.functions,
            dead_letter_queues=(
                self.job_events.dead_letter_queue,
                self.quota_walls.dead_letter_queue,
                self.stall_detection.dead_letter_queue,
            ),
            ledger_table=self.ledger.table,
        )
        self._configure_functions()
        self.grants.acknowledgments.acknowledge_all()

    @property
    def functions(self) -> tuple[lambda_.Function, ...]:
        return (*self.job_events.functions, *self.quota_walls.functions, *self.stall_detection.functions)

    def _build_constructs(self) -> None:
        settings = self.settings
        self.notifications = Notifications(
            self,
            "Notifications",
            notification_emails=settings.notification_emails,
            chat_notifications=settings.chat_notifications,
        )
        self.ledger = Ledger(self, "Ledger")
        self.job_events = JobEvents(self, "JobEvents", alarm_topic=self.notifications.topic)
        self.quota_walls = QuotaWalls(
            self,
            "QuotaWalls",
            alarm_topic=self.notifications.topic,
            check_every_minutes=settings.quota_check_minutes,
            watch_failed_launches=settings.watch_failed_launches,
        )
        self.stall_detection = StallDetection(
            self,
            "StallDetection",
            alarm_topic=self.notifications.topic,
            subscribe_to_training_logs=settings.subscribe_to_training_logs,
        )

    def _configure_functions(self) -> None:
        """Every function gets the same environment: `GuardConfig.to_env()` of settings and resources."""
        notifications = self.notifications
        self.guard_config = guard_config(
            self.settings,
            ledger_table_name=self.ledger.table.table_name,
            topic_arn=notifications.topic.topic_arn,
            chat_topic_arn=notifications.chat_topic.topic_arn if notifications.chat_topic else "",
            retry_launcher_arn=self.job_events.retry_launcher_arn,
            scheduler_role_arn=self.job_events.scheduler_role.role_arn,
            schedule_group_name=self.job_events.schedule_group.schedule_group_name,
        )
        for construct in (self.job_events, self.quota_walls, self.stall_detection):
            construct.add_environment(self.guard_config.to_env())

    def _grant_job_and_quota_functions(self) -> None:
        """The ledger, the topic and quota requests for all four; relaunches for the three that launch."""
        for function in (*self.job_events.functions, *self.quota_walls.functions):
            self._allow_ledger_and_topic(function)
            self._allow_quota_requests(function)
        for function in self.job_events.functions:
            self._allow_relaunching_training_jobs(function)
            self.grants.allow_listing_checkpoint_buckets(function)
        # The quota watcher launches what waited for a quota (the request is already built: no
        # checkpoint to read); the failed-launches function only requests quotas and records the launch.
        self._allow_relaunching_training_jobs(self.quota_walls.quota_watch_function)

    def _grant_stall_detection(self) -> None:
        """What each function's stall workflows call (trainguard.workflows.stall_watch, stall_alarm,
        stall_prober; trainguard.handlers.log_activity), and nothing else."""
        grants, stalls = self.grants, self.stall_detection
        # Job events: watches a job while it trains (its alarms put, composites too), stops watching when
        # it ends (deleted). The watch list is in the ledger, which it already has.
        grants.allow_putting_stall_alarms(self.job_events.job_events_function)
        grants.allow_putting_composite_alarms(self.job_events.job_events_function)
        grants.allow_deleting_stall_alarms(self.job_events.job_events_function)
        # Stall alarms: describes the job, reads its logs and GPU figures, stops it, reads its checkpoint,
        # rearms an alarm that fired in the startup grace, and deletes the alarms of a job gone or opted out.
        judge = stalls.stall_alarms_function
        self._allow_ledger_and_topic(judge)
        grants.allow_reading_training_jobs(judge)
        grants.allow_stopping_opted_in_training_jobs(judge)
        grants.allow_listing_checkpoint_buckets(judge)
        grants.allow_reading_training_logs(judge, log_group=stalls.training_log_group)
        grants.allow_reading_gpu_metrics(judge)
        grants.allow_rearming_stall_alarms(judge)
        grants.allow_deleting_stall_alarms(judge)
        # Prober: reads the watch list, publishes log silence, reports stuck stops once (ledger steps and
        # the topic), and sweeps orphan alarms (lists them, composites included, and deletes them).
        prober = stalls.stall_prober_function
        self._allow_ledger_and_topic(prober)
        grants.allow_publishing_log_silence(prober)
        grants.allow_listing_alarms(prober)
        grants.allow_deleting_stall_alarms(prober)
        # Log activity: one conditional UpdateItem per delivery, nothing else. It is invoked with the log
        # lines of every training job in the account, so it gets the least of all.
        self.ledger.grant_ledger_updates(stalls.log_activity_function)

    def _allow_ledger_and_topic(self, function: lambda_.Function) -> None:
        """The ledger's items (its leases, steps and watch list) and the notification topic(s)."""
        self.ledger.grant_ledger_access(function)
        self.notifications.grant_publish(function)

    def _allow_relaunching_training_jobs(self, function: lambda_.Function) -> None:
        """Re-describe a job and relaunch it, and nothing wider: CreateTrainingJob only with the
        opt-in tag, PassRole only for the configured execution roles (none when the list is empty)."""
        self.grants.allow_reading_training_jobs(function)
        self.grants.allow_launching_opted_in_training_jobs(function)
        self.grants.allow_launching_on_training_plans(function)
        self.grants.allow_passing_execution_roles(function)

    def _allow_quota_requests(self, function: lambda_.Function) -> None:
        """The Service Quotas adapter's actions, each as narrow as AWS allows, and the service-linked role."""
        self.grants.allow_requesting_sagemaker_quotas(function)
        self.grants.allow_reading_quotas(function)
        self.grants.allow_creating_the_service_quotas_role(function)


def guard_config(
    settings: Settings,
    *,
    ledger_table_name: str,
    topic_arn: str,
    retry_launcher_arn: str,
    chat_topic_arn: str = "",
    scheduler_role_arn: str,
    schedule_group_name: str,
) -> GuardConfig:
    """Settings plus the deployed resources' names: what the handlers read back with `from_env()`.

    Every other field of GuardConfig is the setting of the same name, so a new field is either a
    resource above or a setting; one that is neither stops the synth (AttributeError on Settings)."""
    resources: dict[str, Any] = {
        "ledger_table_name": ledger_table_name,
        "topic_arn": topic_arn,
        "chat_topic_arn": chat_topic_arn,
        "retry_launcher_arn": retry_launcher_arn,
        "scheduler_role_arn": scheduler_role_arn,
        "schedule_group_name": schedule_group_name,
    }
    from_settings = {f.name: getattr(settings, f.name) for f in fields(GuardConfig) if f.name not in resources}
    return GuardConfig(**resources, **from_settings)
