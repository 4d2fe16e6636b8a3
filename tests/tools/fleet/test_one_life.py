"""The anchors' figures do not move when their job life changes: every outcome on the standard trace (200 jobs,
72 h, seed 7, as `make bench` runs it) and on seeds 1-20 hashes to what the life gave before issue 25 put both
lives on one (fleet/life.py). A change that moves a figure on purpose updates `RECORDED` and says why."""

import hashlib

import pytest

from trainguard_local.fleet.anchors import anchor_strategies
from trainguard_local.fleet.model import JobOutcome
from trainguard_local.simulation.trace import generate_trace

TRACES = [(200, 72.0, seed) for seed in (7, *range(1, 21))]
RECORDED = {  # sha256 of the outcomes' repr, at 156e5aa (before the one life)
    "none": "009f695f65441a65574f504adf16608005b6758493af530280a0fc5ef85487ea",
    "sagemaker_retry": "0e9622310d7b51cc9764ec446b725c2435591ff9c922d797414187845f08d744",
    "debugger_rule": "339664492c693ca7af4d7dc96f29de906fdccba61546c7d6e606cd0cc9ecba04",
    "aws_batch": "d90403f44c732c6634b09a23bbf18bd2965b9a926dd62bc53aee71e184f30ed0",
}


def outcomes_digest(outcomes: list[JobOutcome]) -> str:
    """Every float bit for bit: the segments, detections, actions, recoveries and totals, job by job."""
    rows = [
        (
            o.strategy,
            o.job.name,
            o.segments,
            o.detections,
            o.actions,
            o.recoveries,
            o.kept_progress_hours,
            o.lost_work_hours,
            o.hung_hours,
            o.billed_instance_hours,
            o.completed_at,
        )
        for o in outcomes
    ]
    return hashlib.sha256(repr(rows).encode()).hexdigest()


@pytest.mark.parametrize("strategy", anchor_strategies(), ids=lambda s: s.name)
def test_an_anchors_outcomes_are_those_recorded(strategy):
    traces = [generate_trace(jobs, hours, seed) for jobs, hours, seed in TRACES]
    digest = hashlib.sha256("".join(outcomes_digest(strategy.run(trace)) for trace in traces).encode()).hexdigest()
    assert digest == RECORDED[strategy.name]
