"""What trainguard would do with one job or one failure text, offline: the logic the handlers use."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from trainguard.domain.checkpoints import CheckpointState
from trainguard.domain.classification import classify_text
from trainguard.domain.cloudtrail_launch import rebuild_create_request
from trainguard.domain.fallback_options import LaunchBounds, read_fallback_options, within_bounds
from trainguard.domain.job_end import RelaunchPlan, RelaunchSettings, assess_job_end, plan_relaunch
from trainguard.domain.lineage import lineage_start
from trainguard.domain.model import Decision, TextSource, TrainingJob, instances_of
from trainguard.domain.ownership import STOP_SETTING, decide_for_owned_job, find_parent
from trainguard.domain.policy import JobPolicy, PolicyDefaults, TagKeys, read_job_policy
from trainguard.domain.progress_settings import ProgressSettings, read_progress_settings
from trainguard.domain.quotas import (
    NoQuotaRequest,
    launch_demand,
    plan_quota_request,
    read_quota_error,
)
from trainguard.domain.request_builder import RelaunchImpossible
from trainguard.domain.stalls import StallSignal, StallThresholds, grace_reason, parse_alarm_name, read_stall_thresholds
from trainguard.domain.wording import format_value
from trainguard.events.alarm_state_change import AlarmStateChange
from trainguard.events.cloudtrail import FailedLaunch

OFFLINE_CHECKPOINT_NOTE = "not listed offline"


def explain_reason(
    text: str, source: TextSource, *, quota_ceiling: float = 64, instance_count: int | None = None
) -> dict[str, Any]:
    """What trainguard decides from `text`, read as the handlers read text from `source`: a job's FailureReason
    (TextSource.SAGEMAKER, the script's words capped) or an error an AWS API returned (TextSource.API_ERROR, the
    only text a quota request is sized from)."""
    reading = classify_text(text, source)
    answer = _answer(reading.category.value, reading.decision.value, reading.reason)
    answer["words_written_by"] = reading.source.value
    if reading.decision is Decision.QUOTA:
        answer["quota_request"] = offline_quota_request(text, quota_ceiling, instance_count)
    return answer


def offline_quota_request(
    text: str, ceiling: float, instance_count: int | None, request: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """The increase trainguard would ask for, sized from the message and, when known, the launch's own request
    (which must be the quota's: domain/quotas.launch_demand). Offline, the quota's current value is taken to be the
    limit the message states."""
    read = read_quota_error(text)
    demand = launch_demand(read, request) if read is not None and request is not None else read
    if demand is None:
        return None
    if isinstance(demand, NoQuotaRequest):
        return {"quota_name": read.quota_name if read else "", "desired_value": None, "reason": demand.reason}
    plan = plan_quota_request(
        demand, current_value=None, launch_instance_count=instance_count, ceilings={}, default_ceiling=ceiling
    )
    if isinstance(plan, NoQuotaRequest):
        return {"quota_name": demand.quota_name, "desired_value": None, "ceiling_applied": False, "reason": plan.reason}
    return plan.as_dict()


def explain_job(
    job: TrainingJob,
    *,
    defaults: PolicyDefaults,
    keys: TagKeys,
    settings: RelaunchSettings,
    create_request_shape: dict[str, Any],
    now: datetime,
) -> dict[str, Any]:
    policy = read_job_policy(job.tags, defaults, keys)
    assessment = assess_job_end(job, policy)
    answer = _answer(assessment.classification.category.value, assessment.decision.value, assessment.reason)
    answer["job_name"] = job.name
    answer["opted_in"] = assessment.opted_in
    answer["tag_problems"] = job_tag_problems(job, policy, keys)
    if assessment.owner:
        answer["owner"] = assessment.owner
        return answer
    answer["words_written_by"] = assessment.classification.source.value
    if assessment.decision is not Decision.RETRY:
        return answer
    if not job.is_terminal:
        answer.update(decision=Decision.IGNORE.value, reason=f"the job is {job.status}; nothing to do yet")
        return answer
    # Offline, the checkpoint prefix cannot be listed: a configured prefix counts as "may hold one".
    checkpoint = CheckpointState(job.checkpoint_s3_uri, listing_error=OFFLINE_CHECKPOINT_NOTE)
    # Offline, a relaunch's root cannot be described: its fallbacks are then measured against nothing (none).
    start = lineage_start(job, keys, root=None)
    plan = plan_relaunch(
        job, assessment, policy, checkpoint, settings, keys, create_request_shape, now, lineage_start=start
    )
    options = read_fallback_options(job.tags, keys)
    bounds = LaunchBounds(settings.launchable_instance_types, start)
    answer["fallbacks_not_followed"] = list(within_bounds(options, job.description, bounds).not_followed)
    if isinstance(plan, RelaunchPlan):
        answer["create_training_job_request"] = plan.request
        answer["new_job_name"] = plan.new_job_name
        answer["delay_minutes"] = int(plan.delay.total_seconds() // 60)
        answer["dropped_fields"] = list(plan.dropped_fields)
    else:
        answer["decision"] = Decision.NOTIFY.value
        answer["reason"] = f"{assessment.reason} Not relaunched: {plan.reason}"
        answer["would_be_job_name"] = plan.would_be_job_name
    return answer


def job_tag_problems(job: TrainingJob, policy: JobPolicy, keys: TagKeys) -> list[str]:
    """Every tag of the job that trainguard cannot read, each with why and the value it uses instead: its policy's
    (told with the job's end), its stall watch's and its progress rules' (told once when the watch starts). Offline,
    the fallbacks are the code's defaults; a deployment's own (settings stall_minutes, progress_interval_factor, ...)
    may differ."""
    watch = read_stall_thresholds(job.tags, StallThresholds(), keys).problems
    progress = read_progress_settings(job.tags, ProgressSettings(), keys).problems
    return [problem.describe() for problem in (*policy.problems, *watch, *progress)]


def explain_failed_launch(
    launch: FailedLaunch,
    *,
    defaults: PolicyDefaults,
    keys: TagKeys,
    create_request_shape: dict[str, Any],
    quota_ceiling: float = 64,
) -> dict[str, Any]:
    """What trainguard does with the CloudTrail record of a refused CreateTrainingJob (the quota path), offline:
    the quota it would ask for, sized from the message and the request, and the request it would send once the
    quota allows. Offline, the quota's current value is taken to be the limit the message states."""
    reading = classify_text(f"{launch.error_code}: {launch.error_message}", TextSource.API_ERROR)
    answer = _answer(reading.category.value, reading.decision.value, reading.reason)
    policy = read_job_policy(launch.tags, defaults, keys)
    answer.update(job_name=launch.job_name, opted_in=policy.enabled, error_code=launch.error_code)
    answer["tag_problems"] = [p.describe() for p in policy.problems]
    if not policy.enabled:
        answer.update(decision=Decision.IGNORE.value, reason=f"not opted in: {policy.why_not_enabled}")
        return answer
    parent = find_parent(job_name=launch.job_name, description={}, tags=launch.tags, caller_arn=launch.requester_arn)
    if parent is not None:
        decision, reason = decide_for_owned_job(reading, parent)
        answer.update(decision=decision.value, reason=reason, owner=parent.describe())
        return answer
    try:
        rebuilt = rebuild_create_request(launch.request_parameters, create_request_shape)
    except RelaunchImpossible as err:
        answer["notes"] = [f"the request cannot be rebuilt from the record: {err}"]
        rebuilt = None
    if reading.decision is Decision.QUOTA:
        count = instances_of(rebuilt.request.get("ResourceConfig"))[1] if rebuilt else 0
        answer["quota_request"] = offline_quota_request(
            launch.error_message, quota_ceiling, count or None, rebuilt.request if rebuilt else None
        )
    if rebuilt is not None:
        answer["create_training_job_request"] = rebuilt.request
        answer["dropped_fields"] = list(rebuilt.dropped)
        if rebuilt.refusal_reason:
            answer["notes"] = [f"trainguard would not launch it itself: {rebuilt.refusal_reason}"]
    return answer


def _answer(category: str, decision: str, reason: str) -> dict[str, Any]:
    return {
        "category": category,
        "decision": decision,
        "reason": reason,
        "create_training_job_request": None,
        "quota_request": None,  # filled by the quota issue
    }


def explain_stall_alarm(
    change: AlarmStateChange, job: TrainingJob | None, *, defaults: PolicyDefaults, keys: TagKeys, now: datetime
) -> dict[str, Any]:
    """What trainguard does with a CloudWatch Alarm State Change, offline. The verdict itself needs fresh
    evidence (the newest log line, the GPU figures), which only the deployed handler reads; this says what
    it would check, and what stops it from acting."""
    parsed = parse_alarm_name(change.alarm_name)
    if parsed is None:
        return _answer("unknown", Decision.IGNORE.value, f"alarm {change.alarm_name} is not a trainguard stall alarm")
    signal, job_name = parsed
    answer = _answer("stall", Decision.IGNORE.value, "")
    answer.update(job_name=job_name, signal=signal.value, alarm_state=change.state)
    if change.state != "ALARM":
        answer["reason"] = f"the alarm moved to {change.state}; trainguard acts only on ALARM"
        return answer
    if job is None:
        answer["decision"] = "stop"
        answer["reason"] = (
            f"trainguard would describe {job_name} again and, if it is InProgress, opted in, past its startup "
            f"grace and still {signal.value.replace('-', ' ')} on fresh evidence, stop it and relaunch it from its "
            "checkpoint once it has stopped. Pass --describe-job (and --tags) to check the job's state and tags."
        )
        return answer
    policy = read_job_policy(job.tags, defaults, keys)
    thresholds = read_stall_thresholds(job.tags, StallThresholds(), keys)
    not_now = grace_reason(job, thresholds, now) if policy.enabled else f"not opted in: {policy.why_not_enabled}"
    if not_now:
        answer["reason"] = f"no stop: {not_now}"
        return answer
    answer["decision"] = "stop" if policy.allows("stop") else Decision.NOTIFY.value
    needed = (
        f"no new log line for longer than the job's own limit ({thresholds.stall_minutes} min until its log "
        "rhythm is known; `trainguard status` shows the limit it has now)"
        if signal is StallSignal.LOG_SILENCE
        else f"every GPU at or below {thresholds.gpu_idle_percent}% and no log line for "
        f"{thresholds.gpu_idle_minutes} min"
    )
    action = "stop it, then relaunch it from its checkpoint" if policy.allows("stop") else "tell you (dry run)"
    if (parent := find_parent(job_name=job.name, description=job.description, tags=job.tags)) is not None:
        answer["owner"] = parent.describe()
        if policy.allows("stop"):
            action = (
                f"stop it and never relaunch it: {parent.kind.name} decides what follows. With the setting "
                f"{STOP_SETTING} off, it would only tell you"
            )
    answer["reason"] = f"if the fresh evidence still shows {needed}, trainguard would {action}"
    answer["thresholds"] = {k: v for k, v in vars(thresholds).items() if k != "problems"}
    return answer


_WOULD = {
    Decision.RETRY.value: "relaunch it from its last checkpoint",
    Decision.QUOTA.value: "ask for a quota increase, then launch it",
    Decision.NOTIFY.value: "tell you, and do nothing else",
    Decision.IGNORE.value: "do nothing",
    Decision.STOP.value: "stop it",
}
_WRITTEN_BY = {
    TextSource.API_ERROR.value: "an AWS API's error",
    TextSource.SAGEMAKER.value: "SageMaker",
    TextSource.TRAINING_SCRIPT.value: "the training script (its words buy at most a relaunch of the same shape)",
}


def explain_text(answer: dict[str, Any]) -> str:
    """The answer for a person: what trainguard would do and why first, then the details (--json has them all)."""
    subject = answer.get("job_name") or "This failure"
    lines = [f"{subject}: trainguard would {_WOULD.get(answer['decision'], answer['decision'])}.", ""]
    lines.append(f"Why: {answer['reason']}" if answer["reason"] else "Why: no reason given")
    lines.append(f"Reading: {answer['category']}")
    if written_by := answer.get("words_written_by"):
        lines.append(f"Words written by: {_WRITTEN_BY.get(written_by, written_by)}")
    if "opted_in" in answer:
        lines.append(f"Opted in: {'yes' if answer['opted_in'] else 'no'}")
    if owner := answer.get("owner"):
        lines.append(f"Owned by: {owner}")
    lines += [f"Tag problem: {problem}" for problem in answer.get("tag_problems", [])]
    if quota := answer.get("quota_request"):
        wanted = "nothing" if quota.get("desired_value") is None else format_value(quota["desired_value"])
        lines.append(f"Quota request: '{quota['quota_name']}' = {wanted}: {quota['reason']}")
    if new_job := answer.get("new_job_name"):
        lines.append(f"Relaunch: {new_job}, in {answer.get('delay_minutes', 0)} min")
    if request := answer.get("create_training_job_request"):
        lines.append(f"CreateTrainingJob request: {len(request)} fields (--json prints it)")
    if dropped := answer.get("dropped_fields"):
        lines.append(f"Fields left out of it: {', '.join(dropped)}")
    if not_followed := answer.get("fallbacks_not_followed"):
        lines.append(f"Fallbacks not followed: {'; '.join(not_followed)}")
    lines += [f"Note: {note}" for note in answer.get("notes", [])]
    return "\n".join(lines)
