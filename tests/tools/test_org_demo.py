"""`make demo-org` (local/trainguard_local.demo.hub_and_spokes.py): the hub acts in each job's own account and region
through that spoke's role, and nowhere else; an account that is not enrolled is refused; every notification names
its account; `--json` writes the actions with their account, region, job and kind.

The checks read each account's own record in the stand-in (its SageMaker's jobs, its Service Quotas' requests, the
topic's messages), not trainguard's account of itself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trainguard_local.demo.hub_and_spokes import STRANGER, TEAM_A, TEAM_B, main, run_org_demo


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    return run_org_demo(say=lambda text: None)


def _actions(report: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [action for action in report["actions"] if action["action"] == kind]


def _at(action: dict[str, Any]) -> tuple[str, str]:
    return action["account"], action["region"]


def test_the_failed_job_is_relaunched_in_its_own_account_and_region_only(report: dict[str, Any]) -> None:
    relaunches = {action["job"]: _at(action) for action in _actions(report, "relaunch")}
    assert relaunches["llama-pretrain"] == (TEAM_A.account, TEAM_A.region)
    assert relaunches["nccl-allreduce"] == (TEAM_B.account, TEAM_B.region)  # after its stop, from its checkpoint
    assert len(_actions(report, "relaunch")) == 2  # nothing relaunched twice, nothing in another account


def test_the_hung_job_is_stopped_in_its_account_by_the_stall_alarm_there(report: dict[str, Any]) -> None:
    [stop] = _actions(report, "stop")
    assert (stop["job"], *_at(stop)) == ("nccl-allreduce", TEAM_B.account, TEAM_B.region)
    [stopped] = [o for o in report["outcomes"] if o["kind"] == "stall-stopped"]
    assert "no new log line for 3" in stopped["reason"]
    # The newest line reached the hub through team B's log forwarder, and the stop's notice quotes it: the job
    # logs a line every 10 s from t+0 and one a second before its hang at t+25, at step 149: a step per 10 s of work
    # (simulation/activity.py, step_at), in the words of a job that reports nothing (simulation/reporting.py).
    [notice] = [m for m in report["notifications"] if "stalled: stopped" in m["Subject"]]
    assert "step 149 loss 1.5067" in notice["Message"]


def test_the_quota_request_is_filed_in_the_account_that_hit_the_wall(report: dict[str, Any]) -> None:
    [request] = _actions(report, "quota_request")
    assert _at(request) == (TEAM_B.account, TEAM_B.region)
    assert request["quota"] == "ml.p4d.24xlarge for training job usage" and request["desired_value"] == 2
    assert request["job"] == "gpt-finetune-p4d"


def test_an_account_that_is_not_enrolled_is_parked_by_the_bus_and_refused_by_the_function(
    report: dict[str, Any],
) -> None:
    [refused] = _actions(report, "refused")
    assert _at(refused) == (STRANGER.account, STRANGER.region)
    assert report["parked"] == 1
    assert all(action["account"] != STRANGER.account for action in report["actions"] if action["action"] != "refused")


def test_one_notification_per_action_each_naming_its_account_and_region(report: dict[str, Any]) -> None:
    notes = _actions(report, "notify")
    acted = [a for a in report["actions"] if a["action"] in ("relaunch", "stop", "quota_request")]
    assert len(notes) == len(acted) == 4
    assert sorted((n["job"], *_at(n)) for n in notes) == sorted((a["job"], *_at(a)) for a in acted)
    for message in report["notifications"]:
        account = message["MessageAttributes"]["account"]["Value"]
        assert f"[trainguard {account} " in message["Subject"] and f"switch to account {account}" in message["Message"]


def test_make_demo_org_json_writes_the_actions(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "demo-out" / "org.json"  # a fresh clone has no demo-out/ yet
    assert main(["--json", str(out)]) == 0
    # Every place the hub serves answered: a place it could not serve is only logged (handlers/origin.py), so the
    # demo would run on with it (the prober's ListTrainingJobs in an enrolled region where no team trains).
    assert "a spoke could not be served" not in capfd.readouterr().out
    written = json.loads(out.read_text())
    assert isinstance(written["actions"], list) and written["actions"]
    assert all({"account", "region", "job", "action"} <= set(action) for action in written["actions"])
    assert {action["action"] for action in written["actions"]} == {
        "relaunch",
        "stop",
        "quota_request",
        "refused",
        "notify",
    }
