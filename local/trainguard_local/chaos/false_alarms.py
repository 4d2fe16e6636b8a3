"""False alarms on the fleet's world: CloudWatch sends a log-silence ALARM for a job that trains and logs. A share of
the launches that start training get one, 25-120 minutes in (the replay's evidence.py drew the same), if trainguard
has created the job's alarm and the job still runs. trainguard must judge it on the evidence (the job's lines and
GPUs up to the verdict, life_state.show_evidence) and leave the job alone."""

from __future__ import annotations

import random
from datetime import timedelta

from trainguard.domain.stalls import StallSignal, alarm_name
from trainguard_local.fleet.trainguard_run.event_delivery import HandlerCall
from trainguard_local.fleet.trainguard_run.world import FleetWorld
from trainguard_local.simulation.kernel import Kernel
from trainguard_local.stand_in.alarm_state_events import EVENT_DETAIL_TYPE, EVENT_SOURCE, aws_time

FALSE_ALARM_SHARE = 0.15  # of the launches that start training (an assumption, as the replay's)
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
        world = self._world
        if world.plane.describe(job)["TrainingJobStatus"] != "InProgress":
            return
        found = world.world["cloudwatch"].describe_alarms(AlarmNames=[alarm_name(StallSignal.LOG_SILENCE, job)])
        if not found["MetricAlarms"]:
            return
        alarm, now = found["MetricAlarms"][0], world.clock.now
        state = {
            "value": "ALARM",
            "reason": "Threshold Crossed: 1 datapoint [0.0] was >= the threshold (0.0).",
            "timestamp": aws_time(now),
        }
        _, _, _, region, account, *_ = alarm["AlarmArn"].split(":")
        self.sent.append((self._kernel.now, job))
        world.deliver_alarm(
            {
                "version": "0",
                "id": f"false-alarm-{len(self.sent)}",
                "detail-type": EVENT_DETAIL_TYPE,
                "source": EVENT_SOURCE,
                "account": account,
                "time": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "region": region,
                "resources": [alarm["AlarmArn"]],
                "detail": {
                    "alarmName": alarm["AlarmName"],
                    "state": state,
                    "previousState": {**state, "value": "OK", "reason": "Threshold Crossed"},
                    "configuration": {"description": alarm.get("AlarmDescription", "")},
                },
            }
        )
