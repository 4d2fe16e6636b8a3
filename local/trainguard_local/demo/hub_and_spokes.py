"""`make demo-org`: one hub guards the training jobs of an organization (docs/organization.md), in the stand-in.

Three accounts in two regions: the hub (123456789012, us-east-1), team A's spoke (111111111111, us-east-1) and
team B's spoke (222222222222, us-west-2); 333333333333 is not enrolled. The hub's production handlers run on what
the spokes' forwarding rules send to its bus, and act in the job's own account and region through that spoke's
role (moto's STS AssumeRole), each spoke with its own simulated SageMaker and Service Quotas:

1. team B's job logs a line every 10 s for 25 minutes, then hangs (a dead NCCL collective: GPUs busy, no more
   logs), a trace job and fault played on the simulation core (played_launch.py). Its lines reach the hub
   through team B's log forwarder; its stall alarm, in team B's account, fires 30 minutes after its newest
   line; the hub stops the job there and relaunches it from its checkpoint;
2. team A's job fails with an InternalServerError: the hub relaunches it in team A's account and region;
3. team B launches on ml.p4d.24xlarge, where its quota is 0: the refused CreateTrainingJob (CloudTrail) reaches
   the hub, which files the quota increase request in team B's account;
4. an event from 333333333333 reaches the hub's bus: its refused-events rule parks it, and the function, handed
   it all the same, refuses it and acts nowhere;
5. one notification per action, each naming its account and region.

`--json FILE` writes what happened: {"actions": [{"account", "region", "job", "action", ...}], ...}, the actions
read from the stand-in's own record of each account (org_actions.py), not from trainguard's answers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

from trainguard.domain.origin import Location
from trainguard_local.demo.demo_jobs import cadence, demo_fault, demo_job, gpu_words
from trainguard_local.demo.org_actions import actions_of, subscribe_inbox, tell_actions
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.kernel import Kernel, Process, Sleep
from trainguard_local.simulation.rhythm import JobRhythm
from trainguard_local.stand_in.alarm_evaluator import LocalAlarmEvaluator
from trainguard_local.stand_in.fleet_side import training_request
from trainguard_local.stand_in.local_aws import drain_queue
from trainguard_local.stand_in.organization import (
    CHECKPOINT_BUCKETS,
    HUB,
    Organization,
    Spoke,
    organization,
    training_role,
)
from trainguard_local.stand_in.played_launch import MINUTE, PlayedLaunch

TEAM_A = Location("111111111111", "us-east-1")
TEAM_B = Location("222222222222", "us-west-2")
STRANGER = Location("333333333333", "us-east-1")
ENROLLED_REGIONS = ("us-east-1", "us-west-2")
OPTED_IN = {"trainguard:enabled": "true"}
# Team B's job: a line every 10 s, a checkpoint every hour (it resumed from one at launch); its collective hangs
# 25 minutes in, past its 20-minute startup grace.
HUNG = demo_job("nccl-allreduce", "ml.p5.48xlarge", 2, JobRhythm(log_every_seconds=10.0), checkpoint_every_minutes=60)
HANG = demo_fault(HUNG, FaultKind.HANG_BUSY_GPU, at_minutes=25)
HANG_MINUTES = 60  # 25 minutes of lines, the fixed 30 silent minutes, and the stop


def run_org_demo(say: Any = print) -> dict[str, Any]:
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    # As in Lambda (infra/guard_function.py): a spoke the hub cannot serve is counted, and a metric needs one.
    os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "TrainGuard")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    from trainguard.handlers.observability import metrics

    report: dict[str, Any] = {"hub": vars(HUB), "spokes": [vars(TEAM_A), vars(TEAM_B)], "outcomes": []}
    with organization((TEAM_A, TEAM_B), enrolled_regions=ENROLLED_REGIONS) as org:
        say(
            f"An organization in the stand-in (moto at {org.moto_url}): the hub in {HUB}, spokes in {TEAM_A} "
            f"and {TEAM_B}; {STRANGER.account} is not enrolled.\n"
        )
        inbox = subscribe_inbox(org)
        guard = _Hub(org, report, say)
        try:
            _act_hang(org, guard, say)
            _act_failure(org, guard, say)
            _act_quota_wall(org, guard, say)
            _act_stranger(org, guard, say)
        finally:
            metrics.clear_metrics()
        report["notifications"] = drain_queue(org.hub_client("sqs"), inbox)
        report["parked"] = len(org.hub_bus.parked)
        report["actions"] = actions_of(org, report)
        tell_actions(report, say)
    return report


class _Hub:
    """The hub's functions, invoked as its bus routes deliver (EventBridge -> Lambda)."""

    def __init__(self, org: Organization, report: dict[str, Any], say: Any) -> None:
        self.org, self.report, self.say = org, report, say
        self.ports = org.hub_ports()

    def deliver(self) -> list[dict[str, Any]]:
        from trainguard.handlers import failed_launches, job_events, log_activity, stall_alarms

        told = []
        for event in self.org.hub_bus.take("LogLines"):  # the spokes' log forwarders
            log_activity.handle(event, self.ports)
        for route, handle in (
            ("TrainingJobStates", job_events.handle),
            ("FailedLaunches", failed_launches.handle),
            ("StallAlarms", stall_alarms.handle),
        ):
            for event in self.org.hub_bus.take(route):
                outcome = handle(event, self.ports).as_dict()
                outcome.update(account=event["account"], region=event["region"])
                self.report["outcomes"].append(outcome)
                told.append(outcome)
                if outcome["kind"] not in ("skipped", "watching", "already-handled"):
                    new = f" -> {outcome['new_job_name']}" if outcome.get("new_job_name") else ""
                    self.say(
                        f"  hub {route}: {outcome['job_name']} in {outcome['account']} {outcome['region']}: "
                        f"{outcome['kind']}{new}\n    {textwrap.shorten(outcome['reason'], 150)}"
                    )
        return told


def _launch(spoke: Spoke, name: str, instance_type: str, count: int) -> tuple[str, str]:
    """The team's CreateTrainingJob, with a checkpoint already there: '' or the refusal ("Code: Message"), and
    the job's checkpoint prefix."""
    bucket = CHECKPOINT_BUCKETS[spoke.place.account]
    request = training_request(name, instance_type, count, OPTED_IN, bucket=bucket)
    request["RoleArn"] = training_role(spoke.place.account)
    uri = request["CheckpointConfig"]["S3Uri"]
    spoke.team.write_checkpoint(uri, "step-000400/model.pt")
    return spoke.team.launch(request), uri


def _act_hang(org: Organization, guard: _Hub, say: Any) -> None:
    spoke = org.spokes[TEAM_B]
    say(f"=== 1. A hang in team B's account ({TEAM_B}) ===")
    _, uri = _launch(spoke, HUNG.name, HUNG.instance_type, HUNG.instance_count)
    spoke.sagemaker.start_training(HUNG.name)
    guard.deliver()  # InProgress: the hub watches it, with its stall alarms in team B's account
    alarms = spoke.client("cloudwatch").describe_alarms(AlarmNamePrefix="trainguard-")["MetricAlarms"]
    say(f"  the hub put {len(alarms)} stall alarm(s) in team B's account: {', '.join(a['AlarmName'] for a in alarms)}")
    say(
        f"  it logs {cadence(HUNG.rhythm)}; at t+{HANG.strikes_at * 60:g} min its collective hangs: "
        f"{gpu_words(HANG.kind)}, no more lines"
    )
    kernel = Kernel(org.clock)
    launch = PlayedLaunch.of_job(HUNG.name, HUNG, spoke.team, org.clock, uri, since=kernel.now)
    launch.strike(HANG, kernel.now)
    kernel.spawn(_watch_hang(kernel, launch, guard, spoke, say), kernel.now)
    kernel.run()
    say("")


def _watch_hang(kernel: Kernel, launch: PlayedLaunch, guard: _Hub, spoke: Spoke, say: Any) -> Process:
    """Each minute as it ends: the job's GPUs and lines (its lines through team B's log forwarder to the hub),
    the hub's prober, CloudWatch in team B's account (its rule forwards an alarm to the hub), the stop."""
    from trainguard.handlers import stall_alarms, stall_prober

    org, told, forwarder = guard.org, False, _LogForwarder(guard.org, spoke)
    evaluator = LocalAlarmEvaluator(spoke.client("cloudwatch"), _EventSink(), org.clock)
    for minute in range(1, HANG_MINUTES + 1):
        yield Sleep(launch.activity.training_since + minute * MINUTE)
        training = spoke.sagemaker.describe(HUNG.name)["TrainingJobStatus"] == "InProgress"
        if training and (delivery := launch.play_until(kernel.now)) is not None:
            forwarder.forward(delivery)
            guard.deliver()
        if launch.activity.hung_at(kernel.now) and not told:
            [watched] = guard.ports.at(stall_alarms.build_ports, TEAM_B).stall_ledger.watched_job(HUNG.name)
            newest = watched.last_log_line
            say(f"  t+{minute} min: the hub has team B's newest line, through its log forwarder: {newest!r}")
            told = True
        # The prober, in every place the hub serves: in team B's account it publishes the job's log silence.
        stall_prober.handle({}, guard.ports)
        for event in evaluator.evaluate_all():
            org.forward(event)
        if any(o["kind"] == "stall-stopped" for o in guard.deliver()):
            say(f"  t+{minute} min: stopped in team B's account")
        spoke.sagemaker.settle_all()
        guard.deliver()


def _act_failure(org: Organization, guard: _Hub, say: Any) -> None:
    spoke = org.spokes[TEAM_A]
    say(f"=== 2. A failure in team A's account ({TEAM_A}) ===")
    _launch(spoke, "llama-pretrain", "ml.p5.48xlarge", 4)
    spoke.sagemaker.start_training("llama-pretrain")
    guard.deliver()
    spoke.sagemaker.fail("llama-pretrain", "InternalServerError: We encountered an internal error. Please try again.")
    guard.deliver()
    say("")


def _act_quota_wall(org: Organization, guard: _Hub, say: Any) -> None:
    spoke = org.spokes[TEAM_B]
    say(f"=== 3. A quota wall in team B's account ({TEAM_B}) ===")
    if refused := _launch(spoke, "gpt-finetune-p4d", "ml.p4d.24xlarge", 2)[0]:
        say(f"  team B's CreateTrainingJob: {refused[:150]}")
    guard.deliver()
    say("")


def _act_stranger(org: Organization, guard: _Hub, say: Any) -> None:
    from trainguard.handlers import job_events

    say(f"=== 4. An event from an account that is not enrolled ({STRANGER}) ===")
    event = _moved(_a_failure_event(org), STRANGER)
    before = len(org.hub_bus.parked)
    org.hub_bus.put(event)
    parked = len(org.hub_bus.parked) - before
    say(f"  the hub's bus: {'parked by the refused-events rule' if parked else 'routed'} ({parked} event)")
    outcome = job_events.handle(event, guard.ports).as_dict()  # as if the rule had let it through
    outcome.update(account=STRANGER.account, region=STRANGER.region)
    guard.report["outcomes"].append(outcome)
    say(
        f"  handed to the job-events function all the same: {outcome['kind']}: "
        + textwrap.shorten(outcome["reason"], 150)
    )
    say("")


def _a_failure_event(org: Organization) -> dict[str, Any]:
    """A training job's failure, as SageMaker sends it (team A's, built by its simulated SageMaker)."""
    from trainguard_local.stand_in.sagemaker_events import build_state_change_event

    spoke = org.spokes[TEAM_A]
    description = spoke.sagemaker.describe("llama-pretrain")
    return build_state_change_event(
        description,
        [{"Key": "trainguard:enabled", "Value": "true"}],
        account_id=TEAM_A.account,
        region=TEAM_A.region,
        time=org.clock(),
    )


def _moved(event: dict[str, Any], place: Location) -> dict[str, Any]:
    text = json.dumps(event).replace(f":{TEAM_A.region}:{TEAM_A.account}:", f":{place.region}:{place.account}:")
    moved: dict[str, Any] = json.loads(text)
    moved.update(account=place.account, region=place.region, id=str(uuid.uuid4()))
    return moved


class _LogForwarder:
    """Team B's log forwarder (infra/spoke_log_forwarder.py, the code the spoke stack puts in its template): each
    minute's delivery of the lines in the spoke's log group, as the subscription hands it to the forwarder, goes
    to the spoke's default bus, whose rule forwards it to the hub's bus."""

    def __init__(self, org: Organization, spoke: Spoke) -> None:
        from infra import spoke_log_forwarder
        from trainguard.events.log_subscription import SPOKE_LOG_DETAIL_TYPE, SPOKE_LOG_SOURCE

        os.environ.update(SOURCE=SPOKE_LOG_SOURCE, DETAIL_TYPE=SPOKE_LOG_DETAIL_TYPE)  # as the spoke stack sets them
        self.org, self.spoke, self.forward_delivery = org, spoke, spoke_log_forwarder.handler

    def forward(self, delivery: dict[str, Any]) -> None:
        """The subscription's delivery of the job's lines, handed to the forwarder (its bus: this object)."""
        self.forward_delivery(delivery, None, client=self)

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        """The spoke's default bus: each entry becomes an event from the spoke's account and region."""
        place, time = self.spoke.place, self.org.clock().strftime("%Y-%m-%dT%H:%M:%SZ")
        for entry in Entries:
            detail = json.loads(entry["Detail"])
            event = {"version": "0", "id": str(uuid.uuid4()), "detail-type": entry["DetailType"], "time": time}
            event.update(source=entry["Source"], account=place.account, region=place.region, resources=[])
            self.org.forward({**event, "detail": detail})
        return {"FailedEntryCount": 0, "Entries": [{"EventId": str(uuid.uuid4())} for _ in Entries]}


class _EventSink:
    """The spoke's default bus as the alarm evaluator puts events on it: each one is then forwarded by the
    spoke's rules (Organization.forward), with its account and region, which moto's forwarding would lose."""

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        return {"FailedEntryCount": 0, "Entries": [{"EventId": str(uuid.uuid4())} for _ in Entries]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m trainguard_local.demo.hub_and_spokes",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--json", type=Path, help="also write what happened as JSON to this file")
    args = parser.parse_args(argv)
    report = run_org_demo()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2, default=str))
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
