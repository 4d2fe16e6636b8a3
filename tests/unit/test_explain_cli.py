"""`trainguard explain`: the contract of issue 2 (keys, decisions, exit codes), offline."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import load_fixture
from tests.fakes import described_job
from trainguard.domain.instance_types import accelerators_per_host
from trainguard_cli.main import main

KEYS = {"category", "decision", "reason", "create_training_job_request", "quota_request"}


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any] | None, str]:
    code = main([*args, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def write(tmp_path: Path, name: str, data: Any) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data, default=str))
    return str(path)


def test_reason(capsys: pytest.CaptureFixture[str]) -> None:
    code, answer, _ = run(capsys, "explain", "--reason", "InternalServerError: We encountered an internal error.")
    assert code == 0 and answer is not None
    assert set(answer) >= KEYS
    assert answer["category"] == "internal" and answer["decision"] == "retry"
    assert answer["create_training_job_request"] is None and answer["quota_request"] is None


def test_describe_with_tags_gives_the_exact_request(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    describe = write(tmp_path, "d.json", described_job())
    tags = write(tmp_path, "t.json", {"Tags": [{"Key": "trainguard:enabled", "Value": "true"}]})
    code, answer, _ = run(capsys, "explain", "--describe", describe, "--tags", tags)
    assert code == 0 and answer is not None
    assert answer["decision"] == "retry"
    request = answer["create_training_job_request"]
    assert request["TrainingJobName"] == "llama-pretrain-retry1"
    assert request["CheckpointConfig"]["S3Uri"] == "s3://ckpt-bucket/llama-pretrain/"


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("trainguard:max-retries", "lots", "trainguard:max-retries"),  # the policy's
        ("trainguard:stall-minutes", "0", "trainguard:stall-minutes"),  # the stall watch's
        ("trainguard:progress-interval-factor", "99", "trainguard:progress-interval-factor"),  # the progress rules'
        ("trainguard:progress-pattern", "step (\\d+)", "trainguard:progress-pattern"),  # a regex, not a template
    ],
)
def test_every_tag_trainguard_cannot_read_is_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, key: str, value: str, said: str
) -> None:
    """The watch reads the stall and progress tags when it starts and tells no one of a bad one: explain does."""
    describe = write(tmp_path, "d.json", described_job())
    tags = write(
        tmp_path, "t.json", {"Tags": [{"Key": "trainguard:enabled", "Value": "true"}, {"Key": key, "Value": value}]}
    )
    code, answer, _ = run(capsys, "explain", "--describe", describe, "--tags", tags)
    assert code == 0 and answer is not None
    assert [problem for problem in answer["tag_problems"] if said in problem], answer["tag_problems"]


def test_describe_without_opt_in_is_ignored(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, answer, _ = run(capsys, "explain", "--describe", write(tmp_path, "d.json", described_job()))
    assert code == 0 and answer is not None
    assert answer["decision"] == "ignore" and "not opted in" in answer["reason"]


def test_a_role_that_may_not_be_passed_turns_retry_into_notify(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    describe = write(tmp_path, "d.json", described_job())
    tags = write(tmp_path, "t.json", {"Tags": [{"Key": "trainguard:enabled", "Value": "true"}]})
    code, answer, _ = run(
        capsys,
        "explain",
        "--describe",
        describe,
        "--tags",
        tags,
        "--allow-role",
        "arn:aws:iam::123456789012:role/Other",
    )
    assert code == 0 and answer is not None
    assert answer["decision"] == "notify" and answer["create_training_job_request"] is None


def test_event_with_user_code_failure(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    event = copy.deepcopy(load_fixture("events/sagemaker_training_job_state_change.awsdocs.json"))
    event["detail"].update(
        TrainingJobStatus="Failed",
        SecondaryStatus="Failed",
        FailureReason="AlgorithmError: ExecuteUserScriptError:\nExitCode 1",
        Tags={"trainguard:enabled": "true"},
    )
    code, answer, _ = run(capsys, "explain", "--event", write(tmp_path, "e.json", event))
    assert code == 0 and answer is not None
    assert answer["category"] == "user-code" and answer["decision"] == "notify"


@pytest.mark.parametrize(
    "args",
    [
        ("--event", "{missing}"),
        ("--describe", "{bad_json}"),
        ("--event", "{not_event}"),
        ("--describe", "{good}", "--tags", "{not_tags}"),
    ],
)
def test_unreadable_input_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: tuple[str, ...]
) -> None:
    (tmp_path / "bad.json").write_text("{nope")
    paths = {
        "missing": str(tmp_path / "missing.json"),
        "bad_json": str(tmp_path / "bad.json"),
        "not_event": write(tmp_path, "n.json", {"source": "aws.ec2"}),
        "good": write(tmp_path, "g.json", described_job()),
        "not_tags": write(tmp_path, "nt.json", [1]),
    }
    code, answer, err = run(capsys, "explain", *(a.format(**paths) for a in args))
    assert code == 2 and answer is None
    assert err.count("\n") == 1 and err.startswith("trainguard explain:")


@pytest.mark.slow
def test_the_installed_command_reads_standard_input_and_answers_in_words(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("trainguard")
    done = subprocess.run(
        [str(exe), "explain", "--reason", "-"],
        input="CapacityError: Unable to provision requested ML compute capacity.",
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("This failure: trainguard would relaunch it from its last checkpoint.")


QUOTA_TEXTS = [e["text"] for e in load_fixture("failure_reasons.json") if e["decision"] == "quota"]


@pytest.mark.parametrize("text", QUOTA_TEXTS, ids=[t[95:150] for t in QUOTA_TEXTS])
def test_reason_fills_the_quota_request_for_every_shared_quota_text(
    capsys: pytest.CaptureFixture[str], text: str
) -> None:
    code, answer, _ = run(capsys, "explain", "--api-error", text)
    assert code == 0 and answer is not None and answer["decision"] == "quota"
    request = answer["quota_request"]
    assert request["quota_name"].endswith(("usage", "jobs")) and "\n" not in request["quota_name"]
    assert isinstance(request["desired_value"], float) and request["desired_value"] >= 1
    assert request["ceiling_applied"] is False


def test_the_ceiling_caps_the_quota_request(capsys: pytest.CaptureFixture[str]) -> None:
    text = (
        "The account-level service limit 'ml.p5.48xlarge for training job usage' is 0 Instances, with current "
        "utilization of 0 Instances and a request delta of 16 Instances."
    )
    code, answer, _ = run(capsys, "explain", "--api-error", text, "--quota-ceiling", "8")
    assert code == 0 and answer is not None
    assert answer["quota_request"]["desired_value"] == 8 and answer["quota_request"]["ceiling_applied"] is True


@pytest.mark.parametrize(
    "text",
    [
        "AlgorithmError: ResourceLimitExceeded: The account-level service limit 'ML.P5.48XLARGE for training job "
        "usage' is 0 Instances, with current utilization of 0 Instances and a request delta of 64 Instances.",
        "Traceback (most recent call last):\n  File \"train.py\", line 3\nValueError: bad row 'ResourceLimitExceeded'",
    ],
)
def test_a_quota_sentence_in_a_failure_reason_gives_no_quota_decision(
    capsys: pytest.CaptureFixture[str], text: str
) -> None:
    """Issue 24: the training script writes FailureReason; its words never buy a quota request."""
    code, answer, _ = run(capsys, "explain", "--reason", text)
    assert code == 0 and answer is not None
    assert (answer["decision"], answer["quota_request"], answer["words_written_by"]) == (
        "notify",
        None,
        "training-script",
    )


def test_a_region_error_has_no_quota_request(capsys: pytest.CaptureFixture[str]) -> None:
    code, answer, _ = run(
        capsys,
        "explain",
        "--reason",
        "ResourceLimitExceeded: The requested resource training-job/ml.p2.xlarge is not available in this region",
    )
    assert code == 0 and answer is not None
    assert answer["decision"] == "notify" and answer["quota_request"] is None


def stall_alarm_event(name: str = "trainguard-stall-log-silence-llama-pretrain", state: str = "ALARM") -> dict:
    event = copy.deepcopy(load_fixture("events/cloudwatch_alarm_state_change.single_metric.awsdocs.json"))
    event["detail"]["alarmName"] = name
    event["detail"]["state"]["value"] = state
    return event


def running(trained_minutes: int) -> dict:
    from datetime import timedelta

    from tests.fakes import NOW

    description = described_job(status="InProgress", secondary="Training")
    description["TrainingStartTime"] = NOW - timedelta(minutes=trained_minutes)
    return description


def test_a_stall_alarm_event_says_what_would_be_checked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, answer, _ = run(capsys, "explain", "--event", write(tmp_path, "a.json", stall_alarm_event()))
    assert code == 0 and answer is not None
    assert (answer["category"], answer["decision"], answer["signal"]) == ("stall", "stop", "log-silence")
    assert "--describe-job" in answer["reason"]


def test_a_stall_alarm_with_the_job_checks_its_state_and_tags(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    tags = write(tmp_path, "t.json", {"Tags": [{"Key": "trainguard:enabled", "Value": "true"}]})
    event = write(tmp_path, "a.json", stall_alarm_event("trainguard-stall-idle-gpu-llama-pretrain"))
    old = write(tmp_path, "old.json", running(trained_minutes=10**6))
    code, answer, _ = run(capsys, "explain", "--event", event, "--describe-job", old, "--tags", tags)
    assert code == 0 and answer is not None and answer["decision"] == "stop" and answer["signal"] == "idle-gpu"
    young = write(tmp_path, "young.json", running(trained_minutes=-(10**6)))
    code, answer, _ = run(capsys, "explain", "--event", event, "--describe-job", young, "--tags", tags)
    assert answer is not None and answer["decision"] == "ignore" and "grace" in answer["reason"]


def test_a_stall_alarm_of_a_pipelines_job_says_it_is_stopped_never_relaunched(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pipeline = {
        "Key": "sagemaker:pipeline-execution-arn",
        "Value": "arn:aws:sagemaker:us-east-1:1:pipeline/p/execution/e",
    }
    tags = write(tmp_path, "t.json", {"Tags": [{"Key": "trainguard:enabled", "Value": "true"}, pipeline]})
    event = write(tmp_path, "a.json", stall_alarm_event())
    job = write(tmp_path, "job.json", running(trained_minutes=10**6))
    code, answer, _ = run(capsys, "explain", "--event", event, "--describe-job", job, "--tags", tags)
    assert code == 0 and answer is not None and answer["decision"] == "stop"
    assert "SageMaker Pipelines" in answer["owner"] and "relaunch it from its checkpoint" not in answer["reason"]
    assert "never relaunch it" in answer["reason"] and "stop_stalled_parent_jobs off" in answer["reason"]


@pytest.mark.parametrize(("name", "state"), [("ServerCpuTooHigh", "ALARM"), ("trainguard-stall-log-silence-j", "OK")])
def test_alarm_events_trainguard_ignores(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, state: str
) -> None:
    code, answer, _ = run(capsys, "explain", "--event", write(tmp_path, "a.json", stall_alarm_event(name, state)))
    assert code == 0 and answer is not None and answer["decision"] == "ignore"


def failed_launch_event(tags: list[dict[str, str]], message: str) -> dict[str, Any]:
    from tests.cloudtrail_events import envelope_from_record

    record = copy.deepcopy(load_fixture("events/cloudtrail_record.create_training_job.medzen_sanitized_real.json"))
    record["requestParameters"]["tags"] = tags
    # The launch the wall refused: the quota the message names is this launch's (the real record ran a g6.xlarge).
    record["requestParameters"]["resourceConfig"].update(instanceType="ml.p4d.24xlarge", instanceCount=2)
    return envelope_from_record(record, "ResourceLimitExceeded", message)


OPT_IN_RECORD_TAG = [{"key": "trainguard:enabled", "value": "true"}]
P4D_WALL = (
    "The account-level service limit 'ml.p4d.24xlarge for training job usage' is 0 Instances, with current "
    "utilization of 0 Instances and a request delta of 2 Instances. Please use AWS Service Quotas to request an "
    "increase for this quota."
)


def test_a_refused_launch_seen_through_cloudtrail_is_explained_with_its_quota_request(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    event = write(tmp_path, "ct.json", failed_launch_event(OPT_IN_RECORD_TAG, P4D_WALL))
    code, answer, _ = run(capsys, "explain", "--event", event)
    assert code == 0 and answer is not None and set(answer) >= KEYS
    assert answer["decision"] == "quota" and answer["opted_in"] is True
    assert answer["quota_request"]["quota_name"] == "ml.p4d.24xlarge for training job usage"
    assert answer["quota_request"]["desired_value"] == 2
    request = answer["create_training_job_request"]
    assert request["TrainingJobName"] == "medzen-b5-b5-universal-arm1-2026-005" and "disableEFA" not in request


def test_an_older_wording_of_the_quota_error_is_sized_from_the_request(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    older = "The account-level service limit for training-job/ml.p4d.24xlarge is 0 Instances"
    event = write(tmp_path, "ct.json", failed_launch_event(OPT_IN_RECORD_TAG, older))
    code, answer, _ = run(capsys, "explain", "--event", event)
    assert code == 0 and answer is not None and answer["decision"] == "quota"
    count = answer["create_training_job_request"]["ResourceConfig"]["InstanceCount"]
    assert answer["quota_request"]["desired_value"] == count  # the limit (0) + the launch's instance count


def test_a_refused_launch_of_a_pipeline_is_left_to_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    tags = [*OPT_IN_RECORD_TAG, {"key": "sagemaker:pipeline-execution-arn", "value": "arn:aws:sagemaker:x"}]
    code, answer, _ = run(capsys, "explain", "--event", write(tmp_path, "ct.json", failed_launch_event(tags, P4D_WALL)))
    assert code == 0 and answer is not None
    assert answer["decision"] == "notify" and "SageMaker Pipelines" in answer["owner"]
    assert answer["quota_request"] is None and answer["create_training_job_request"] is None


def test_a_cloudtrail_event_of_another_call_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    event = load_fixture("events/eventbridge_aws_api_call_via_cloudtrail.create_labeling_job.mlspace_test.json")
    code, answer, err = run(capsys, "explain", "--event", write(tmp_path, "ct.json", event))
    assert code == 2 and answer is None and "CreateTrainingJob" in err


def test_a_parents_job_is_explained_as_left_to_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    describe = write(tmp_path, "d.json", described_job("AWSBatchllama88b610a69aa8380ca5b0a7aba3f81cb8"))
    tags = write(tmp_path, "t.json", {"Tags": [{"Key": "trainguard:enabled", "Value": "true"}]})
    code, answer, _ = run(capsys, "explain", "--describe", describe, "--tags", tags)
    assert code == 0 and answer is not None
    assert answer["decision"] == "notify" and "AWS Batch" in answer["owner"] and "retryStrategy" in answer["reason"]
    assert answer["create_training_job_request"] is None


TYPES = ("ml.m5.large", "ml.g5.xlarge", "ml.g6.xlarge", "ml.p4d.24xlarge", "ml.p5.48xlarge", "ml.p6-b200.48xlarge")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    own=st.tuples(st.sampled_from(TYPES), st.integers(1, 4)),
    listed=st.lists(st.tuples(st.sampled_from(TYPES), st.integers(1, 16)), min_size=1, max_size=4),
    launchable=st.lists(st.sampled_from(TYPES), max_size=6, unique=True),
    reason=st.sampled_from(
        [
            "CapacityError: Unable to provision requested ML compute capacity.",
            "AlgorithmError: RuntimeError: insufficient capacity",
        ]
    ),
    spot=st.booleans(),
)
def test_explain_never_relaunches_outside_the_bounds(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    own: tuple[str, int],
    listed: list[tuple[str, int]],
    launchable: list[str],
    reason: str,
    spot: bool,
) -> None:
    """Issue 24: whatever the tags list, a relaunch stays on the job's own type or a launchable one, with no more
    instances than the job's and no more than twice its accelerators."""
    description = described_job(reason=reason, spot=spot)
    description["ResourceConfig"] = {"InstanceType": own[0], "InstanceCount": own[1], "VolumeSizeInGB": 100}
    tags = {"trainguard:enabled": "true", "trainguard:on-demand-after": "1"}
    tags["trainguard:fallback-types"] = "+".join(f"{t}:{n}" for t, n in listed)
    describe = write(tmp_path, "d.json", description)
    tag_file = write(tmp_path, "t.json", {"Tags": [{"Key": k, "Value": v} for k, v in tags.items()]})
    bound = [arg for t in launchable for arg in ("--launchable-type", t)]
    code, answer, _ = run(capsys, "explain", "--describe", describe, "--tags", tag_file, *bound)
    assert code == 0 and answer is not None
    request = answer["create_training_job_request"]
    if request is None:
        return
    resource = request["ResourceConfig"]
    launches = resource.get("InstancePreferences") or [resource]
    own_accelerators = accelerators_per_host(own[0])
    for launch in launches:
        kind, count = launch["InstanceType"], launch.get("InstanceCount", resource.get("InstanceCount"))
        if kind == own[0]:
            assert count == own[1]
            continue
        assert kind in launchable and "AlgorithmError" not in reason and count <= own[1]
        theirs = accelerators_per_host(kind)
        assert theirs is not None and own_accelerators is not None
        assert count * theirs <= 2 * own[1] * own_accelerators
    if spot and "EnableManagedSpotTraining" not in request:  # moved to on-demand: only inside the bound
        assert own[0] in launchable and "AlgorithmError" not in reason
