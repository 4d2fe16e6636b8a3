"""Quota walls end to end with in-memory ports: request once, wait, launch on approval, tell the outcome."""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import timedelta
from typing import Any

from tests.cloudtrail_events import envelope_from_record
from tests.conftest import load_fixture
from tests.fakes import NOW, ROLE, FakePorts, described_job, fake_ports
from trainguard.domain.outcome import OutcomeKind
from trainguard.handlers import failed_launches
from trainguard.workflows.job_ended import handle_job_end
from trainguard.workflows.ports import LaunchRefused
from trainguard.workflows.quota_watch import check_quota_walls

OPTED_IN = {"trainguard:enabled": "true"}
P4D = "ml.p4d.24xlarge for training job usage"
WALL = (
    f"The account-level service limit '{P4D}' is 0 Instances, with current utilization of 0 Instances and a "
    "request delta of 4 Instances. Please use AWS Service Quotas to request an increase for this quota."
)
NOT_IN_REGION = "The requested resource training-job/ml.p2.xlarge is not available in this region"
MEDZEN = load_fixture("events/cloudtrail_record.create_training_job.medzen_sanitized_real.json")


def blocked_relaunch(ports: FakePorts, name: str = "llama-pretrain") -> None:
    ports.jobs.refuse_with = LaunchRefused("ResourceLimitExceeded", WALL)
    ports.jobs.add(described_job(name), OPTED_IN)
    assert handle_job_end(ports, name).kind is OutcomeKind.QUOTA_WALL
    ports.jobs.refuse_with = None


def at(ports: FakePorts, delta: timedelta) -> FakePorts:
    return replace(ports, clock=lambda: NOW + delta)


def test_the_relaunch_waits_while_the_request_is_open_and_launches_once_approved() -> None:
    ports = fake_ports()
    blocked_relaunch(ports)
    assert check_quota_walls(at(ports, timedelta(hours=1))) == []
    assert ports.jobs.created == []

    ports.quotas.decide("req-1", "APPROVED")
    [outcome] = check_quota_walls(at(ports, timedelta(hours=5)))
    assert outcome.kind is OutcomeKind.RELAUNCHED and outcome.new_job_name == "llama-pretrain-retry1"
    assert [r["TrainingJobName"] for r in ports.jobs.created] == ["llama-pretrain-retry1"]
    assert ports.ledger.lineage == [("llama-pretrain", 1, "llama-pretrain-retry1", "llama-pretrain")]
    subjects = [n.subject for n in ports.notifier.sent]
    assert subjects[1:] == [
        f"[trainguard] quota request approved: {P4D}",
        "[trainguard] launched llama-pretrain-retry1 after a quota wall",
    ]
    assert check_quota_walls(at(ports, timedelta(hours=6))) == []  # nothing left, nothing twice
    assert len(ports.jobs.created) == 1


def test_a_denied_request_gives_up_the_launch_and_says_so() -> None:
    ports = fake_ports()
    blocked_relaunch(ports)
    ports.quotas.decide("req-1", "DENIED")
    [outcome] = check_quota_walls(at(ports, timedelta(hours=5)))
    assert outcome.kind is OutcomeKind.NOT_RELAUNCHED and "ended DENIED" in outcome.reason
    assert ports.jobs.created == [] and ports.quota_ledger.waiting() == []
    assert "quota request denied" in ports.notifier.sent[-2].subject


def test_a_launch_that_waits_too_long_expires() -> None:
    ports = fake_ports()
    blocked_relaunch(ports)
    [outcome] = check_quota_walls(at(ports, timedelta(hours=73)))
    assert outcome.kind is OutcomeKind.NOT_RELAUNCHED and "quota_wait_hours" in outcome.reason
    assert ports.quota_ledger.waiting() == []


def test_still_short_after_approval_keeps_waiting() -> None:
    ports = fake_ports()
    blocked_relaunch(ports)
    ports.quotas.decide("req-1", "APPROVED")
    ports.jobs.refuse_with = LaunchRefused("ResourceLimitExceeded", WALL)
    assert check_quota_walls(at(ports, timedelta(hours=5))) == []
    assert [w.job_name for w in ports.quota_ledger.waiting()] == ["llama-pretrain-retry1"]
    ports.jobs.refuse_with = None
    [outcome] = check_quota_walls(at(ports, timedelta(hours=6)))
    assert outcome.kind is OutcomeKind.RELAUNCHED


def test_a_launch_still_short_after_an_approval_files_a_request_sized_to_it() -> None:
    ports = fake_ports()
    blocked_relaunch(ports)  # requests 4
    ports.quotas.decide("req-1", "APPROVED")
    still_short = WALL.replace(
        "is 0 Instances, with current utilization of 0", "is 4 Instances, with current utilization of 4"
    )
    ports.jobs.refuse_with = LaunchRefused("ResourceLimitExceeded", still_short)
    assert check_quota_walls(at(ports, timedelta(hours=5))) == []
    assert [(r.request_id, r.desired_value, r.status) for r in ports.quotas.requests] == [
        ("req-1", 4, "APPROVED"),
        ("req-2", 8, "PENDING"),
    ]
    assert check_quota_walls(at(ports, timedelta(hours=6))) == []  # one open request: nothing more is filed
    assert len(ports.quotas.requests) == 2


def test_duplicate_events_and_a_second_blocked_job_ask_once() -> None:
    ports = fake_ports()
    blocked_relaunch(ports, "job-a")
    ports.jobs.refuse_with = LaunchRefused("ResourceLimitExceeded", WALL)
    assert handle_job_end(ports, "job-a").kind is OutcomeKind.ALREADY_HANDLED
    ports.jobs.add(described_job("job-b"), OPTED_IN)
    assert handle_job_end(ports, "job-b").kind is OutcomeKind.QUOTA_WALL
    assert len(ports.quotas.requests) == 1
    assert [w.job_name for w in ports.quota_ledger.waiting()] == ["job-a-retry1", "job-b-retry1"]
    assert "Found an open request" in ports.notifier.sent[-1].body


def test_a_job_without_the_quota_action_only_tells() -> None:
    ports = fake_ports()
    ports.jobs.refuse_with = LaunchRefused("ResourceLimitExceeded", WALL)
    ports.jobs.add(described_job(), {**OPTED_IN, "trainguard:actions": "retry"})
    outcome = handle_job_end(ports, "llama-pretrain")
    assert outcome.kind is OutcomeKind.QUOTA_WALL
    assert "Dry run: trainguard does nothing" in outcome.details["quota_summary"]
    assert ports.quotas.requests == [] and ports.quota_ledger.waiting() == []


def test_a_running_job_that_fails_on_a_quota_is_relaunched_as_it_was_and_its_refusal_meets_the_wall() -> None:
    """The FailureReason buys a same-shape relaunch; the quota request is sized from AWS's refusal of that launch."""
    ports = fake_ports()
    ports.jobs.refuse_with = LaunchRefused("ResourceLimitExceeded", WALL)
    inflated = WALL.replace("delta of 4", "delta of 64")
    ports.jobs.add(described_job(reason=f"ResourceLimitExceeded: {inflated}"), OPTED_IN)
    assert handle_job_end(ports, "llama-pretrain").kind is OutcomeKind.QUOTA_WALL
    assert [w.job_name for w in ports.quota_ledger.waiting()] == ["llama-pretrain-retry1"]
    assert [(r.quota_name, r.desired_value) for r in ports.quotas.requests] == [(P4D, 4)]  # the launch's own 4


def test_a_failure_reason_naming_a_quota_files_no_request_when_the_launch_goes_through() -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(reason=f"ResourceLimitExceeded: {WALL}"), OPTED_IN)
    assert handle_job_end(ports, "llama-pretrain").kind is OutcomeKind.RELAUNCHED
    assert ports.quotas.requests == [] and ports.quota_ledger.waiting() == []


def test_a_quota_sentence_the_training_script_wrote_buys_no_request_and_no_relaunch() -> None:
    """Issue 24: a crafted ResourceLimitExceeded inside AlgorithmError filed an increase for any quota, sized by
    numbers in the text."""
    crafted = (
        "AlgorithmError: ResourceLimitExceeded: The account-level service limit 'ML.P5.48XLARGE for training job "
        "usage' is 0 Instances, with current utilization of 0 Instances and a request delta of 64 Instances."
    )
    ports = fake_ports()
    ports.jobs.add(described_job(reason=crafted), OPTED_IN)
    outcome = handle_job_end(ports, "llama-pretrain")
    assert (outcome.kind, outcome.decision) == (OutcomeKind.NOTIFIED, "notify")
    assert ports.quotas.requests == [] and ports.jobs.created == [] and ports.quota_ledger.waiting() == []


def test_a_refusal_naming_another_types_quota_requests_nothing() -> None:
    """Only a quota of the launch's own instance types, or the account's instance counts, is requested."""
    other = WALL.replace("ml.p4d.24xlarge", "ml.p5.48xlarge")
    ports = fake_ports()
    ports.jobs.refuse_with = LaunchRefused("ResourceLimitExceeded", other)
    ports.jobs.add(described_job(), OPTED_IN)
    outcome = handle_job_end(ports, "llama-pretrain")
    assert outcome.kind is OutcomeKind.QUOTA_WALL and "not a quota of this launch" in outcome.details["quota_summary"]
    assert ports.quotas.requests == [] and ports.quota_ledger.waiting() == []


def failed_launch(tags: list[dict[str, str]] | None = None, message: str = WALL, **changes: Any) -> dict[str, Any]:
    record = copy.deepcopy(MEDZEN)
    record["requestParameters"]["roleArn"] = ROLE
    record["requestParameters"]["tags"] = tags if tags is not None else [{"key": "trainguard:enabled", "value": "true"}]
    # The launch the wall refused: the quota the message names is this launch's (the real record ran a g6.xlarge).
    record["requestParameters"]["resourceConfig"].update(instanceType="ml.p4d.24xlarge", instanceCount=4)
    record["requestParameters"].update(changes)
    return envelope_from_record(record, "ResourceLimitExceeded", message)


def test_a_blocked_user_launch_is_requested_kept_and_launched_with_its_own_request() -> None:
    ports = fake_ports()
    outcome = failed_launches.handle(failed_launch(), ports)
    assert outcome.kind is OutcomeKind.QUOTA_WALL
    assert failed_launches.handle(failed_launch(), ports).kind is OutcomeKind.ALREADY_HANDLED
    [waiting] = ports.quota_ledger.waiting()
    assert waiting.origin == "user-launch" and waiting.job_name == "medzen-b5-b5-universal-arm1-2026-005"
    assert "disableEFA" not in waiting.request and waiting.request["CheckpointConfig"]["S3Uri"].startswith("s3://")
    ports.quotas.decide("req-1", "APPROVED")
    [launched] = check_quota_walls(at(ports, timedelta(hours=5)))
    assert launched.kind is OutcomeKind.RELAUNCHED
    tags = {t["Key"]: t["Value"] for t in ports.jobs.created[0]["Tags"]}
    assert tags["trainguard:blocked-launch"] == "medzen-b5-b5-universal-arm1-2026-005"


def test_a_user_launch_that_is_not_opted_in_is_ignored() -> None:
    ports = fake_ports()
    assert failed_launches.handle(failed_launch(tags=[]), ports).kind is OutcomeKind.SKIPPED
    assert ports.quotas.requests == [] and ports.notifier.sent == []


def test_a_user_launch_with_a_role_trainguard_may_not_pass_gets_the_request_but_no_launch() -> None:
    ports = fake_ports()
    outcome = failed_launches.handle(failed_launch(roleArn="arn:aws:iam::123456789012:role/Other"), ports)
    assert outcome.kind is OutcomeKind.QUOTA_WALL and len(ports.quotas.requests) == 1
    assert ports.quota_ledger.waiting() == [] and "passable_role_arns" in outcome.reason


def test_a_user_launch_whose_request_cloudtrail_hid_is_not_launched_by_trainguard() -> None:
    ports = fake_ports()
    outcome = failed_launches.handle(failed_launch(hyperParameters={"token": "HIDDEN_DUE_TO_SECURITY_REASONS"}), ports)
    assert outcome.kind is OutcomeKind.QUOTA_WALL and "CloudTrail hid" in outcome.reason
    assert ports.quota_ledger.waiting() == []


def test_a_region_error_with_the_same_code_requests_nothing() -> None:
    ports = fake_ports()
    outcome = failed_launches.handle(failed_launch(message=NOT_IN_REGION), ports)
    assert outcome.kind is OutcomeKind.NOTIFIED and outcome.category == "config"
    assert ports.quotas.requests == [] and "launch refused" in ports.notifier.sent[0].subject
