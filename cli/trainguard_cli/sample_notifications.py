"""A sample of every message trainguard sends (each member of trainguard.domain.message_kinds.MessageKind), rendered
by the product's own composers from sample facts put through the domain's own decisions, and marked as a test: what
`trainguard test-notification` publishes.

Only facts are written in this package (a job's description, its checkpoints, its log silence, a quota error:
trainguard_cli.sample_facts); every sentence of a message comes from the product's code, so a change of wording
shows in the test notification too. Where a workflow answers what AWS told it (a quota wall, a user's launch
refused, a launch that waited for its quota), its sentences are in the domain (trainguard.domain.quota_messages,
relaunch_outcomes), which the workflow and these samples both call. Not sampled: the stack's own CloudWatch alarms,
whose messages CloudWatch writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from trainguard.domain.message_kinds import MessageKind
from trainguard.domain.messages import Notification
from trainguard_cli import sample_job_ends as ends
from trainguard_cli import sample_quota_messages as quotas
from trainguard_cli import sample_training as training
from trainguard_cli.sample_facts import SAMPLE_JOB

TEST_MARK = "[trainguard TEST]"
TEST_NOTE = (
    "TEST NOTIFICATION, sent by `trainguard test-notification` to check that trainguard's messages reach you. "
    f"Nothing happened to any training job: {SAMPLE_JOB} is a sample, and so is every figure below."
)
KIND_ATTRIBUTE = "kind"  # the message's kind (MessageKind), so that a subscriber can tell the samples apart

# Each kind, by the name `trainguard test-notification --kind` takes (MessageKind's value), in MessageKind's order.
SAMPLES: dict[MessageKind, Callable[[str, datetime], Notification]] = {
    MessageKind.JOB_RELAUNCHED: ends.relaunched_as_it_was,
    MessageKind.JOB_RELAUNCHED_WITH_PREFERENCES: ends.relaunched_with_preferences,
    MessageKind.JOB_RELAUNCHED_ON_NEXT_TYPE: ends.relaunched_on_next_type,
    MessageKind.JOB_RELAUNCHED_ON_DEMAND: ends.relaunched_on_demand,
    MessageKind.JOB_RELAUNCHED_ON_QUOTA_ROOM: ends.relaunched_on_quota_room,
    MessageKind.JOB_RELAUNCH_SCHEDULED: ends.relaunch_scheduled_after_backoff,
    MessageKind.JOB_NOT_RELAUNCHED: ends.not_relaunched_at_its_limit,
    MessageKind.JOB_QUOTA_WALL: ends.blocked_by_a_quota,
    MessageKind.JOB_NOT_RETRIED: ends.not_retried,
    MessageKind.JOB_LEFT_TO_OWNER: ends.left_to_owner,
    MessageKind.STALL_STOPPED: training.stall_stopped,
    MessageKind.STALL_MUTED: training.stall_muted,
    MessageKind.STALL_STOPPED_FOR_OWNER: training.stall_stopped_for_owner,
    MessageKind.STALL_LEFT_TO_OWNER: training.stall_left_to_owner,
    MessageKind.STALL_DRY_RUN: training.stall_dry_run,
    MessageKind.CHECKPOINT_STALE: training.checkpoint_stale,
    MessageKind.STUCK_STOPPING: training.stuck_stopping,
    MessageKind.SLOWDOWN_FOUND: training.slowdown_found,
    MessageKind.DIVERGENCE_FOUND: training.divergence_found,
    MessageKind.SLOWDOWN_STOPPED: training.slowdown_stopped,
    MessageKind.DIVERGENCE_STOPPED: training.divergence_stopped,
    MessageKind.GPUS_NOT_WATCHED: training.gpus_not_watched,
    MessageKind.WATCH_TAGS_NOT_READ: training.watch_tags_not_read,
    MessageKind.QUOTA_REQUEST_APPROVED: quotas.quota_request_approved,
    MessageKind.QUOTA_REQUEST_NOT_APPROVED: quotas.quota_request_not_approved,
    MessageKind.WAITING_LAUNCH_LAUNCHED: quotas.waiting_launch_launched,
    MessageKind.WAITING_LAUNCH_GIVEN_UP: quotas.waiting_launch_given_up,
    MessageKind.LAUNCH_BLOCKED_BY_QUOTA: quotas.launch_blocked_by_quota,
    MessageKind.LAUNCH_REFUSED: quotas.launch_refused,
    MessageKind.LAUNCH_LEFT_TO_OWNER: quotas.launch_left_to_owner,
}


def marked_as_test(notification: Notification) -> Notification:
    """The notification with the test mark first in its subject and body, the attribute `test` = true (a
    subscription's filter policy can leave tests out) and its kind as the attribute `kind`."""
    subject = notification.subject.replace("[trainguard]", TEST_MARK, 1)
    kind = {KIND_ATTRIBUTE: notification.kind.value} if notification.kind is not None else {}
    attributes = {**notification.attributes, **kind, "test": "true"}
    return replace(notification, subject=subject, body=f"{TEST_NOTE}\n\n{notification.body}", attributes=attributes)


def sample_notifications(
    region: str, now: datetime, kinds: list[MessageKind] | None = None
) -> dict[MessageKind, Notification]:
    """Each of `kinds` (default: every kind that has a sample), as trainguard would send it about the sample job at
    `now`, marked as a test."""
    return {kind: marked_as_test(SAMPLES[kind](region, now)) for kind in (kinds or list(SAMPLES))}
