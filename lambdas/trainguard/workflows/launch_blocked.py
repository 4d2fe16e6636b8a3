"""A user's CreateTrainingJob failed on a quota (seen through CloudTrail): request the increase, and
launch it when the quota allows. No job exists, so there is nothing to describe: the request is
rebuilt from the CloudTrail record's requestParameters."""

from __future__ import annotations

from trainguard.domain.classification import classify_text
from trainguard.domain.cloudtrail_launch import rebuild_create_request
from trainguard.domain.fallback_options import types_outside
from trainguard.domain.model import Category, Decision, TextSource
from trainguard.domain.outcome import Outcome, OutcomeKind, skipped
from trainguard.domain.ownership import Parent, decide_for_owned_job, find_parent, trainguard_mark
from trainguard.domain.policy import JobPolicy, read_job_policy
from trainguard.domain.quota_messages import (
    compose_blocked_launch_notification,
    compose_launch_left_to_owner_notification,
)
from trainguard.domain.request_builder import RelaunchImpossible
from trainguard.events.cloudtrail import FailedLaunch
from trainguard.workflows.function_ports import FailedLaunchesPorts
from trainguard.workflows.once import once
from trainguard.workflows.quota_wall import BlockedLaunch, meet_quota_wall


def handle_blocked_launch(ports: FailedLaunchesPorts, launch: FailedLaunch) -> Outcome:
    now = ports.clock()
    policy = read_job_policy(launch.tags, ports.config.policy_defaults, ports.keys)
    if not policy.enabled:
        return skipped(launch.job_name, f"not opted in: {policy.why_not_enabled}")
    if mark := trainguard_mark(launch.tags, ports.keys):
        # Its wall is met where trainguard made it (a relaunch, a waiting launch, an alternative tried while a quota
        # is short): CloudTrail's copy of the refusal must not file a second request, or one for an alternative.
        return skipped(
            launch.job_name, f"trainguard's own launch (tag {mark}): its quota wall is handled where it was made"
        )
    with once(ports, launch.job_name, f"blocked-launch#{launch.event_id}", now) as step:
        if step.done:
            return Outcome(
                OutcomeKind.ALREADY_HANDLED, launch.job_name, "already handled", Decision.QUOTA, Category.QUOTA
            )
        return step.record(_act(ports, launch, policy))


def _act(ports: FailedLaunchesPorts, launch: FailedLaunch, policy: JobPolicy) -> Outcome:
    """Leave a parent's launch to its parent; meet anyone else's wall, and tell."""
    parent = find_parent(job_name=launch.job_name, description={}, tags=launch.tags, caller_arn=launch.requester_arn)
    if parent is not None:
        return _left_to_parent(ports, launch, parent)
    wall = meet_quota_wall(ports, _blocked_launch(ports, launch), policy)
    kind = OutcomeKind.QUOTA_WALL if wall.is_quota else OutcomeKind.NOTIFIED
    outcome = Outcome(
        kind,
        launch.job_name,
        wall.summary,
        Decision.QUOTA if wall.is_quota else Decision.NOTIFY,
        Category.QUOTA if wall.is_quota else Category.CONFIG,
        "",
        {"quota_summary": wall.summary, "quota_request": wall.quota_request},
    )
    ports.notifier.publish(
        compose_blocked_launch_notification(
            launch.job_name, launch.error_code, launch.error_message, wall, ports.region, ports.clock()
        )
    )
    return outcome


def _left_to_parent(ports: FailedLaunchesPorts, launch: FailedLaunch, parent: Parent) -> Outcome:
    """A parent's launch hit the wall: no quota request and no launch later; the owner is told (at most)."""
    reading = classify_text(f"{launch.error_code}: {launch.error_message}", TextSource.API_ERROR)
    decision, reason = decide_for_owned_job(reading, parent)
    kind = OutcomeKind.NOTIFIED if decision is Decision.NOTIFY else OutcomeKind.SKIPPED
    outcome = Outcome(kind, launch.job_name, reason, decision, reading.category, "", {"owner": parent.describe()})
    if kind is OutcomeKind.NOTIFIED:
        ports.notifier.publish(
            compose_launch_left_to_owner_notification(
                launch.job_name,
                launch.error_code,
                launch.error_message,
                parent.describe(),
                reason,
                ports.region,
                ports.clock(),
            )
        )
    return outcome


def _blocked_launch(ports: FailedLaunchesPorts, launch: FailedLaunch) -> BlockedLaunch:
    try:
        rebuilt = rebuild_create_request(launch.request_parameters, ports.create_request_shape)
    except RelaunchImpossible as err:
        return BlockedLaunch(
            job_name=launch.job_name,
            request={},
            origin="user-launch",
            blocked_job=launch.job_name,
            error_text=launch.error_message,
            not_launchable=f"its request cannot be rebuilt from CloudTrail's record: {err}",
        )
    request = dict(rebuilt.request)
    tags = [t for t in request.get("Tags", []) if t.get("Key") != ports.keys.blocked_launch]
    request["Tags"] = [*tags, {"Key": ports.keys.blocked_launch, "Value": launch.job_name}]
    problem = ""
    broken = [entry for entry in rebuilt.dropped if ": " in entry]  # a value of the wrong type, a gap
    if rebuilt.redacted:
        problem = f"CloudTrail hid {', '.join(rebuilt.redacted)}, so the request cannot be rebuilt exactly"
    elif broken:
        problem = f"the recorded request does not fit the API ({'; '.join(broken)[:300]})"
    elif outside := types_outside(request.get("ResourceConfig"), ports.config.launchable_instance_types):
        problem = f"its instance type {outside} is not one trainguard may launch (setting launchable_instance_types)"
    elif request.get("RoleArn") not in ports.config.passable_role_arns:
        problem = f"its role {request.get('RoleArn')} is not one trainguard may pass (setting passable_role_arns)"
    elif "TrainingJobName" not in request:
        problem = "the recorded request has no TrainingJobName"
    return BlockedLaunch(
        job_name=launch.job_name,
        request=request,
        origin="user-launch",
        blocked_job=launch.job_name,
        error_text=launch.error_message,
        not_launchable=problem,
    )
