"""Jobs another service launched: never relaunched or given a quota request; a verified hang is stopped, once,
and its end relaunches nothing (issue 27), unless the setting stop_stalled_parent_jobs is off.

One case per parent kind, each opted in by tag (tags propagate from the parent), through the job-end,
stall and failed-launch workflows with in-memory ports; the ledger records why, the owner is told at most.
"""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest

from tests.cloudtrail_events import envelope_from_record
from tests.conftest import load_fixture
from tests.fakes import NOW, ROLE, FakePorts, described_job, fake_ports
from trainguard.domain.classification import classify_failure_reason
from trainguard.domain.message_kinds import MessageKind
from trainguard.domain.model import Decision
from trainguard.domain.outcome import OutcomeKind
from trainguard.domain.ownership import PARENT_KINDS, decide_for_owned_job, find_parent
from trainguard.domain.stalls import StallSignal, alarm_name
from trainguard.events.alarm_state_change import AlarmStateChange
from trainguard.handlers import failed_launches
from trainguard.workflows.job_ended import handle_job_end
from trainguard.workflows.stall_alarm import handle_stall_alarm
from trainguard.workflows.stall_watch import follow_training_state

OPTED_IN = {"trainguard:enabled": "true"}
INTERNAL = "InternalServerError: We encountered an internal error. Please try again."
CAPACITY = (
    "CapacityError: Unable to provision requested ML compute capacity. Please retry using a different ML instance type."
)
ACCOUNT = "123456789012"

# (parent, job name, description fields, tags, whether the owner is told of a failure trainguard would retry)
PARENT_CASES: list[tuple[str, str, dict[str, Any], dict[str, str], bool]] = [
    (
        "tuning",
        "sweep-017-a1b2c3d4",
        {"TuningJobArn": f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:hyper-parameter-tuning-job/sweep"},
        {},
        False,
    ),
    (
        "automl",
        "automl-cand-0042",
        {"AutoMLJobArn": f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:automl-job/churn"},
        {},
        False,
    ),
    (
        "labeling",
        "labeling-train-7",
        {"LabelingJobArn": f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:labeling-job/cats"},
        {},
        False,
    ),
    (
        "pipelines",
        "pipelines-x7k2-TrainStep-9aQ",
        {},
        {"sagemaker:pipeline-execution-arn": f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:pipeline/p/execution/x7k2"},
        True,
    ),
    ("pipelines step tag", "pipelines-x7k2-TrainStep-9aQ", {}, {"sagemaker:pipeline-step-name": "TrainStep"}, True),
    ("batch", "AWSBatchllama-pretrain88b610a69aa8380ca5b0a7aba3f81cb8", {}, {}, True),
    (
        "step functions",
        "sfn-train-1",
        {},
        {"AWS_STEP_FUNCTIONS_EXECUTION_ARN": f"arn:aws:states:us-east-1:{ACCOUNT}:execution:ml:run-1"},
        True,
    ),
    ("step functions managed tag", "sfn-train-2", {}, {"MANAGED_BY_AWS": "STARTED_BY_STEP_FUNCTIONS"}, True),
]
CASE_IDS = [case[0] for case in PARENT_CASES]


def parent_job(name: str, fields: dict[str, Any], **job: Any) -> dict[str, Any]:
    description = described_job(name, **job)
    description.update(fields)
    return description


@pytest.mark.parametrize("kind, name, fields, tags, told", PARENT_CASES, ids=CASE_IDS)
def test_a_parents_failed_job_is_never_relaunched_and_the_ledger_says_why(
    kind: str, name: str, fields: dict[str, Any], tags: dict[str, str], told: bool
) -> None:
    ports = fake_ports()
    ports.jobs.add(parent_job(name, fields, reason=INTERNAL), {**OPTED_IN, **tags})
    outcome = handle_job_end(ports, name)
    assert ports.jobs.created == [] and ports.scheduler.schedules == {} and ports.quotas.requests == []
    parent = find_parent(job_name=name, description=fields, tags=tags)
    assert parent is not None
    assert parent.kind.name in outcome.reason and parent.kind.own_retry in outcome.reason
    recorded = ports.ledger.begin_step(name, "end", NOW).recorded
    assert recorded["details"]["owner"] == parent.describe() and recorded["reason"] == outcome.reason
    if told:
        assert outcome.kind is OutcomeKind.NOTIFIED and outcome.decision == "notify"
        [message] = ports.notifier.sent
        assert "left to its owner" in message.subject
        assert f"Nothing: the job belongs to {parent.describe()}" in message.body
        assert parent.kind.own_retry in message.body
    else:
        assert outcome.kind is OutcomeKind.SKIPPED and outcome.decision == "ignore"
        assert ports.notifier.sent == []


def test_a_parents_failure_that_is_the_users_own_is_only_recorded() -> None:
    ports = fake_ports()
    tags = {**OPTED_IN, "sagemaker:pipeline-execution-arn": "arn:aws:sagemaker:us-east-1:1:pipeline/p/execution/e"}
    ports.jobs.add(described_job("step-job", reason="AlgorithmError: Exit Code: 1"), tags)
    outcome = handle_job_end(ports, "step-job")
    assert outcome.kind is OutcomeKind.SKIPPED and "reports on its own jobs" in outcome.reason
    assert ports.notifier.sent == [] and ports.jobs.created == []


def test_batch_retries_capacity_errors_itself_so_nobody_is_told() -> None:
    ports = fake_ports()
    name = "AWSBatchllama-pretrain88b610a69aa8380ca5b0a7aba3f81cb8"
    ports.jobs.add(described_job(name, reason=CAPACITY), OPTED_IN)
    outcome = handle_job_end(ports, name)
    assert outcome.kind is OutcomeKind.SKIPPED and "retries capacity failures by itself" in outcome.reason
    assert ports.notifier.sent == [] and ports.jobs.created == [] and ports.scheduler.schedules == {}


def hung(ports: FakePorts, name: str, fields: dict[str, Any], tags: dict[str, str]) -> AlarmStateChange:
    """The parent's job, opted in by its tags, training for 2 hours and silent for 1: its log-silence alarm fires."""
    description = parent_job(name, fields, status="InProgress", secondary="Training")
    description["TrainingStartTime"] = NOW - timedelta(hours=2)
    ports.jobs.add(description, {**OPTED_IN, **tags})
    follow_training_state(ports, name)
    ports.job_logs.newest = NOW - timedelta(hours=1)
    return AlarmStateChange("evt-1", alarm_name(StallSignal.LOG_SILENCE, name), "ALARM", "OK", "Threshold", NOW)


def stopped_now(ports: FakePorts, name: str, fields: dict[str, Any], tags: dict[str, str]) -> None:
    """The job's Stopped event: SageMaker has finished the stop trainguard asked for."""
    ports.jobs.add(parent_job(name, fields, status="Stopped", secondary="Stopped"), {**OPTED_IN, **tags})


@pytest.mark.parametrize("kind, name, fields, tags, told", PARENT_CASES, ids=CASE_IDS)
def test_a_parents_hung_job_is_stopped_once_told_and_never_relaunched(
    kind: str, name: str, fields: dict[str, Any], tags: dict[str, str], told: bool
) -> None:
    ports = fake_ports()
    outcome = handle_stall_alarm(ports, hung(ports, name, fields, tags))
    parent = find_parent(job_name=name, description=fields, tags=tags)
    assert parent is not None
    assert outcome.kind is OutcomeKind.STALL_STOPPED and outcome.decision == "stop" and ports.jobs.stops == [name]
    assert "which decides what follows: trainguard never relaunches it" in outcome.reason
    # The stop is told to every parent's owner, those whose ends are only recorded too (tells_owner False): a stop
    # destroys work the owner may look for (docs/decisions.md).
    [message] = ports.notifier.sent
    assert message.kind == MessageKind.STALL_STOPPED_FOR_OWNER
    assert "parent decides what follows" in message.subject
    body = " ".join(message.body.split())
    assert "Stopped it (StopTrainingJob). It is not relaunched: its parent decides." in body
    assert f"The job belongs to {parent.describe()}, which decides what follows" in body
    assert parent.kind.after_stop in body
    # The stall record is there, so the Stopped event reads as trainguard's stop; and it relaunches nothing.
    assert ports.stall_ledger.stall_record(name) is not None
    stopped_now(ports, name, fields, tags)
    ended = handle_job_end(ports, name)
    assert ended.kind is OutcomeKind.SKIPPED and ended.decision == "ignore" and ended.category == "stall"
    assert "No relaunch" in ended.reason and "decides what follows" in ended.reason
    assert ports.jobs.created == [] and ports.scheduler.schedules == {} and ports.quotas.requests == []
    assert len(ports.notifier.sent) == 1  # the stop's message said it all
    recorded = ports.ledger.begin_step(name, "end", NOW).recorded
    assert recorded["details"]["owner"] == parent.describe() and recorded["reason"] == ended.reason
    assert handle_job_end(ports, name).kind is OutcomeKind.SKIPPED and ports.jobs.created == []


def test_a_redelivered_alarm_does_not_stop_a_parents_job_twice() -> None:
    ports = fake_ports()
    _, name, fields, tags, _ = PARENT_CASES[3]  # pipelines
    change = hung(ports, name, fields, tags)
    assert handle_stall_alarm(ports, change).kind is OutcomeKind.STALL_STOPPED
    hung(ports, name, fields, tags)  # a duplicate that still sees InProgress (describe lags the stop)
    assert handle_stall_alarm(ports, change).kind is OutcomeKind.ALREADY_HANDLED
    assert ports.jobs.stops == [name] and len(ports.notifier.sent) == 1


@pytest.mark.parametrize("kind, name, fields, tags, told", PARENT_CASES, ids=CASE_IDS)
def test_with_the_setting_off_a_parents_hung_job_is_told_never_stopped(
    kind: str, name: str, fields: dict[str, Any], tags: dict[str, str], told: bool
) -> None:
    ports = fake_ports(stop_stalled_parent_jobs=False)
    outcome = handle_stall_alarm(ports, hung(ports, name, fields, tags))
    assert outcome.kind is OutcomeKind.STALL_FOUND and outcome.decision == "notify" and ports.jobs.stops == []
    assert "stop_stalled_parent_jobs is off" in outcome.reason
    # No stall record: its Stopped event, if any, is not trainguard's.
    assert ports.stall_ledger.stall_record(name) is None
    [message] = ports.notifier.sent
    assert message.kind == MessageKind.STALL_LEFT_TO_OWNER
    assert "left to its owner" in message.subject and "stop it there" in message.body


def test_a_parents_hung_job_in_dry_run_is_told_what_would_be_done() -> None:
    ports = fake_ports()
    _, name, fields, tags, _ = PARENT_CASES[5]  # batch
    outcome = handle_stall_alarm(ports, hung(ports, name, fields, {**tags, "trainguard:actions": "notify"}))
    assert outcome.kind is OutcomeKind.STALL_FOUND and ports.jobs.stops == []
    assert "dry run: trainguard would stop it" in outcome.reason and "which decides what follows" in outcome.reason
    [message] = ports.notifier.sent
    assert message.kind == MessageKind.STALL_DRY_RUN


def blocked_parent_launch(tags: list[dict[str, str]], **identity: Any) -> dict[str, Any]:
    record = copy.deepcopy(load_fixture("events/cloudtrail_record.create_training_job.medzen_sanitized_real.json"))
    record["requestParameters"]["roleArn"] = ROLE
    record["requestParameters"]["tags"] = [{"key": "trainguard:enabled", "value": "true"}, *tags]
    record["userIdentity"].update(identity)
    message = (
        "The account-level service limit 'ml.p4d.24xlarge for training job usage' is 0 Instances, with current "
        "utilization of 0 Instances and a request delta of 2 Instances. Please use AWS Service Quotas to request "
        "an increase for this quota."
    )
    return envelope_from_record(record, "ResourceLimitExceeded", message)


def test_a_pipelines_launch_at_a_quota_wall_gets_no_request_and_no_launch() -> None:
    ports = fake_ports()
    tags = [
        {"key": "sagemaker:pipeline-execution-arn", "value": "arn:aws:sagemaker:us-east-1:1:pipeline/p/execution/e"}
    ]
    outcome = failed_launches.handle(blocked_parent_launch(tags), ports)
    assert outcome.kind is OutcomeKind.NOTIFIED and "SageMaker Pipelines" in outcome.reason
    assert ports.quotas.requests == [] and ports.quota_ledger.waiting() == []
    [message] = ports.notifier.sent
    assert "left to its owner" in message.subject and "SageMaker.RESOURCE_LIMIT" in message.body
    assert failed_launches.handle(blocked_parent_launch(tags), ports).kind is OutcomeKind.ALREADY_HANDLED


def test_a_launch_by_batchs_service_linked_role_is_left_to_batch() -> None:
    ports = fake_ports()
    role = f"arn:aws:sts::{ACCOUNT}:assumed-role/AWSServiceRoleForAWSBatchWithSagemaker/batch-session"
    outcome = failed_launches.handle(blocked_parent_launch([], arn=role), ports)
    assert "AWS Batch" in outcome.reason and ports.quotas.requests == [] and ports.quota_ledger.waiting() == []


@pytest.mark.parametrize("parent", PARENT_KINDS, ids=lambda p: p.name)
def test_every_parent_names_its_source_and_its_own_retry(parent: Any) -> None:
    assert parent.source and parent.own_retry
    assert parent.description_fields or parent.tag_keys or parent.tag_values or parent.name_prefixes


def test_a_job_without_a_marker_has_no_parent() -> None:
    tags = {"trainguard:enabled": "true", "sagemaker:domain-arn": "x", "pipeline": "nightly"}
    assert find_parent(job_name="nightly-pipeline-train", description=described_job(), tags=tags) is None
    assert find_parent(job_name="awsbatch-lowercase", description={"TuningJobArn": ""}, tags={}) is None


def test_the_decision_for_a_parents_quota_wall_is_notify() -> None:
    parent = find_parent(job_name="AWSBatchx", description={}, tags={})
    assert parent is not None
    reading = classify_failure_reason("ResourceLimitExceeded: The account-level service limit 'x' is 0 Instances")
    decision, reason = decide_for_owned_job(reading, parent)
    assert decision is Decision.NOTIFY and "retryStrategy" in reason


def test_trainguards_own_launches_are_known_by_their_tags() -> None:
    from trainguard.domain.ownership import trainguard_mark
    from trainguard.domain.policy import TagKeys

    keys = TagKeys()
    assert trainguard_mark({keys.retry_of: "job"}, keys) == keys.retry_of
    assert trainguard_mark({keys.blocked_launch: "job"}, keys) == keys.blocked_launch
    assert trainguard_mark({"trainguard:enabled": "true"}, keys) == ""
