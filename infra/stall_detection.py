"""Stall detection: the three functions that find hung training jobs, their triggers, DLQ and alarms.

    EventBridge rule "CloudWatch Alarm State Change" (trainguard-stall-*, ALARM)
        --(retry 8x / 2 h, then DLQ)--> stall-alarms function: re-describes the job, reads fresh
        evidence (FilterLogEvents, GetMetricData), stops a verified stall once, tells
    EventBridge schedule rate(1 minute) --(retry 2x within the minute, then DLQ)--> stall prober:
        publishes each watched job's log silence, sweeps orphan alarms; its heartbeat has an alarm
    CloudWatch Logs subscription on /aws/sagemaker/TrainingJobs (optional) --> log-activity function:
        keeps each watched job's newest log line in the ledger; at most `log_activity_concurrency` at once
    all three --(async retry 2x, then DLQ)

The job-events function (infra/job_events.py) puts and deletes the per-job stall alarms; this
construct owns what reacts to them and what feeds them. The stack grants SageMaker, CloudWatch,
CloudWatch Logs, the ledger and the topic.

The log group is SageMaker's, shared by every training job of the account and region, and created by
SageMaker with the first training job, so it is imported by name, never created: it must exist before
the deploy (a subscription filter on a missing group fails the deploy). A log group takes at most two
subscription filters, not adjustable (CloudWatch Logs quotas,
https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/cloudwatch_limits_cwl.html), and a log
forwarder may hold one already: `subscribe_to_training_logs` off leaves the filter out, and the
log-activity function is then fed by whatever the account uses instead (an account-level subscription
filter policy can target a Lambda function too).
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_logs as logs
from aws_cdk import aws_logs_destinations as logs_destinations
from aws_cdk import aws_sns as sns
from constructs import Construct

from infra.event_patterns import stall_alarm_pattern
from infra.guard_function import FunctionGroup, guard_metric
from trainguard.adapters.job_activity import LOG_GROUP as TRAINING_LOG_GROUP_NAME
from trainguard.metric_names import PROBER_CYCLES

STALL_ALARMS_HANDLER = "trainguard.handlers.stall_alarms.handler"
STALL_PROBER_HANDLER = "trainguard.handlers.stall_prober.handler"
LOG_ACTIVITY_HANDLER = "trainguard.handlers.log_activity.handler"
PROBE_EVERY_MINUTES = 1  # EventBridge's shortest rate, and the shortest age it lets an event reach
# The heartbeat the prober emits each run (Powertools EMF, trainguard.handlers.stall_prober): metric
# ProberCycles in the functions' Powertools namespace, with Powertools' `service` dimension.
PROBER_HEARTBEAT_METRIC = PROBER_CYCLES  # trainguard.metric_names: one source with the prober
PROBER_HEARTBEAT_PERIOD = Duration.minutes(1)
PROBER_SILENT_MINUTES = 5
# Every log event of every training job: the function keeps only the newest line of each watched job.
ALL_LOG_EVENTS = logs.FilterPattern.all_events()
# Why the log-activity function has reserved concurrency (setting log_activity_concurrency, 50 by default): all the
# functions of an account and region share its concurrency, 1,000 by default, and log lines come in floods that
# trainguard does not control (every host of every job, and in a hub anything a spoke account puts on its bus). A
# function's reserved concurrency is also its ceiling ("Configuring reserved concurrency for a function", Lambda
# Developer Guide), so a flood of log lines, forged or not, takes 50 at most and leaves 950 of the default 1,000 to
# the functions that act (job events, stall alarms, the retry launcher, the quota watch, the prober), which need a
# few each. 50 at about 50 ms a delivery (one ledger read, one write) is about 1,000 deliveries a second. Reserving
# must leave 100 of the account's concurrency unreserved (same page): an account whose quota is below 150 sets 0.
# A throttled delivery waits in Lambda's asynchronous queue and is retried; no job is stopped on a delay, as the
# stall-alarms function reads the job's log itself before it acts.


class StallDetection(FunctionGroup):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        alarm_topic: sns.ITopic,
        subscribe_to_training_logs: bool,
        log_activity_concurrency: int = 0,
    ) -> None:
        holds = "the stall-alarm rule, the probe schedule and the three functions' asynchronous invocations"
        super().__init__(scope, construct_id, alarm_topic=alarm_topic, owner="stall detection", holds=holds)
        self.stall_alarms_function = self.add_function("StallAlarmsFunction", STALL_ALARMS_HANDLER)
        self.stall_alarm_rule = self.add_rule("StallAlarmRule", self.stall_alarms_function, stall_alarm_pattern())
        self._build_prober(alarm_topic)
        self._build_log_activity(subscribe_to_training_logs, log_activity_concurrency)

    def _build_prober(self, alarm_topic: sns.ITopic) -> None:
        """The stall prober, its schedule every minute, and the alarm on its heartbeat."""
        self.stall_prober_function = self.add_function("StallProberFunction", STALL_PROBER_HANDLER)
        self.probe_schedule = self.add_schedule("ProbeSchedule", self.stall_prober_function, PROBE_EVERY_MINUTES)
        self.prober_health_alarm = self._prober_health_alarm(alarm_topic)

    def _build_log_activity(self, subscribe_to_training_logs: bool, concurrency: int) -> None:
        """The log-activity function, at most `concurrency` at once (0: no reservation), and, with
        `subscribe_to_training_logs`, its subscription to SageMaker's training log group (imported by name:
        SageMaker creates it)."""
        self.log_activity_function = self.add_function(
            "LogActivityFunction", LOG_ACTIVITY_HANDLER, reserved_concurrency=concurrency or None
        )
        self.training_log_group = logs.LogGroup.from_log_group_name(self, "TrainingJobLogs", TRAINING_LOG_GROUP_NAME)
        self.training_log_subscription: logs.SubscriptionFilter | None = None
        if subscribe_to_training_logs:
            # LambdaDestination also lets logs.amazonaws.com invoke the function, from this log group only.
            self.training_log_subscription = logs.SubscriptionFilter(
                self,
                "TrainingJobLogsSubscription",
                log_group=self.training_log_group,
                destination=logs_destinations.LambdaDestination(self.log_activity_function),
                filter_pattern=ALL_LOG_EVENTS,
            )

    def _prober_health_alarm(self, topic: sns.ITopic) -> cloudwatch.Alarm:
        """ALARM when the prober has not completed a run for PROBER_SILENT_MINUTES minutes in a row.

        Missing data is breaching here, unlike the stall alarms: a prober that stopped (or never ran)
        publishes nothing, and nothing is exactly what must alarm. The log-silence alarms treat that
        same missing data as not breaching, so no job is stopped for a dead prober; people are told.
        """
        heartbeat = guard_metric(
            PROBER_HEARTBEAT_METRIC, statistic=cloudwatch.Stats.SUM, period=PROBER_HEARTBEAT_PERIOD
        )
        alarm = cloudwatch.Alarm(
            self,
            "ProberHealthAlarm",
            alarm_description=(
                f"trainguard: the stall prober has not completed a run for {PROBER_SILENT_MINUTES} minutes. "
                "Log silence is not being measured, so no stall alarm of log silence can fire (none stops a "
                "job for it); see the prober's log group and its errors alarm."
            ),
            metric=heartbeat,
            threshold=1,
            comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            evaluation_periods=PROBER_SILENT_MINUTES,
            datapoints_to_alarm=PROBER_SILENT_MINUTES,
            treat_missing_data=cloudwatch.TreatMissingData.BREACHING,
        )
        alarm.add_alarm_action(cloudwatch_actions.SnsAction(topic))
        return alarm
