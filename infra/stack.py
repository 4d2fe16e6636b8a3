"""The trainguard stack: composes the constructs and makes the grants between them.

The functions' environment is one `GuardConfig`, built here once from the constructs' names and
ARNs (CDK tokens) and passed through `to_env()`, so no variable name is typed in the infrastructure.
Every function's rights come from one declaration: the actions of the adapter methods its ports name
(trainguard.workflows.function_ports, trainguard.adapters.permissions). The stack reads them from the
handler each function runs and grants each where its scope is: the ledger's table, the topics, the
retry schedules, and the statements of infra/grants.py. An action no scope holds stops the synth.
With `enrolled_accounts` set, the stack is also an organization's hub (infra/hub.py, docs/organization.md).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from aws_cdk import Annotations, CfnOutput, Stack
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.dashboard import GuardDashboard
from infra.event_patterns import guarded_events, spoke_log_lines_pattern
from infra.grants import Grants
from infra.hub import Hub, Route
from infra.job_events import JOB_EVENTS_HANDLER, RETRY_LAUNCHER_HANDLER, JobEvents
from infra.ledger import Ledger
from infra.nag import PendingAcknowledgments
from infra.notifications import Notifications
from infra.port_permissions import needs_by_port, ports_of_handler
from infra.quota_walls import FAILED_LAUNCHES_HANDLER, QUOTA_WATCH_HANDLER, QuotaWalls
from infra.settings import Settings
from infra.stall_detection import (
    LOG_ACTIVITY_HANDLER,
    STALL_ALARMS_HANDLER,
    STALL_PROBER_HANDLER,
    StallDetection,
)
from trainguard.adapters.spoke_roles import IN_JOB_ACCOUNT_PORTS
from trainguard.config import GuardConfig

# The stack's outputs, by key (CfnOutput ids directly under the stack are their logical IDs, unhashed).
TOPIC_OUTPUT = "NotificationTopicArn"
CHAT_TOPIC_OUTPUT = "ChatTopicArn"


class TrainGuardStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, settings: Settings, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.settings = settings
        self.grants = Grants(stack=self, settings=settings, acknowledgments=PendingAcknowledgments())
        self._build_constructs()
        for function, handler in self.handlers:
            self._grant_what_it_calls(function, handler)
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
        self.hub = self._build_hub() if settings.is_hub else None
        self.grants.acknowledgments.acknowledge_all()
        self._add_outputs()
        self._warn_about_a_silent_guard()

    @property
    def functions(self) -> tuple[lambda_.Function, ...]:
        return (*self.job_events.functions, *self.quota_walls.functions, *self.stall_detection.functions)

    @property
    def handlers(self) -> tuple[tuple[lambda_.Function, str], ...]:
        """Each function with the handler it runs."""
        stalls, failed_launches = self.stall_detection, self.quota_walls.failed_launches_function
        return (
            (self.job_events.job_events_function, JOB_EVENTS_HANDLER),
            (self.job_events.retry_launcher_function, RETRY_LAUNCHER_HANDLER),
            (self.quota_walls.quota_watch_function, QUOTA_WATCH_HANDLER),
            *(() if failed_launches is None else ((failed_launches, FAILED_LAUNCHES_HANDLER),)),
            (stalls.stall_alarms_function, STALL_ALARMS_HANDLER),
            (stalls.stall_prober_function, STALL_PROBER_HANDLER),
            (stalls.log_activity_function, LOG_ACTIVITY_HANDLER),
        )

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
            log_activity_concurrency=settings.log_activity_concurrency,
        )

    def _build_hub(self) -> Hub:
        """The organization's hub (infra/hub.py): the same routes on its own bus, the functions that act in a
        job's account allowed into their spoke roles."""
        quota_walls, stalls = self.quota_walls, self.stall_detection
        handled_by = {
            "TrainingJobStates": (self.job_events.job_events_function, self.job_events.dead_letter_queue),
            "StallAlarms": (stalls.stall_alarms_function, stalls.dead_letter_queue),
            "FailedLaunches": (quota_walls.failed_launches_function, quota_walls.dead_letter_queue),
        }
        routes = []
        for name, pattern in guarded_events(self.settings.watch_failed_launches).items():
            function, dead_letters = handled_by[name]
            assert function is not None  # the failed-launches function exists where its events are guarded
            routes.append(Route(name, pattern, function, dead_letters))
        if self.settings.subscribe_to_training_logs:  # the spokes' log lines (infra/spoke_log_forwarder.py)
            log_lines = spoke_log_lines_pattern()
            routes.append(Route("LogLines", log_lines, stalls.log_activity_function, stalls.dead_letter_queue))
        acting = [(function, handler) for function, handler in self.handlers if acts_in_job_account(handler)]
        return Hub(
            self,
            "Hub",
            settings=self.settings,
            routes=routes,
            acting_functions=acting,
            acknowledgments=self.grants.acknowledgments,
            alarm_topic=self.notifications.topic,
        )

    def _add_outputs(self) -> None:
        """The topics' ARNs, which `trainguard test-notification` reads (trainguard_cli.sample_notifications: its
        output keys; a test checks they agree) and a subscriber added by hand needs."""
        CfnOutput(self, TOPIC_OUTPUT, value=self.notifications.topic.topic_arn, description="trainguard's topic")
        if self.notifications.chat_topic is not None:
            chat = self.notifications.chat_topic.topic_arn
            CfnOutput(self, CHAT_TOPIC_OUTPUT, value=chat, description="trainguard's topic for Slack and Teams")

    def _warn_about_a_silent_guard(self) -> None:
        """A deploy that would tell no one, or relaunch nothing, says so in the synth's output (and `--strict` makes
        that an error); the global dry run is told as information."""
        annotations = Annotations.of(self)
        for warning_id, message in self.settings.silent_guard_warnings().items():
            annotations.add_warning_v2(warning_id, message)
        if self.settings.dry_run:
            annotations.add_info(
                "trainguard deploys in dry run (dry_run: true): it tells what it would do and does nothing. Set "
                "dry_run to false once its notifications look right (docs/deploying.md)."
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
            account_id=self.account,
        )
        for construct in (self.job_events, self.quota_walls, self.stall_detection):
            construct.add_environment(self.guard_config.to_env())

    def _grant_what_it_calls(self, function: lambda_.Function, handler: str) -> None:
        """The actions of the function's ports, each where its scope is; PassRole by the port that passes."""
        by_port = needs_by_port(ports_of_handler(handler))
        needed = frozenset().union(*by_port.values())
        placed = self.grants.allow_what_it_calls(function, needed, self.stall_detection.training_log_group)
        placed |= self.ledger.grant_items(function, needed)
        placed |= self.notifications.grant_publishing(function, needed)
        if "scheduler" in by_port:  # CreateSchedule and PassRole of the scheduler's own role
            placed |= self.job_events.allow_scheduling_retries(function, by_port["scheduler"])
        if "iam:PassRole" in by_port.get("jobs", ()):  # the execution roles a relaunch may pass
            self.grants.allow_passing_execution_roles(function)
            placed.add("iam:PassRole")
        if unplaced := needed - placed:
            raise ValueError(
                f"{handler} needs {sorted(unplaced)}, which no statement of the stack grants: look each up in the "
                "Service Authorization Reference and add it to the group (infra/action_groups.py) whose resources "
                "and conditions fit it"
            )


def in_job_account_actions(handler: str) -> dict[str, frozenset[str]]:
    """The actions of the function's ports that call the job's own account and region, by port."""
    return {
        port: actions
        for port, actions in needs_by_port(ports_of_handler(handler)).items()
        if port in IN_JOB_ACCOUNT_PORTS
    }


def acts_in_job_account(handler: str) -> bool:
    return any(in_job_account_actions(handler).values())


def guard_config(
    settings: Settings,
    *,
    ledger_table_name: str,
    topic_arn: str,
    retry_launcher_arn: str,
    chat_topic_arn: str = "",
    scheduler_role_arn: str,
    schedule_group_name: str,
    account_id: str = "",
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
        "account_id": account_id,
    }
    from_settings = {f.name: getattr(settings, f.name) for f in fields(GuardConfig) if f.name not in resources}
    return GuardConfig(**resources, **from_settings)
