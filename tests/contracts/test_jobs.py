"""Jobs: FakeJobs and adapters/sagemaker.py's SageMakerJobs on the simulated SageMaker (local/trainguard_local)
served on 127.0.0.1; moto's SageMaker has no ResourceInUse, no status texts on a second stop."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any, Protocol

import pytest

from tests.contracts.conftest import IMPLEMENTATIONS, local_client
from tests.fakes import NOW, FakeJobs, training_spec
from trainguard.adapters.sagemaker import SageMakerJobs
from trainguard.domain.model import TrainingJob
from trainguard.workflows.ports import (
    JobFinder,
    JobLauncher,
    JobNotFound,
    JobStopper,
    LaunchRefused,
    LaunchResult,
    NameTaken,
)
from trainguard_local.simulation.clock import SimClock
from trainguard_local.stand_in.sagemaker_control_plane import SimulatedSageMaker
from trainguard_local.stand_in.sagemaker_server import SageMakerServer

RETRY_OF = "trainguard:retry-of"


class Jobs(JobLauncher, JobStopper, JobFinder, Protocol):
    """The adapter's whole surface: every narrow jobs port it serves."""


LIMIT = "The account-level service limit 'ml.p4d.24xlarge for training job usage' is 0 Instances"


def relaunch(name: str = "llama-pretrain-retry1", retry_of: str = "llama-pretrain", **changes: Any) -> dict[str, Any]:
    request: dict[str, Any] = {
        "TrainingJobName": name,
        **training_spec("ml.g5.12xlarge", 2),
        "CheckpointConfig": {"S3Uri": "s3://ckpt-bucket/llama-pretrain/", "LocalPath": "/opt/ml/checkpoints"},
        "Tags": [{"Key": "trainguard:enabled", "Value": "true"}, {"Key": RETRY_OF, "Value": retry_of}],
    }
    return {**request, **changes}


@pytest.fixture
def simulated_sagemaker() -> Iterator[SageMakerServer]:
    plane = SimulatedSageMaker(clock=SimClock(NOW), instance_limits={"ml.p4d.24xlarge": 0})
    with SageMakerServer(plane) as server:
        yield server


@pytest.fixture(params=IMPLEMENTATIONS)
def jobs(request: pytest.FixtureRequest) -> Jobs:
    if request.param == "fake":
        fake = FakeJobs()
        fake.refused_types["ml.p4d.24xlarge"] = LaunchRefused("ResourceLimitExceeded", LIMIT)  # as the account's
        return fake
    server = request.getfixturevalue("simulated_sagemaker")
    return SageMakerJobs(local_client("sagemaker", server.endpoint_url))


def test_a_job_that_does_not_exist_is_not_found(jobs: Jobs) -> None:
    assert jobs.describe("never-created") == JobNotFound("never-created")


def test_a_created_job_is_described_with_its_tags(jobs: Jobs) -> None:
    assert jobs.create(relaunch(), "llama-pretrain", RETRY_OF) is LaunchResult.CREATED
    job = jobs.describe("llama-pretrain-retry1")
    assert isinstance(job, TrainingJob)
    assert (job.name, job.status, job.secondary_status) == ("llama-pretrain-retry1", "InProgress", "Starting")
    assert job.arn.endswith(":training-job/llama-pretrain-retry1")
    assert job.tags == {"trainguard:enabled": "true", RETRY_OF: "llama-pretrain"}
    assert job.checkpoint_s3_uri == "s3://ckpt-bucket/llama-pretrain/" and not job.is_terminal
    assert job.description["ResourceConfig"] == relaunch()["ResourceConfig"]


def test_creating_again_for_the_same_failure_finds_it_already_there(jobs: Jobs) -> None:
    jobs.create(relaunch(), "llama-pretrain", RETRY_OF)
    assert jobs.create(relaunch(), "llama-pretrain", RETRY_OF) is LaunchResult.ALREADY_EXISTS


@pytest.mark.parametrize("owner", ["someone-else", None], ids=["another-failure", "no-tag"])
def test_a_name_held_by_another_job_is_taken(jobs: Jobs, owner: str | None) -> None:
    theirs = relaunch(Tags=[] if owner is None else [{"Key": RETRY_OF, "Value": owner}])
    jobs.create(theirs, owner or "", RETRY_OF)
    with pytest.raises(NameTaken):
        jobs.create(relaunch(), "llama-pretrain", RETRY_OF)


def test_a_launch_sagemaker_refuses_raises_with_its_code_and_creates_nothing(jobs: Jobs) -> None:
    request = relaunch(ResourceConfig={"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 1, "VolumeSizeInGB": 100})
    with pytest.raises(LaunchRefused) as refused:
        jobs.create(copy.deepcopy(request), "llama-pretrain", RETRY_OF)
    assert refused.value.code == "ResourceLimitExceeded" and LIMIT in refused.value.message
    assert jobs.describe("llama-pretrain-retry1") == JobNotFound("llama-pretrain-retry1")


def test_a_job_in_progress_is_stopped_once(jobs: Jobs) -> None:
    jobs.create(relaunch(), "llama-pretrain", RETRY_OF)
    assert jobs.stop("llama-pretrain-retry1") is True
    job = jobs.describe("llama-pretrain-retry1")
    assert isinstance(job, TrainingJob) and (job.status, job.secondary_status) == ("Stopping", "Stopping")
    assert jobs.stop("llama-pretrain-retry1") is False  # no longer InProgress: done, not an error


def test_the_running_jobs_are_listed_with_their_secondary_status_and_their_tags(jobs: Jobs) -> None:
    """What the prober reads to find an opted-in job nobody watches (workflows/watch_discovery.py)."""
    assert jobs.create(relaunch(), "llama-pretrain", RETRY_OF) is LaunchResult.CREATED
    [running] = jobs.training_now()
    assert (running.name, running.secondary_status) == ("llama-pretrain-retry1", "Starting")
    assert running.arn.endswith(":training-job/llama-pretrain-retry1")
    assert jobs.tags_of(running.arn) == {"trainguard:enabled": "true", RETRY_OF: "llama-pretrain"}


def test_more_running_jobs_than_a_page_are_all_listed_in_pages_of_a_hundred(
    simulated_sagemaker: SageMakerServer,
) -> None:
    jobs = SageMakerJobs(local_client("sagemaker", simulated_sagemaker.endpoint_url))
    for i in range(101):
        jobs.create(relaunch(f"job-{i:03d}", "root"), "root", RETRY_OF)
    simulated_sagemaker.plane.start_training("job-007")
    simulated_sagemaker.plane.calls.clear()
    listed = {job.name: job.secondary_status for job in jobs.training_now()}
    assert len(listed) == 101 and listed["job-007"] == "Training" and listed["job-008"] == "Starting"
    pages = [params for operation, params in simulated_sagemaker.plane.calls if operation == "ListTrainingJobs"]
    assert [params["MaxResults"] for params in pages] == [100, 100]
