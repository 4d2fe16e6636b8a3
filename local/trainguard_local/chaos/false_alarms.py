"""False alarms on the fleet's world: CloudWatch sends a log-silence ALARM for a job that trains and logs. A share of
the launches that start training get one, 25-120 minutes in, if trainguard
has created the job's alarm and the job still runs. trainguard must judge it on the evidence (the job's lines and
GPUs up to the verdict, life_state.show_evidence) and leave the job alone."""

from __future__ import annotations

import random
from datetime import timedelta

from trainguard.domain.stalls import StallSignal, alarm_name
from trainguard_local.fleet.trainguard_run.event_delivery import HandlerCall
from trainguard_local.fleet.trainguard_run.world import FleetWorld
from trainguard_local.simulation.kernel import Kernel
from trainguard_local.stand_in.alarm_definitions import alarm_rule_of
from trainguard_local.stand_in.alarm_evaluation import OK, evaluate_alarm, period_starts
from trainguard_local.stand_in.alarm_state_events import (
    AlarmState,
    metric_configuration,
    metric_reason_data,
    state_change_event,
)

FALSE_ALARM_SHARE = 0.15  # of the launches that start training (an assumption)
FALSE_ALARM_MINUTES = (25.0, 120.0)  # into training


class FalseAlarms:
    def __init__(self, world: FleetWorld, kernel: Kernel, seed: int, share: float = FALSE_ALARM_SHARE) -> None:
        self._world, self._kernel, self._share = world, kernel, share
        self._rng = random.Random(f"{seed}/false-alarms")
        self._seen: set[str] = set()
        self.sent: list[tuple[float, str]] = []  # (kernel hours, SageMaker job) of each false alarm delivered

    def saw(self, call: HandlerCall) -> None:
        """A job event on its way to trainguard: a launch that starts training may get a false alarm."""
        detail = call.payload.get("detail", {}) if call.handler == "job_events" else {}
        name = detail.get("TrainingJobName", "")
        if detail.get("SecondaryStatus") != "Training" or name in self._seen:
            return
        self._seen.add(name)
        if self._rng.random() < self._share:
            minutes = self._rng.uniform(*FALSE_ALARM_MINUTES)
            self._kernel.after(timedelta(minutes=minutes), lambda: self._send(name), acting=self._world.acting)

    def _send(self, job: str) -> None:
        """An ALARM as CloudWatch sends it (stand_in/alarm_state_events.py), its datapoints breaching the threshold
        although the job logs: the reason, reason data and configuration of a real crossing."""
        world = self._world
        if world.plane.describe(job)["TrainingJobStatus"] != "InProgress":
            return
        found = world.world["cloudwatch"].describe_alarms(AlarmNames=[alarm_name(StallSignal.LOG_SILENCE, job)])
        if not found["MetricAlarms"]:
            return
        alarm, now = found["MetricAlarms"][0], world.clock.now
        rule = alarm_rule_of(alarm)
        breaching = rule.threshold + (1.0 if rule.comparison.startswith("Greater") else -1.0)
        result = evaluate_alarm(rule, dict.fromkeys(period_starts(rule, now), breaching), now, OK)
        new = AlarmState(result.state, result.reason, metric_reason_data(alarm, rule, result, now), now)
        previous = AlarmState(OK, alarm.get("StateReason", ""), alarm.get("StateReasonData"), now)
        self.sent.append((self._kernel.now, job))
        event = state_change_event(alarm, new, previous, metric_configuration(alarm))
        world.deliver_alarm({**event, "id": f"false-alarm-{len(self.sent)}"})
