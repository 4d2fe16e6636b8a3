"""The person on call: who acts where no strategy does, in every strategy alike.

Every strategy meets the same person: the k-th response time drawn for a job is the same draw in
every strategy (common random numbers, seeded by the trace's seed and the job's name), so the
differences come from the strategies, not from luck.
"""

from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass

PERSON = "person"  # the actor of the person's detections and actions in a timeline


@dataclass(frozen=True)
class PersonOnCall:
    """The person who acts where no strategy does. Assumptions: a lognormal response time with a
    median of 4 hours and sigma 0.8 (p95 about 15 h; the issue's example median), cut at a day (someone
    looks at every job at least daily: the cut favours the anchors), the same for every incident (a
    failure, a stop, a hang, an approved quota); a user's error (code, memory) takes `fix_hours` more
    to fix before the relaunch."""

    median_response_hours: float = 4.0
    response_sigma: float = 0.8
    longest_response_hours: float = 24.0
    fix_hours: float = 1.0

    def response_hours(self, rng: random.Random) -> float:
        drawn = rng.lognormvariate(math.log(self.median_response_hours), self.response_sigma)
        return min(drawn, self.longest_response_hours)

    def parameters(self) -> dict[str, float]:
        """The assumptions, as each strategy's report names them."""
        return {f"person_{name}": value for name, value in asdict(self).items()}


def person_rng(seed: int, job_name: str) -> random.Random:
    """The person's draws for one job: the same sequence in every strategy."""
    return random.Random(f"{seed}/{job_name}/person")
