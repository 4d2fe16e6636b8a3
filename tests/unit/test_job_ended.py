"""The job-ended workflow with in-memory ports: decide, act at most once, tell."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.fakes import NOW, ROLE, after_the_lease, described_job, fake_ports, with_config
from trainguard.domain.outcome import OutcomeKind
from trainguard.workflows.job_ended import handle_job_end
from trainguard.workflows.ports import LaunchRefused, StepInProgress
from trainguard.workflows.scheduled_relaunch import handle_scheduled_relaunch

OPTED_IN = {"trainguard:enabled": "true", "team": "llm", "aws:cloudformation:stack-name": "x"}
USER_CODE = "AlgorithmError: ExecuteUserScriptError:\nExitCode 1\nErrorMessage \"NameError: name 'x' is not defined\""
CAPACITY = (
    "CapacityError: Unable to provision requested ML compute capacity. Please retry using a different ML instance type."
)
QUOTA_REFUSAL = (
    "The account-level service limit 'ml.p4d.24xlarge for training job usage' is 4 Instances, with current "
    "utilization of 4 Instances and a request delta of 4 Instances. "
    "Please use AWS Service Quotas to request an increase for this quota."
)


def test_an_internal_error_is_relaunched_from_the_checkpoint_and_the_owners_are_told() -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(), OPTED_IN)
    outcome = handle_job_end(ports, "llama-pretrain")

    assert outcome.kind is OutcomeKind.RELAUNCHED
    assert outcome.new_job_name == "llama-pretrain-retry1"
    [request] = ports.jobs.created
    assert request["TrainingJobName"] == "llama-pretrain-retry1"
    assert request["CheckpointConfig"] == {
        "S3Uri": "s3://ckpt-bucket/llama-pretrain/",
        "LocalPath": "/opt/ml/checkpoints",
    }
    assert request["RoleArn"] == ROLE
    tags = {t["Key"]: t["Value"] for t in request["Tags"]}
    assert tags == {
        "trainguard:enabled": "true",
        "team": "llm",
        "trainguard:root-job": "llama-pretrain",
        "trainguard:attempt": "1",
        "trainguard:retry-of": "llama-pretrain",
    }
    assert ports.ledger.lineage == [("llama-pretrain", 1, "llama-pretrain-retry1", "llama-pretrain")]

    [message] = ports.notifier.sent
    assert len(message.subject) <= 100
    assert "relaunched llama-pretrain" in message.subject
    assert "llama-pretrain-retry1" in message.body
    assert "internal error" in message.body.lower()
    assert "Newest checkpoint is 0 s old" in message.body
    assert "console.aws.amazon.com/sagemaker" in message.body and "logsV2" in message.body
    assert message.attributes["decision"] == "retry"
    assert message.attributes["job_name"] == "llama-pretrain"
    assert message.attributes["event_type"] == "training-job-ended"


def test_a_user_code_failure_is_not_retried_and_the_message_says_why() -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(reason=USER_CODE), OPTED_IN)
    outcome = handle_job_end(ports, "llama-pretrain")
    assert outcome.kind is OutcomeKind.NOTIFIED
    assert ports.jobs.created == []
    [message] = ports.notifier.sent
    assert message.attributes["decision"] == "notify"
    assert "not retried" in message.subject
    assert "Nothing: a relaunch would not fix this" in message.body


def test_a_job_that_is_not_opted_in_is_ignored_silently() -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(), {"team": "llm"})
    outcome = handle_job_end(ports, "llama-pretrain")
    assert outcome.kind is OutcomeKind.SKIPPED and "not opted in" in outcome.reason
    assert ports.jobs.created == [] and ports.notifier.sent == []


def test_duplicate_deliveries_relaunch_once_and_tell_once() -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(), OPTED_IN)
    outcomes = [handle_job_end(ports, "llama-pretrain") for _ in range(3)]
    assert [o.kind for o in outcomes] == [OutcomeKind.RELAUNCHED] + [OutcomeKind.ALREADY_HANDLED] * 2
    assert len(ports.jobs.created) == 1 and len(ports.notifier.sent) == 1
    assert outcomes[2].new_job_name == "llama-pretrain-retry1"


def test_a_delivery_while_another_holds_the_step_is_sent_back_to_lambda() -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(), OPTED_IN)
    ports.ledger.begin_step("llama-pretrain", "end", NOW)  # another invocation is acting
    with pytest.raises(StepInProgress):
        handle_job_end(ports, "llama-pretrain")
    assert ports.jobs.created == []


def test_a_crash_mid_action_gives_the_step_back_and_a_redelivery_acts() -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(), OPTED_IN)
    ports.notifier.publish = _raise  # type: ignore[method-assign]
    with pytest.raises(ConnectionError):
        handle_job_end(ports, "llama-pretrain")
    del ports.notifier.publish
    again = handle_job_end(ports, "llama-pretrain")  # at the same instant: the step was given back, no lease left
    # the job was created before the crash: the same deterministic name finds it
    assert again.kind is OutcomeKind.RELAUNCHED and again.details["launch"] == "already-exists"
    assert len(ports.jobs.created) == 1


def _raise(*_args: object) -> str:
    raise ConnectionError("SNS unreachable")


def test_capacity_errors_wait_for_a_backoff_that_grows_with_each_attempt() -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(reason=CAPACITY), OPTED_IN)
    first = handle_job_end(ports, "llama-pretrain")
    assert first.kind is OutcomeKind.RELAUNCH_SCHEDULED
    assert ports.scheduler.scheduled_at("llama-pretrain") == NOW + timedelta(minutes=10)
    assert ports.jobs.created == []

    later = fake_ports()
    later.jobs.add(
        described_job("llama-pretrain-retry2", reason=CAPACITY),
        {**OPTED_IN, "trainguard:root-job": "llama-pretrain", "trainguard:attempt": "2"},
    )
    handle_job_end(later, "llama-pretrain-retry2")
    assert later.scheduler.scheduled_at("llama-pretrain-retry2") == NOW + timedelta(minutes=40)


def test_the_scheduled_relaunch_launches_once() -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(reason=CAPACITY), OPTED_IN)
    handle_job_end(ports, "llama-pretrain")
    fired = handle_scheduled_relaunch(ports, "llama-pretrain")
    again = handle_scheduled_relaunch(ports, "llama-pretrain")
    assert fired.kind is OutcomeKind.RELAUNCHED and again.kind is OutcomeKind.ALREADY_HANDLED
    assert [r["TrainingJobName"] for r in ports.jobs.created] == ["llama-pretrain-retry1"]


def test_a_job_opted_out_before_its_scheduled_relaunch_is_left_alone() -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(reason=CAPACITY), OPTED_IN)
    handle_job_end(ports, "llama-pretrain")
    ports.jobs.add(described_job(reason=CAPACITY), {"trainguard:enabled": "false"})
    assert handle_scheduled_relaunch(ports, "llama-pretrain").kind is OutcomeKind.SKIPPED
    assert ports.jobs.created == []


def test_the_retry_limit_of_a_lineage_stops_relaunches() -> None:
    ports = fake_ports()
    ports.jobs.add(
        described_job("llama-pretrain-retry3"),
        {**OPTED_IN, "trainguard:root-job": "llama-pretrain", "trainguard:attempt": "3"},
    )
    outcome = handle_job_end(ports, "llama-pretrain-retry3")
    assert outcome.kind is OutcomeKind.NOT_RELAUNCHED and "used the 3 relaunches it may have" in outcome.reason
    assert ports.jobs.created == [] and len(ports.notifier.sent) == 1


def test_a_per_job_retry_limit_tag() -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(), {**OPTED_IN, "trainguard:max-retries": "0"})
    assert handle_job_end(ports, "llama-pretrain").kind is OutcomeKind.NOT_RELAUNCHED


def test_no_checkpoint_config_means_no_restart_from_scratch_by_default() -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(checkpoint=None), OPTED_IN)
    outcome = handle_job_end(ports, "llama-pretrain")
    assert outcome.kind is OutcomeKind.NOT_RELAUNCHED and "no CheckpointConfig" in outcome.reason
    allowed = fake_ports()
    allowed.jobs.add(described_job(checkpoint=None), {**OPTED_IN, "trainguard:restart-without-checkpoint": "true"})
    assert handle_job_end(allowed, "llama-pretrain").kind is OutcomeKind.RELAUNCHED


def test_an_empty_checkpoint_prefix_means_no_restart_from_scratch_by_default() -> None:
    ports = fake_ports()
    ports.checkpoints.count = 0
    ports.jobs.add(described_job(), OPTED_IN)
    outcome = handle_job_end(ports, "llama-pretrain")
    assert outcome.kind is OutcomeKind.NOT_RELAUNCHED and "no checkpoint has been written" in outcome.reason
    assert "no checkpoint has been written" in ports.notifier.sent[0].body


def test_an_unlistable_prefix_still_relaunches_and_says_the_age_is_unknown() -> None:
    ports = fake_ports()
    ports.checkpoints.error = "AccessDenied: Access Denied"
    ports.jobs.add(described_job(), OPTED_IN)
    assert handle_job_end(ports, "llama-pretrain").kind is OutcomeKind.RELAUNCHED
    assert "Checkpoint age unknown" in ports.notifier.sent[0].body


def test_the_hourly_budget_caps_relaunches_account_wide() -> None:
    ports = with_config(fake_ports(), retry_budget_per_hour=2)
    for i in range(3):
        ports.jobs.add(described_job(f"job-{i}"), OPTED_IN)
    kinds = [handle_job_end(ports, f"job-{i}").kind for i in range(3)]
    assert kinds == [OutcomeKind.RELAUNCHED, OutcomeKind.RELAUNCHED, OutcomeKind.NOT_RELAUNCHED]
    assert "budget of 2 launches in any 60 minutes is spent" in ports.notifier.sent[-1].body


@pytest.mark.parametrize("tags", [{"trainguard:actions": "notify"}, {"trainguard:dry-run": "true"}])
def test_a_dry_run_job_only_tells(tags: dict[str, str]) -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(), {**OPTED_IN, **tags})
    outcome = handle_job_end(ports, "llama-pretrain")
    assert outcome.kind is OutcomeKind.NOT_RELAUNCHED and "dry run" in outcome.reason
    assert outcome.details["would_send"]["TrainingJobName"] == "llama-pretrain-retry1"
    assert ports.jobs.created == []


def test_global_dry_run_only_tells() -> None:
    ports = with_config(fake_ports(), dry_run=True)
    ports.jobs.add(described_job(), OPTED_IN)
    assert handle_job_end(ports, "llama-pretrain").kind is OutcomeKind.NOT_RELAUNCHED
    assert ports.jobs.created == []


def test_a_role_trainguard_may_not_pass_is_not_used() -> None:
    ports = with_config(fake_ports(), passable_role_arns=("arn:aws:iam::123456789012:role/Other",))
    ports.jobs.add(described_job(), OPTED_IN)
    outcome = handle_job_end(ports, "llama-pretrain")
    assert outcome.kind is OutcomeKind.NOT_RELAUNCHED and "passable_role_arns" in outcome.reason


def test_max_runtime_notifies_unless_the_job_asks_to_continue() -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(status="Stopped", secondary="MaxRuntimeExceeded"), OPTED_IN)
    assert handle_job_end(ports, "llama-pretrain").kind is OutcomeKind.NOTIFIED
    cont = fake_ports()
    cont.jobs.add(
        described_job(status="Stopped", secondary="MaxRuntimeExceeded"),
        {**OPTED_IN, "trainguard:continue-after-max-runtime": "true"},
    )
    assert handle_job_end(cont, "llama-pretrain").kind is OutcomeKind.RELAUNCHED


def test_a_refused_relaunch_is_reported_with_what_sagemaker_said() -> None:
    ports = fake_ports()
    ports.jobs.refuse_with = LaunchRefused("ValidationException", "Value 'x' at 'resourceConfig.instanceType' failed")
    ports.jobs.add(described_job(), OPTED_IN)
    outcome = handle_job_end(ports, "llama-pretrain")
    assert outcome.kind is OutcomeKind.NOT_RELAUNCHED
    assert "ValidationException" in outcome.reason and "config" in outcome.reason


def test_a_relaunch_blocked_by_a_quota_requests_the_increase_and_waits() -> None:
    ports = fake_ports()
    ports.jobs.refuse_with = LaunchRefused("ResourceLimitExceeded", QUOTA_REFUSAL)
    ports.jobs.add(described_job(), OPTED_IN)
    outcome = handle_job_end(ports, "llama-pretrain")
    assert outcome.kind is OutcomeKind.QUOTA_WALL
    [request] = ports.quotas.requests
    assert (request.quota_name, request.desired_value) == ("ml.p4d.24xlarge for training job usage", 8)
    [waiting] = ports.quota_ledger.waiting()
    assert waiting.job_name == "llama-pretrain-retry1" and waiting.origin == "relaunch"
    assert waiting.request["TrainingJobName"] == "llama-pretrain-retry1"
    [message] = ports.notifier.sent
    assert "blocked by a quota" in message.subject and "req-1" in message.body


def test_a_job_described_as_still_running_is_not_touched() -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(status="InProgress", secondary="Training"), OPTED_IN)
    assert handle_job_end(ports, "llama-pretrain").kind is OutcomeKind.SKIPPED
    assert ports.notifier.sent == []


def test_a_job_stopped_by_a_person_is_left_alone() -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(status="Stopped", secondary="Stopped"), OPTED_IN)
    assert handle_job_end(ports, "llama-pretrain").kind is OutcomeKind.SKIPPED
    assert ports.notifier.sent == []
    recorded = ports.ledger.begin_step("llama-pretrain", "end", NOW).recorded
    assert recorded["kind"] == "skipped" and recorded["category"] == "stopped" and recorded["reason"]


def test_a_nonsense_tag_falls_back_and_the_message_says_so() -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(reason=USER_CODE), {**OPTED_IN, "trainguard:max-retries": "lots"})
    handle_job_end(ports, "llama-pretrain")
    assert "trainguard:max-retries='lots' could not be read" in ports.notifier.sent[0].body


def test_a_training_job_of_a_tuning_job_is_left_to_the_tuner() -> None:
    ports = fake_ports()
    description = described_job()
    description["TuningJobArn"] = "arn:aws:sagemaker:us-east-1:123456789012:hyper-parameter-tuning-job/sweep"
    ports.jobs.add(description, OPTED_IN)
    outcome = handle_job_end(ports, "llama-pretrain")
    assert outcome.kind is OutcomeKind.SKIPPED and "hyper-parameter-tuning-job/sweep" in outcome.reason
    assert ports.jobs.created == [] and ports.notifier.sent == []


class ProcessDied(BaseException):
    """The Lambda process died (a timeout, out of memory): no `except Exception` block runs."""


def test_a_redelivery_after_a_death_finishes_the_relaunch_even_when_the_budget_is_spent(monkeypatch: Any) -> None:
    # Found by the chaos suite (local/trainguard_local/chaos, seed 5, 150 jobs): the process died right after
    # CreateTrainingJob, having taken the hour's last relaunch; Lambda's retry asked the budget again, found it
    # spent, and recorded and told "not relaunched" while the relaunch ran.
    ports = with_config(fake_ports(), retry_budget_per_hour=1)
    ports.jobs.add(described_job(), OPTED_IN)
    create = ports.jobs.create

    def create_then_die(request: dict[str, Any], retry_of: str, retry_of_tag_key: str) -> Any:
        create(request, retry_of, retry_of_tag_key)
        raise ProcessDied

    monkeypatch.setattr(ports.jobs, "create", create_then_die)
    with pytest.raises(ProcessDied):
        handle_job_end(ports, "llama-pretrain")
    monkeypatch.setattr(ports.jobs, "create", create)
    ports = after_the_lease(ports)  # the dead process's lease has expired
    outcome = handle_job_end(ports, "llama-pretrain")
    assert outcome.kind is OutcomeKind.RELAUNCHED and outcome.details["launch"] == "already-exists"
    assert [r["TrainingJobName"] for r in ports.jobs.created] == ["llama-pretrain-retry1"]
    [message] = ports.notifier.sent
    assert "relaunched llama-pretrain" in message.subject


@pytest.mark.parametrize(
    "reason, checked",
    [
        ("RuntimeError: CUDA error: uncorrectable ECC error encountered", True),
        ("torch.distributed.DistBackendError: NCCL error", True),
        ("InternalServerError: We encountered an internal error. Please try again.", False),
    ],
)
def test_the_infra_check_setting_asks_for_a_health_check_after_host_faults_only(reason: str, checked: bool) -> None:
    ports = fake_ports(infra_check_after_host_faults=True)
    ports.jobs.add(described_job(reason=reason), OPTED_IN)
    assert handle_job_end(ports, "llama-pretrain").kind is OutcomeKind.RELAUNCHED
    [request] = ports.jobs.created
    assert ("InfraCheckConfig" in request) is checked
    if checked:
        assert request["InfraCheckConfig"] == {"EnableInfraCheck": True}


def test_without_the_setting_no_health_check_is_asked_for() -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(reason="RuntimeError: CUDA error: uncorrectable ECC error encountered"), OPTED_IN)
    handle_job_end(ports, "llama-pretrain")
    assert "InfraCheckConfig" not in ports.jobs.created[0]


def test_a_failure_event_during_a_cluster_repair_does_nothing() -> None:
    """A GPU failure starts SageMaker's cluster repair, which restarts the same job (model-checkpoints-cluster-
    repair.html): an end event that arrives then finds the job InProgress again, and nothing is done."""
    ports = fake_ports()
    description = described_job(status="InProgress", secondary="Restarting")
    description["SecondaryStatusTransitions"] = [
        {"Status": "Training", "StartTime": NOW - timedelta(hours=3), "StatusMessage": "Training in progress."},
        {
            "Status": "Restarting",
            "StartTime": NOW,
            "StatusMessage": "Repairing training cluster due to hardware failure",
        },
    ]
    ports.jobs.add(description, OPTED_IN)
    outcome = handle_job_end(ports, "llama-pretrain")
    assert outcome.kind is OutcomeKind.SKIPPED and "InProgress" in outcome.reason
    assert ports.jobs.created == [] and ports.notifier.sent == [] and ports.scheduler.schedules == {}
