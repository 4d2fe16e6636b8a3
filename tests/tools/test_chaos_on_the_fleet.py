"""The chaos suite's faults on the fleet's world (chaos/fleet_deliveries.py; docs/design-chaos-on-the-fleet-world.md,
step 4): each event delivered 1-3 times and late, Lambda's retries after a function error, faults on every call
trainguard makes, and processes dying right after their side effects."""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.tools.fleet.cases import PERSON, fault, four_faults, job, trace_of, trace_of_many
from trainguard.adapters.job_activity import GPU_NAMESPACE
from trainguard_local.chaos.call_faults import FAULT_KINDS, PROCESS_DEATH, FaultRates
from trainguard_local.chaos.fleet_deliveries import ChaosOnTheFleet
from trainguard_local.chaos.user_tags import UserChoice, with_user_tags, with_walls_at_first_launch
from trainguard_local.fleet.anchors import no_guard
from trainguard_local.fleet.model import JobOutcome
from trainguard_local.fleet.trainguard_run.job_logs import JobLogs
from trainguard_local.fleet.trainguard_run.world import fleet_world
from trainguard_local.fleet.trainguard_strategy import TrainguardStrategy
from trainguard_local.simulation.fault_table import FaultKind
from trainguard_local.simulation.trace import generate_trace

pytestmark = pytest.mark.slow


def actions(outcomes: list[JobOutcome]) -> list[list[tuple[str, str, bool, bool]]]:
    return [[(a.kind.value, a.actor, a.right, a.succeeded) for a in o.actions] for o in outcomes]


def test_under_call_and_delivery_faults_trainguard_acts_as_on_time_once_per_action() -> None:
    """A relaunch, a scheduled relaunch, a quota wall and a hang, with a fifth of trainguard's call attempts
    faulted and a process dying after each of its side effects once: the same actions by the same actors, none
    counted twice (a create or stop retried after its answer was lost, or after its process died, is refused by
    SageMaker as done already: one action)."""
    trace = four_faults()
    on_time = TrainguardStrategy(person=PERSON).run(trace)
    chaos = ChaosOnTheFleet(rates=FaultRates(per_attempt=0.2, process_death=1.0))
    strategy = TrainguardStrategy(person=PERSON, delivery=chaos)
    under_chaos = strategy.run(trace)

    assert strategy.last_run is not None and strategy.last_run.problems == [] and strategy.last_run.notes == {}
    assert actions(under_chaos) == actions(on_time)
    done = chaos.last
    assert done is not None
    assert all(done.injector.injected[kind] > 0 for kind in (*FAULT_KINDS, PROCESS_DEATH))
    assert done.runtime.cold_starts == 1 + done.injector.injected[PROCESS_DEATH]  # a death rebuilds the ports
    log = done.deliveries.log
    assert log.copies > len(log.events)  # some events came more than once
    assert any(not attempt.ok and attempt.retry_at for attempt in log.attempts)  # Lambda retried a failed attempt
    assert all(log.handled(event) for event in log.events) and done.runtime.dead_letters == []


def test_the_users_tags_take_each_path_of_the_opt_in_on_the_fleets_world() -> None:
    """Not opted in: trainguard does nothing and the person relaunches; dry run: trainguard only tells; max-retries
    1 on a capacity error that repeats: one relaunch, then the limit's notice (the person's relaunch is a new job)."""
    a, b, c = (job(name=f"job-{n}") for n in "abc")
    choices = {
        "job-a": UserChoice(enabled=False),
        "job-b": UserChoice(dry_run=True),
        "job-c": UserChoice(max_retries="1"),
    }
    trace = trace_of_many(
        (a, fault(a, FaultKind.INTERNAL_ERROR, 2.2)),
        (b, fault(b, FaultKind.INTERNAL_ERROR, 2.2)),
        (c, fault(c, FaultKind.CAPACITY_ERROR, 0.0, repeats=3)),
    )
    tagged = replace(
        trace, jobs=tuple(replace(s, owner_tags=tuple(choices[s.name].tags().items())) for s in trace.jobs)
    )
    strategy = TrainguardStrategy(person=PERSON)
    not_opted_in, dry_run, limited = strategy.run(tagged)

    assert strategy.last_run is not None and strategy.last_run.problems == [] and strategy.last_run.notes == {}
    assert [(a.kind.value, a.actor) for a in not_opted_in.actions] == [("relaunch", "person")]
    assert [(a.kind.value, a.actor, a.note) for a in dry_run.actions] == [
        ("notify", "trainguard", "not-relaunched"),
        ("relaunch", "person", "from the newest checkpoint"),
    ]
    assert [(a.kind.value, a.actor, a.note) for a in limited.actions][:3] == [
        ("relaunch", "trainguard", "job-c-retry1"),
        ("notify", "trainguard", "not-relaunched"),  # job-c-retry1 failed again: the limit of 1 is reached
        ("relaunch", "person", "from the newest checkpoint"),
    ]


def test_the_users_tags_are_drawn_in_the_stated_shares_and_keep_what_the_jobs_had() -> None:
    trace = generate_trace(1000, 24.0, 3)
    tagged = with_user_tags(trace)
    tags = [dict(spec.owner_tags) for spec in tagged.jobs]
    not_opted_in = sum(t["trainguard:enabled"] == "false" for t in tags) / len(tags)
    dry_run = sum(t.get("trainguard:actions") == "notify" for t in tags) / len(tags)
    limits = Counter(t.get("trainguard:max-retries", "") for t in tags)
    assert 0.07 < not_opted_in < 0.13 and 0.025 < dry_run < 0.07
    assert limits[""] > limits["2"] > limits["1"] > 0.1 * len(tags)
    assert with_user_tags(trace) == tagged  # one seed, one draw
    assert [replace(s, owner_tags=()) for s in tagged.jobs] == [replace(s, owner_tags=()) for s in trace.jobs]


def test_a_poisoned_jobs_events_wait_in_the_dead_letter_queue_until_the_operators_redrive_relaunches_it() -> None:
    """Every SageMaker call of trainguard's naming job-a is refused until the operator, told by the dead-letter
    queue's alarm, grants the permission and redrives: job-a's failure waits there, and trainguard relaunches it
    after the redrive (the person, four hours away, has not acted); job-b is relaunched as on time."""
    a, b = job(name="job-a"), job(name="job-b")
    trace = trace_of_many((a, fault(a, FaultKind.INTERNAL_ERROR, 0.05)), (b, fault(b, FaultKind.INTERNAL_ERROR, 0.05)))
    [on_time_a, on_time_b] = TrainguardStrategy(person=PERSON).run(trace)
    chaos = ChaosOnTheFleet(rates=FaultRates(per_attempt=0.0, storm_start=0.0, process_death=0.0), poisoned="job-a")
    strategy = TrainguardStrategy(person=PERSON, delivery=chaos)
    poisoned, healthy = strategy.run(trace)

    assert strategy.last_run is not None and strategy.last_run.problems == [] and strategy.last_run.notes == {}
    assert chaos.last is not None
    dead_letters = chaos.last.runtime.dead_letters
    assert dead_letters and {function for _, function, _ in dead_letters} == {"job-events"}
    assert all("job-a" in str(invocation.payload) for _, _, invocation in dead_letters)
    [relaunch] = poisoned.actions
    assert (relaunch.kind.value, relaunch.actor) == ("relaunch", "trainguard")
    [redrive] = chaos.last.operator.responses  # one fix and redrive, 30 minutes after the first dead letter
    assert relaunch.at >= redrive > on_time_a.actions[0].at  # at the redrive, not at the failure
    assert [(a.kind.value, a.actor) for a in healthy.actions] == [(a.kind.value, a.actor) for a in on_time_b.actions]
    assert chaos.last.operator.redriven == len(dead_letters)
    assert all(chaos.last.deliveries.log.handled(invocation.event_key) for _, _, invocation in dead_letters)
    assert set(chaos.last.left_in_queues.values()) == {0}


def test_a_false_alarm_is_judged_on_what_the_job_logged_and_ran_and_stops_nothing() -> None:
    """Every launch that trains gets a log-silence ALARM while it logs; before each verdict the job shows its lines
    and GPUs up to then (as CloudWatch would hold them), so trainguard finds it logging and leaves it alone: the same
    actions as on time, and no stop that was not a hang's. Without the job's evidence shown, trainguard reads a
    silence the job never had and stops healthy jobs."""
    trace = four_faults()
    on_time = TrainguardStrategy(person=PERSON).run(trace)
    chaos = ChaosOnTheFleet(
        rates=FaultRates(per_attempt=0.0, storm_start=0.0, process_death=0.0), false_alarm_share=1.0
    )
    strategy = TrainguardStrategy(person=PERSON, delivery=chaos)
    under_chaos = strategy.run(trace)

    assert chaos.last is not None and len(chaos.last.false_alarms.sent) >= 4  # each launch that trained long enough
    assert strategy.last_run is not None and strategy.last_run.problems == [] and strategy.last_run.notes == {}
    assert actions(under_chaos) == actions(on_time)
    verdicts = [o.reason for _, handler, o in strategy.last_run.handler_outcomes if handler == "stall_alarms"]
    assert sum("within its limit" in reason for reason in verdicts) >= len(chaos.last.false_alarms.sent)


def test_a_handler_that_raises_with_no_fault_injected_is_a_problem_of_the_run_though_lambda_retries_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Lambda's retries absorb a handler's error; the run still reports it, unless a fault was injected into that
    attempt (then the error is the fault's) or it is the product's own StepInProgress."""
    from trainguard.handlers import stall_prober

    handle, raised = stall_prober.handle, []

    def raises_once(event: Any, ports: Any) -> Any:
        if not raised:
            raised.append(True)
            raise RuntimeError("a bug in the prober")
        return handle(event, ports)

    monkeypatch.setattr(stall_prober, "handle", raises_once)
    chaos = ChaosOnTheFleet(rates=FaultRates(per_attempt=0.0, storm_start=0.0, process_death=0.0), false_alarm_share=0)
    strategy = TrainguardStrategy(person=PERSON, delivery=chaos)
    strategy.run(four_faults())
    assert strategy.last_run is not None and len(strategy.last_run.problems) == 1
    assert "a bug in the prober" in strategy.last_run.problems[0]


def test_a_jobs_gpus_are_shown_from_its_activity_after_what_a_window_wrote() -> None:
    """What a verdict outside a window reads: each host's GPUUtilization a minute, as the launch's activity has it
    (a slow host reads low, the others wait on it), stamped at the half minute as the windows stamp theirs, never
    over the minutes a window wrote (CloudWatch would take the higher of two datapoints of one minute)."""
    spec = job(instance_count=2)
    with fleet_world(datetime(2026, 1, 5, tzinfo=UTC)) as world:
        logs = JobLogs(spec, world, lambda: "job-a")
        logs.start_launch(training_since=1.0, progress=0.0)
        logs.activity.strike(FaultKind.DEGRADED_HOST, 1.2, factor=2.0, slow_host=1)
        logs.gpus_written_to = 70  # a window wrote the minutes up to 01:10
        world.clock.set_hours(1.5)
        logs.show_until(1.5, look_back_minutes=60)

        def datapoints(host: int) -> dict[datetime, float]:
            found = world.world["cloudwatch"].get_metric_statistics(
                Namespace=GPU_NAMESPACE,
                MetricName="GPUUtilization",
                Dimensions=[{"Name": "Host", "Value": f"job-a/algo-{host}"}],
                StartTime=world.clock.at_hours(0.5),
                EndTime=world.clock.at_hours(2.0),
                Period=60,
                Statistics=["Maximum"],
            )["Datapoints"]
            return {point["Timestamp"].astimezone(UTC): point["Maximum"] for point in found}

        shown = {host: datapoints(host + 1) for host in (0, 1)}
    minutes = sorted(shown[0])
    assert minutes == sorted(shown[1]) == [world.clock.at_hours((m + 0.5) / 60) for m in range(71, 90)]  # 01:11:30-
    for host, points in shown.items():
        assert points == {at: logs.activity.gpu_per_host(world.clock.hours_of(at), host) for at in minutes}
    slowed = world.clock.at_hours(1.25 + 0.5 / 60)
    assert shown[0][slowed] != shown[1][slowed] and shown[0][minutes[0]] == shown[1][minutes[0]]  # one host slow


def test_each_verdict_finds_in_cloudwatch_logs_the_newest_line_the_subscription_had(monkeypatch: Any) -> None:
    """A job that logs every 10 minutes and writes its checkpoints in silence gets a false alarm in its first two
    hours, as does its relaunch (its evidence is shown before the verdict: life_state.show_evidence), and hangs at
    3 h (its stall window opens after its last line). Each time, the newest line the world delivered to the log
    subscription is in CloudWatch Logs right after, where the stall verdict's FilterLogEvents finds it
    (adapters/job_activity.py; to the millisecond, as PutLogEvents keeps it), however late its delivery came."""
    from trainguard.adapters.job_activity import JobLogs as VerdictLogs
    from trainguard.adapters.stall_ledger import StallLedger
    from trainguard.domain.watched_job import verdict_look_back
    from trainguard_local.simulation.rhythm import JobRhythm

    written = JobLogs.write_newest_delivered
    found: list[tuple[str, bool]] = []  # (the caller, whether it looked back as the verdict does and wrote its line)

    def checked(logs: JobLogs, look_back_minutes: float) -> None:
        ledger = StallLedger(logs.world.world["dynamodb"], logs.world.config.ledger_table_name)
        window = verdict_look_back(
            logs.world.config.stall_defaults, next(iter(ledger.watched_job(logs.running())), None)
        )
        same_window = look_back_minutes == window / timedelta(minutes=1)  # the verdict's own (stall_alarm.py)
        written(logs, look_back_minutes)
        after = logs.delivered_until - look_back_minutes / 60
        lines = logs.lines(after, logs.delivered_until)
        if not lines:  # none delivered in the look-back: nothing to find
            return
        newest, _ = VerdictLogs(logs.world.world["logs"]).newest_event(logs.running(), logs.world.clock.at_hours(after))
        line_at = logs.world.clock.at_hours(lines[-1][0])
        in_milliseconds = line_at.replace(microsecond=line_at.microsecond // 1000 * 1000)
        found.append((sys._getframe(1).f_code.co_name, same_window and newest == in_milliseconds))

    monkeypatch.setattr(JobLogs, "write_newest_delivered", checked)
    # its lines reach the subscription before each checkpoint's silent write, whose length the guard checks
    spec = job(rhythm=JobRhythm(log_every_seconds=600.0, checkpoint_write_minutes=4.0), uses_debugger_hook=False)
    chaos = ChaosOnTheFleet(
        rates=FaultRates(per_attempt=0.0, storm_start=0.0, process_death=0.0), false_alarm_share=1.0
    )
    strategy = TrainguardStrategy(person=PERSON, delivery=chaos)
    [outcome] = strategy.run(trace_of_many((spec, fault(spec, FaultKind.HANG_IDLE_GPU, 3.0))))

    assert chaos.last is not None and chaos.last.false_alarms.sent[0][1] == "job-a"  # and its relaunch's
    assert [(a.kind.value, a.actor) for a in outcome.actions][:1] == [("stop", "trainguard")]
    assert {caller for caller, _ in found} == {"show_until", "open_stall_window"}
    assert all(ok for _, ok in found)


def test_a_users_first_launch_a_quota_refuses_reaches_failed_launches_and_is_launched_after_the_increase() -> None:
    """A quota wall at work 0 stands before the job's first launch: the user's CreateTrainingJob is refused and no job
    is created. With the stack's CloudTrail rule (the chaos run deploys it), CloudTrail's record reaches
    failed-launches, delivered 1-3 times: one increase request at once, and the quota check launches the user's
    request under its name once Service Quotas approves it (6 h) at its next quarter hour. Without the rule (the
    benchmark's stack), nothing reaches trainguard: the person meets the wall, as in every anchor."""
    spec = job(name="job-a")
    quota = "ml.p4d.24xlarge for training job usage"
    wall = fault(spec, FaultKind.QUOTA_WALL, 0.0, quota_name=quota, quota_approval_hours=6.0)
    trace = trace_of(spec, replace(wall, strikes_at=spec.submitted_at, launch_refusal="ResourceLimitExceeded"))
    chaos = ChaosOnTheFleet(rates=FaultRates(per_attempt=0.0, storm_start=0.0, process_death=0.0), false_alarm_share=0)
    strategy = TrainguardStrategy(person=PERSON, delivery=chaos)
    [watched] = strategy.run(trace)

    assert strategy.last_run is not None and strategy.last_run.problems == [] and strategy.last_run.notes == {}
    assert strategy.last_run.outcome_kinds["failed_launches:quota-wall"] == 1
    assert strategy.last_run.calls["service-quotas:RequestServiceQuotaIncrease"] == 1
    [request, launch] = watched.actions
    assert (request.kind.value, request.actor, request.target) == ("quota_request", "trainguard", quota)
    assert request.at == pytest.approx(spec.submitted_at, abs=0.05)  # as CloudTrail's record came
    assert (launch.kind.value, launch.actor, launch.note, launch.at) == ("relaunch", "trainguard", "job-a", 7.25)

    [by_the_person] = TrainguardStrategy(person=PERSON).run(trace)
    [by_no_guard] = no_guard(PERSON).run(trace)
    assert actions([by_the_person]) == actions([by_no_guard])
    assert [(a.kind.value, a.actor, a.at) for a in by_no_guard.actions] == [
        ("relaunch", "person", 5.0),  # refused: the wall stands
        ("quota_request", "person", 5.0),
        ("relaunch", "person", 15.0),  # after the approval (6 h) and the person's response (4 h)
    ]


def test_every_other_quota_wall_of_a_chaos_trace_stands_before_its_first_launch() -> None:
    trace = generate_trace(200, 24.0, 3)
    moved = with_walls_at_first_launch(trace)
    walls = [(before, after) for before, after in zip(trace.faults, moved.faults, strict=True) if before != after]
    all_walls = [f for f in trace.faults if f.kind is FaultKind.QUOTA_WALL]
    assert len(all_walls) > 2 and len(walls) == (len(all_walls) + 1) // 2
    submitted = {spec.name: spec.submitted_at for spec in trace.jobs}
    for before, after in walls:
        assert before.kind is FaultKind.QUOTA_WALL and before.at_work_hours > 0
        assert (after.at_work_hours, after.strikes_at) == (0.0, submitted[after.job_name])
        assert replace(after, at_work_hours=before.at_work_hours, strikes_at=before.strikes_at) == before
    assert walls[0][0] == all_walls[0]


@pytest.mark.parametrize(
    ("case", "job_changes", "wall_changes", "expected"),
    [
        (  # dry run: told at once, the launch kept nowhere; the person meets the wall from then
            "dry run",
            {"owner_tags": (("trainguard:actions", "notify"),)},
            {},
            [("notify", "trainguard", 1.0), ("relaunch", "person", 5.0), ("quota_request", "person", 5.0)],
        ),
        (  # an alternative whose quota has room: launched on it at once, the increase asked all the same
            "alternative",
            {"fallback_types": (("ml.p5.48xlarge", 4),)},
            {"alternatives_with_quota_room": ("ml.p5.48xlarge",)},
            [("quota_request", "trainguard", 1.0), ("relaunch", "trainguard", 1.0)],
        ),
        (  # not opted in: failed-launches skips it, the person meets the wall
            "not opted in",
            {"owner_tags": (("trainguard:enabled", "false"),)},
            {},
            [("relaunch", "person", 5.0), ("quota_request", "person", 5.0), ("relaunch", "person", 15.0)],
        ),
        (  # a pipeline's launch: left to its owner, who is told; nothing requested, nothing launched
            "a parent's",
            {"owner": "pipelines"},
            {},
            [("notify", "trainguard", 1.0), ("relaunch", "person", 5.0), ("quota_request", "person", 5.0)],
        ),
    ],
)
def test_a_first_launch_wall_is_left_to_the_person_unless_trainguard_launched_it_or_keeps_it_waiting(
    case: str, job_changes: dict[str, Any], wall_changes: dict[str, Any], expected: list[tuple[str, str, float]]
) -> None:
    """What failed-launches keeps decides what the life waits for (endings.wait_for_quota): a launch it made at once
    is taken, one it holds waiting is waited for, and with neither the person acts a response time after being
    told, never the quota wait's 72 hours later. The audit counts the wall only where trainguard may act."""
    from trainguard_local.chaos.audit import _quota_walls
    from trainguard_local.chaos.chaos_run import ChaosSettings, _record
    from trainguard_local.chaos.delivery_audit import Audit

    spec = job(name="job-a", **job_changes)
    wall = fault(spec, FaultKind.QUOTA_WALL, 0.0, quota_name="ml.p4d.24xlarge for training job usage", **wall_changes)
    trace = trace_of(spec, replace(wall, strikes_at=spec.submitted_at, quota_approval_hours=6.0))
    chaos = ChaosOnTheFleet(rates=FaultRates(per_attempt=0.0, storm_start=0.0, process_death=0.0), false_alarm_share=0)
    audit = Audit()
    strategy = TrainguardStrategy(
        person=PERSON,
        delivery=chaos,
        inspect=lambda world, lives: _quota_walls(_record(ChaosSettings(), trace, world, lives, chaos), audit),
    )
    [outcome] = strategy.run(trace)

    assert strategy.last_run is not None and strategy.last_run.problems == [] and strategy.last_run.notes == {}
    assert [(a.kind.value, a.actor, round(a.at)) for a in outcome.actions][: len(expected)] == expected, case
    assert audit.violations == []
    walls = audit.figures["quota_walls"]
    assert walls["users_launches_refused"] == 1
    assert walls["of_them_trainguard_may_act_on"] == walls["launched_after_increase"] == (case == "alternative")
