"""`trainguard status`, `history` and `opt-in` on the local stand-in, reading a ledger the production handlers
wrote: a relaunched job (now training and watched), a user-code failure, a capacity failure waiting for its
schedule, a stall stopped on fresh evidence, a quota wall, and a running job that is not opted in."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from tests.conftest import load_fixture
from trainguard.adapters.ledger import item_key
from trainguard.config import GuardConfig
from trainguard.handlers import failed_launches, job_events, stall_alarms
from trainguard.handlers.wiring import reset_production_ports
from trainguard_cli import ledger_reader
from trainguard_cli.inputs import EXIT_NOT_FOUND
from trainguard_cli.ledger_reader import LedgerReader
from trainguard_cli.main import main
from trainguard_cli.operator_commands import TABLE_VARIABLE
from trainguard_local.demo.acts import JOBS, launch
from trainguard_local.demo.quotas import user_launch
from trainguard_local.stand_in.local_aws import LambdaContext, LocalAWS, local_aws

pytestmark = pytest.mark.slow

CAPACITY = "CapacityError: Unable to provision requested ML compute capacity. Please retry using a different type."
STALLED = "stuck-loader"
NOT_OPTED_IN = "vision-probe"


def deliver(aws: LocalAWS) -> list[dict[str, Any]]:
    """Hand what the stack's rule matched to the job-events handler, as Lambda would."""
    return [job_events.handler(event, LambdaContext()) for event in aws.receive_rule_events()]


@pytest.fixture(scope="module")
def aws() -> Iterator[LocalAWS]:
    reset_production_ports()
    with local_aws() as stand_in:
        _fill_the_ledger(stand_in)
        yield stand_in
    reset_production_ports()


def _fill_the_ledger(aws: LocalAWS) -> None:
    launch(aws, "llama-pretrain", JOBS["llama-pretrain"])
    launch(aws, "bert-finetune", JOBS["bert-finetune"])
    launch(aws, "mistral-sft", {**JOBS["llama-pretrain"], "instances": ("ml.g5.xlarge", 1)})
    deliver(aws)
    aws.plane.fail("llama-pretrain", JOBS["llama-pretrain"]["reason"])
    aws.plane.fail("bert-finetune", JOBS["bert-finetune"]["reason"])
    aws.plane.fail("mistral-sft", CAPACITY)
    kinds = {o["job_name"]: o["kind"] for o in deliver(aws) if o["kind"] != "skipped"}
    assert kinds == {"llama-pretrain": "relaunched", "bert-finetune": "notified", "mistral-sft": "relaunch-scheduled"}
    aws.plane.start_training("llama-pretrain-retry1")
    # A job that trains silently from its start (its clock set back 15 min), with a 5 min threshold and no grace.
    aws.clock.skip(timedelta(minutes=-15))
    tags = {"trainguard:enabled": "true", "trainguard:stall-minutes": "5", "trainguard:startup-grace-minutes": "0"}
    launch(aws, STALLED, {"tags": tags, "instances": ("ml.g5.12xlarge", 2)})
    aws.clock.skip(timedelta(minutes=15))
    launch(aws, NOT_OPTED_IN, {"tags": {"team": "vision"}, "instances": ("ml.g5.xlarge", 1)})
    deliver(aws)  # retry1 and the silent job are watched now
    alarm = copy.deepcopy(load_fixture("events/cloudwatch_alarm_state_change.single_metric.awsdocs.json"))
    alarm["detail"]["alarmName"] = f"trainguard-stall-log-silence-{STALLED}"
    assert stall_alarms.handler(alarm, LambdaContext())["kind"] == "stall-stopped"
    deliver(aws)  # Stopping: still watched, the stop not settled yet
    assert user_launch(aws, "gpt-finetune", "ml.p4d.24xlarge", 2).startswith("ResourceLimitExceeded")
    [wall] = [failed_launches.handler(event, LambdaContext()) for event in aws.receive_failed_launches()]
    assert wall["kind"] == "quota-wall"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code, out, err = run(capsys, *args, "--json")
    assert code == 0, err
    answer: dict[str, Any] = json.loads(out)
    return answer


def tags_of(aws: LocalAWS, job: str) -> dict[str, str]:
    sagemaker = aws.client("sagemaker")
    arn = sagemaker.describe_training_job(TrainingJobName=job)["TrainingJobArn"]
    return {t["Key"]: t["Value"] for t in sagemaker.list_tags(ResourceArn=arn)["Tags"]}


def test_the_table_variable_is_the_one_the_functions_get() -> None:
    assert TABLE_VARIABLE in GuardConfig(ledger_table_name="t", topic_arn="a").to_env()


def test_status_as_json(aws: LocalAWS, capsys: pytest.CaptureFixture[str]) -> None:
    report = run_json(capsys, "status")
    assert set(report) == {
        "table",
        "generated_at",
        "watched",
        "open_stalls",
        "pending_relaunches",
        "quota_requests",
        "scan_truncated",
    }
    assert report["table"] == "trainguard-ledger" and report["scan_truncated"] is False
    watched = {w["job_name"]: w for w in report["watched"]}
    assert set(watched) == {"llama-pretrain-retry1", STALLED}
    retry = watched["llama-pretrain-retry1"]
    assert (retry["hosts"], retry["instance_type"], retry["stall_minutes"]) == (4, "ml.p5.48xlarge", 30)
    assert retry["training_since"] is not None and retry["stopping_since"] is None
    assert watched[STALLED]["stopping_since"] is not None and watched[STALLED]["stall_minutes"] == 5
    [stall] = report["open_stalls"]
    assert stall["job_name"] == STALLED and stall["kind"] == "stall-stopped" and stall["decision"] == "stop"
    assert "no new log line" in stall["reason"] and stall["stopped_at"] is not None
    pending = {p["job_name"]: p for p in report["pending_relaunches"]}
    assert set(pending) == {"mistral-sft", "gpt-finetune"}
    scheduled, blocked = pending["mistral-sft"], pending["gpt-finetune"]
    assert scheduled["waits_for"] == "schedule" and scheduled["new_job_name"] == "mistral-sft-retry1"
    assert scheduled["launch_at"] is not None and "CapacityError" in scheduled["reason"]
    assert blocked["waits_for"] == "quota" and blocked["origin"] == "user-launch"
    assert blocked["quota_name"] == "ml.p4d.24xlarge for training job usage" and blocked["give_up_at"]
    [request] = report["quota_requests"]
    assert request["quota_name"] == "ml.p4d.24xlarge for training job usage"
    assert request["status"] == "PENDING" and request["open"] is True and request["desired_value"] == 2


def test_status_as_text(aws: LocalAWS, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "status", "--table", "trainguard-ledger")
    assert code == 0
    assert "Watched for stalls: 2" in out and "Open stalls: 1" in out and "Quota requests: 1" in out
    [retry_row] = [line for line in out.splitlines() if line.strip().startswith("llama-pretrain-retry1")]
    assert "4 x ml.p5.48xlarge" in retry_row and ("min ago" in retry_row or "just now" in retry_row)
    assert "ml.p4d.24xlarge for training job usage" in out and "PENDING" in out
    assert "mistral-sft-retry1" in out and "the schedule" in out


def test_status_needs_a_table(aws: LocalAWS, capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> None:
    monkeypatch.delenv(TABLE_VARIABLE)
    code, out, err = run(capsys, "status")
    assert code == 2 and out == "" and TABLE_VARIABLE in err and len(err.splitlines()) == 1


def test_a_missing_table_is_one_line(aws: LocalAWS, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "status", "--table", "no-such-table")
    assert code == 2 and len(err.splitlines()) == 1 and "ResourceNotFoundException" in err


def test_history_of_a_relaunch(aws: LocalAWS, capsys: pytest.CaptureFixture[str]) -> None:
    report = run_json(capsys, "history", "llama-pretrain-retry1")
    assert (report["root_job"], report["root_from"]) == ("llama-pretrain", "tag")
    assert [(a["attempt"], a["job_name"], a["status"]) for a in report["attempts"]] == [
        (0, "llama-pretrain", "Failed"),
        (1, "llama-pretrain-retry1", "InProgress"),
    ]
    assert report["attempts"][1]["retry_of"] == "llama-pretrain"
    [end] = [e for e in report["timeline"] if e["event"] == "end"]
    assert (end["job_name"], end["kind"], end["decision"], end["category"]) == (
        "llama-pretrain",
        "relaunched",
        "retry",
        "internal",
    )
    assert "InternalServerError" in end["reason"] and end["new_job_name"] == "llama-pretrain-retry1"
    events = [(e["event"], e["job_name"]) for e in report["timeline"]]
    assert events == [
        ("launched", "llama-pretrain"),
        ("end", "llama-pretrain"),
        ("launched", "llama-pretrain-retry1"),
    ]
    times = [e["time"] for e in report["timeline"]]
    assert times == sorted(times)
    # One checkpoint object in the demo's prefix: no interval, so no advice, and the report says why.
    assert report["checkpoint_advice"] == {"advice": None, "why": "fewer than 3 checkpoint writes seen"}


def test_history_as_text(aws: LocalAWS, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "history", "llama-pretrain")
    assert code == 0
    assert out.startswith("llama-pretrain: lineage of llama-pretrain")
    assert "relaunched -> llama-pretrain-retry1" in out
    assert "retry (internal): SageMaker reported an internal error" in out
    assert "relaunch of llama-pretrain (attempt 1)" in out


def test_history_of_a_user_code_failure(aws: LocalAWS, capsys: pytest.CaptureFixture[str]) -> None:
    report = run_json(capsys, "history", "bert-finetune")
    assert (report["root_job"], report["root_from"]) == ("bert-finetune", "name")
    [end] = [e for e in report["timeline"] if e["event"] == "end"]
    assert (end["kind"], end["decision"], end["category"]) == ("notified", "notify", "user-code")


def test_history_of_a_stall_and_of_a_quota_wall(aws: LocalAWS, capsys: pytest.CaptureFixture[str]) -> None:
    [stop] = [e for e in run_json(capsys, "history", STALLED)["timeline"] if e["event"] == "stall-stop"]
    assert stop["kind"] == "stall-stopped" and "no new log line" in stop["reason"]
    report = run_json(capsys, "history", "gpt-finetune")  # refused: SageMaker never had it
    assert [a["status"] for a in report["attempts"]] == [None]
    assert {e["event"] for e in report["timeline"]} == {"blocked-launch", "quota-wait"}


def test_history_when_sagemaker_no_longer_has_the_jobs(
    aws: LocalAWS, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for gone in ("llama-pretrain", "llama-pretrain-retry1"):  # SageMaker has no DeleteTrainingJob: forget them
        monkeypatch.delitem(aws.plane._jobs, gone)
    report = run_json(capsys, "history", "llama-pretrain-retry1")
    assert (report["root_job"], report["root_from"]) == ("llama-pretrain", "ledger")
    assert [(a["job_name"], a["status"]) for a in report["attempts"]] == [
        ("llama-pretrain", None),
        ("llama-pretrain-retry1", None),
    ]
    assert [e["kind"] for e in report["timeline"] if e["event"] == "end"] == ["relaunched"]


def test_opt_in_tags_a_running_job(aws: LocalAWS, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "opt-in", NOT_OPTED_IN, "--max-retries", "2", "--actions", "retry+notify")
    assert code == 0
    assert "trainguard:max-retries" in out and "Note: its failures are guarded from now" in out
    assert tags_of(aws, NOT_OPTED_IN) == {
        "team": "vision",
        "trainguard:enabled": "true",
        "trainguard:max-retries": "2",
        "trainguard:actions": "retry+notify",
    }
    report = run_json(capsys, "opt-in", NOT_OPTED_IN, "--stall-minutes", "45", "--dry-run")
    assert report["tags"] == {
        "trainguard:enabled": "true",
        "trainguard:stall-minutes": "45",
        "trainguard:dry-run": "true",
    }
    assert report["previous"] == {"trainguard:enabled": "true"} and report["status"] == "InProgress"
    assert tags_of(aws, NOT_OPTED_IN)["trainguard:max-retries"] == "2"  # AddTags keeps the others


@pytest.mark.parametrize(
    "option",
    [
        ("--max-retries", "-1"),
        ("--max-retries", "21"),
        ("--actions", "retry,notify"),
        ("--stall-minutes", "2"),
        ("--gpu-idle-percent", "7.5"),
    ],
)
def test_opt_in_refuses_what_the_guard_would_not_read(
    aws: LocalAWS, capsys: pytest.CaptureFixture[str], option: tuple[str, str]
) -> None:
    before = tags_of(aws, NOT_OPTED_IN)
    code, out, err = run(capsys, "opt-in", NOT_OPTED_IN, *option)
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert f"trainguard:{option[0][2:]}={option[1]!r}" in err and "nothing was tagged" in err
    assert tags_of(aws, NOT_OPTED_IN) == before


def test_opt_in_refuses_a_job_that_is_not_running(aws: LocalAWS, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "opt-in", "bert-finetune")
    assert code == 2 and "bert-finetune is Failed" in err


def test_a_job_that_does_not_exist_is_not_found_with_one_exit_code(
    aws: LocalAWS, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in ("opt-in", "history"):
        code, out, err = run(capsys, command, "no-such-job")
        assert (code, out) == (EXIT_NOT_FOUND, ""), command
        assert err.startswith(f"trainguard {command}: no training job named no-such-job") and len(err.splitlines()) == 1


def test_the_scan_for_scheduled_relaunches_is_bounded() -> None:
    client = boto3.client("dynamodb", region_name="us-east-1")
    scan = {
        "TableName": "ledger",
        "FilterExpression": "#sk = :end AND #kind = :scheduled AND begins_with(#pk, :jobs)",
        "ExpressionAttributeNames": {"#sk": "sk", "#kind": "kind", "#pk": "pk"},
        "ExpressionAttributeValues": {
            ":end": {"S": "end"},
            ":scheduled": {"S": "relaunch-scheduled"},
            ":jobs": {"S": "job#"},  # this place's jobs: a single-account stack's, or a hub's own
        },
    }
    more = {"LastEvaluatedKey": item_key("job#a", "end")}
    waits = {
        "TableName": "ledger",
        "KeyConditionExpression": "pk = :pk",
        "ExpressionAttributeValues": {":pk": {"S": "quota-waits"}},
        "ConsistentRead": True,
    }
    with Stubber(client) as stub:
        stub.add_response("scan", {"Items": [], **more}, scan)
        stub.add_response("scan", {"Items": [], **more}, {**scan, "ExclusiveStartKey": more["LastEvaluatedKey"]})
        stub.add_response("query", {"Items": []}, waits)
        pending, truncated = LedgerReader(client, "ledger", scan_pages=2).pending_relaunches(datetime.now(UTC))
        stub.assert_no_pending_responses()
    assert pending == [] and truncated is True


def test_keys_left_unprocessed_are_asked_again_then_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ledger_reader.time, "sleep", lambda _: None)
    client = boto3.client("dynamodb", region_name="us-east-1")
    first, second = item_key("job#a", "relaunch"), item_key("job#b", "relaunch")
    done = {**second, "status": {"S": "done"}, "outcome": {"S": json.dumps({"kind": "relaunched"})}}
    with Stubber(client) as stub:
        stub.add_response(
            "batch_get_item",
            {"Responses": {"ledger": []}, "UnprocessedKeys": {"ledger": {"Keys": [second]}}},
            {"RequestItems": {"ledger": {"Keys": [first, second]}}},
        )
        stub.add_response(
            "batch_get_item", {"Responses": {"ledger": [done]}}, {"RequestItems": {"ledger": {"Keys": [second]}}}
        )
        records = LedgerReader(client, "ledger").jobs(["a", "b"], ("relaunch",))
        for _ in range(8):
            unprocessed = {"ledger": {"Keys": [first]}}
            stub.add_response(
                "batch_get_item", {"Responses": {}, "UnprocessedKeys": unprocessed}, {"RequestItems": unprocessed}
            )
        with pytest.raises(ClientError, match="ProvisionedThroughputExceeded"):
            LedgerReader(client, "ledger").jobs(["a"], ("relaunch",))
    assert records["a"].steps == [] and [s.kind for s in records["b"].steps] == ["relaunched"]


def test_status_in_a_hub_reads_one_places_records(capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> None:
    """A hub's ledger holds every place's records (adapters/ledger.py, LedgerScope): `status` shows its own account
    and region's by default, a spoke's with --account and --region, and never mixes them."""
    from moto import mock_aws

    from trainguard.adapters.ledger import Ledger, create_table_request, ledger_scope
    from trainguard.adapters.stall_ledger import StallLedger
    from trainguard.domain.origin import Location
    from trainguard.domain.outcome import Outcome, OutcomeKind
    from trainguard.domain.stalls import StallThresholds
    from trainguard.domain.watched_job import WatchedJob

    spoke = Location("111111111111", "us-west-2")
    now = datetime.now(UTC)
    with mock_aws():
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(**create_table_request("ledger"))
        for name, scope in (("at-home", ledger_scope(None)), ("in-spoke", ledger_scope(spoke))):
            StallLedger(dynamodb, "ledger", scope).watch(
                WatchedJob(name, "ml.p4d.24xlarge", 1, StallThresholds(), now - timedelta(hours=1))
            )
            ledger = Ledger(dynamodb, "ledger", scope)
            ledger.begin_step(name, "end", now)
            later = (now + timedelta(minutes=10)).strftime("%Y-%m-%d %H:%M UTC")
            scheduled = Outcome(OutcomeKind.RELAUNCH_SCHEDULED, name, "capacity", details={"launch_at": later})
            ledger.finish_step(name, "end", scheduled, now)

        reports = [
            run_json(capsys, "status", "--table", "ledger", *where)
            for where in ((), ("--account", spoke.account, "--region", spoke.region))
        ]

    for report, name in zip(reports, ("at-home", "in-spoke"), strict=True):
        assert [w["job_name"] for w in report["watched"]] == [name]
        assert [p["job_name"] for p in report["pending_relaunches"]] == [name]
