import itertools

import pytest

from tests.tools.fleet.cases import STARTUP, job
from trainguard_local.fleet.model import JobTimeline, State, newest_checkpoint


@pytest.mark.parametrize(
    ("progress", "every_minutes", "checkpoint"),
    [(1.9, 30, 1.5), (1.5, 30, 1.5), (0.2, 15, 0.0), (0.0, 60, 0.0), (2.99, 60, 2.0), (1.0, 20, 1.0)],
)
def test_newest_checkpoint(progress, every_minutes, checkpoint):
    assert newest_checkpoint(progress, every_minutes) == pytest.approx(checkpoint)


def test_a_failure_at_1_9_hours_with_30_minute_checkpoints_loses_0_4_hours_and_resumes_at_1_5():
    timeline = JobTimeline(job(checkpoint_every_minutes=30), "test")
    timeline.launch(new_job=True)
    timeline.start()
    assert timeline.train_to(1.9)
    timeline.lose_work_since_checkpoint()
    assert timeline.lost_work == pytest.approx(0.4)
    timeline.launch(new_job=True)
    assert timeline.progress == pytest.approx(1.5)
    timeline.start()
    timeline.train_to(10.0)
    timeline.complete()
    outcome = timeline.outcome()
    assert outcome.kept_progress_hours == 10.0 and outcome.lost_work_hours == pytest.approx(0.4)
    training = sum(s.hours for s in outcome.segments if s.state is State.TRAINING)
    assert training == pytest.approx(10.4)  # every hour trained is kept or lost


def test_only_starting_training_and_hung_are_billed():
    spec = job(instance_count=2)
    timeline = JobTimeline(spec, "test")
    timeline.launch(new_job=True)
    timeline.wait_until(State.QUEUED, timeline.now + 1.0)
    timeline.start()
    timeline.train_to(2.0)
    assert timeline.hang_until(timeline.now + 0.5)
    timeline.lose_work_since_checkpoint()
    timeline.wait_until(State.WAITING_FOR_PERSON, timeline.now + 3.0)
    timeline.wait_until(State.WAITING_FOR_QUOTA, timeline.now + 2.0)
    outcome = timeline.outcome()
    assert outcome.billed_instance_hours == pytest.approx((STARTUP + 2.0 + 0.5) * 2)
    assert outcome.hung_hours == pytest.approx(0.5)
    assert [s.state for s in outcome.segments] == [
        State.QUEUED,
        State.STARTING,
        State.TRAINING,
        State.HUNG,
        State.WAITING_FOR_PERSON,
        State.WAITING_FOR_QUOTA,
    ]
    assert all(a.end == b.start for a, b in itertools.pairwise(outcome.segments))
    assert outcome.completed_at is None and outcome.completion_delay_hours is None


def test_max_runtime_stops_training_and_hangs_and_is_reset_by_a_new_job_only():
    timeline = JobTimeline(job(max_runtime_hours=3.0), "test")
    timeline.launch(new_job=True)
    timeline.start()
    assert not timeline.train_to(5.0)
    assert timeline.progress == pytest.approx(3.0 - STARTUP)
    assert not timeline.hang_until(timeline.now + 1.0)
    timeline.launch(new_job=False)  # SageMaker's own retry: the same job, the same MaxRuntime
    assert timeline.runtime_left == pytest.approx(0.0)
    timeline.launch(new_job=True)
    assert timeline.runtime_left == pytest.approx(3.0)


def test_wasted_figures_of_one_outcome():
    timeline = JobTimeline(job(instance_count=4, gpus_per_instance=8, price_per_instance_hour=10.0), "test")
    timeline.launch(new_job=True)
    timeline.start()
    timeline.train_to(1.9)
    timeline.hang_until(timeline.now + 1.0)
    timeline.lose_work_since_checkpoint()
    outcome = timeline.outcome()
    assert outcome.wasted_gpu_hours == pytest.approx((1.0 + 0.4) * 4 * 8)
    assert outcome.wasted_dollars == pytest.approx((1.0 + 0.4) * 4 * 10.0)
