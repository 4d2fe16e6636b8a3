"""Every kind of message trainguard sends, one name each: the composers (trainguard.domain.messages) tag each
notification with its kind, and tests/unit/test_message_rules.py renders a sample of every member and checks the
rules a message read at 3 a.m. keeps (docs/operations.md, "How messages are written").

A new kind of message is a new member here, or the rules test has no sample of it and fails.
"""

from __future__ import annotations

from enum import StrEnum


class MessageKind(StrEnum):
    # A training job ended (messages.compose_job_end_notification).
    JOB_RELAUNCHED = "job-relaunched"
    JOB_RELAUNCHED_WITH_PREFERENCES = "job-relaunched-with-instance-preferences"  # capacity: alternatives listed
    JOB_RELAUNCHED_ON_NEXT_TYPE = "job-relaunched-on-next-instance-type"  # spot: the next alternative
    JOB_RELAUNCHED_ON_DEMAND = "job-relaunched-on-demand"  # spot dropped after the tag's spot failures
    JOB_RELAUNCHED_ON_QUOTA_ROOM = "job-relaunched-on-quota-room"  # an alternative while the increase is pending
    JOB_RELAUNCH_SCHEDULED = "job-relaunch-scheduled"
    JOB_NOT_RELAUNCHED = "job-not-relaunched"
    JOB_QUOTA_WALL = "job-quota-wall"
    JOB_NOT_RETRIED = "job-not-retried"
    JOB_LEFT_TO_OWNER = "job-left-to-owner"
    # A verified stall (messages.compose_stall_notification).
    STALL_STOPPED = "stall-stopped"
    STALL_STOPPED_FOR_OWNER = "stall-stopped-for-owner"  # a parent's job: stopped, never relaunched
    STALL_MUTED = "stall-muted"
    STALL_LEFT_TO_OWNER = "stall-left-to-owner"
    STALL_DRY_RUN = "stall-dry-run"
    # Told once by the prober, nothing done (messages.compose_prober_notice).
    CHECKPOINT_STALE = "checkpoint-stale"
    STUCK_STOPPING = "stuck-stopping"
    # What the job's own step lines show, told once by the prober (finding_messages.compose_finding_notice).
    SLOWDOWN_FOUND = "slowdown-found"
    DIVERGENCE_FOUND = "divergence-found"
    SLOWDOWN_STOPPED = "slowdown-stopped"  # with the owner's leave: stopped, to be relaunched on new instances
    DIVERGENCE_STOPPED = "divergence-stopped"  # with the owner's leave: stopped, not relaunched
    # A guarded job that trainguard can watch only in part (watch_messages.compose_partly_watched_notice).
    GPUS_NOT_WATCHED = "gpus-not-watched"
    # A guarded job watched with defaults in place of stall or progress tags it could not read
    # (watch_messages.compose_unread_tags_notice).
    WATCH_TAGS_NOT_READ = "watch-tags-not-read"
    # Quotas (messages.compose_quota_request_closed_notification, compose_waiting_launch_notification).
    QUOTA_REQUEST_APPROVED = "quota-request-approved"
    QUOTA_REQUEST_NOT_APPROVED = "quota-request-not-approved"  # denied, not approved, case closed, invalid
    WAITING_LAUNCH_LAUNCHED = "waiting-launch-launched"
    WAITING_LAUNCH_GIVEN_UP = "waiting-launch-given-up"
    # A user's CreateTrainingJob refused (workflows/launch_blocked.py, through messages.compose_notification).
    LAUNCH_BLOCKED_BY_QUOTA = "launch-blocked-by-quota"
    LAUNCH_REFUSED = "launch-refused"
    LAUNCH_LEFT_TO_OWNER = "launch-left-to-owner"
