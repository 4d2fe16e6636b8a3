"""SageMaker: describe a job with its tags, create a relaunch, and list the running jobs with their tags (the stall
prober's search for an opted-in job nobody watches).

IAM: each method's `needs` (iam:PassRole for the job's execution role, AddTags for its tags on create).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError, ParamValidationError

from trainguard.adapters.permissions import needs
from trainguard.domain.model import TrainingJob, instances_of
from trainguard.domain.watch_discovery import ListedJob
from trainguard.events.training_job import job_from_description
from trainguard.workflows.ports import JobNotFound, LaunchRefused, LaunchResult, NameTaken

# Only `trainguard preflight` (run by a person) counts instances in use. The one function that lists jobs is the
# stall prober (`training_now`): one ListTrainingJobs call per 100 InProgress jobs a minute.
LIST_PAGE = 100  # ListTrainingJobs MaxResults: 1-100 (botocore); the default is 10
LIST_PAGES_AT_MOST = 20  # 2,000 InProgress jobs a cycle, the newest first: asked for, since the default order is
# Ascending (botocore's ListTrainingJobsRequest: "The default is Ascending")


class SageMakerJobs:
    def __init__(self, client: Any) -> None:
        self._client = client

    @needs("sagemaker:DescribeTrainingJob", "sagemaker:ListTags")
    def describe(self, name: str) -> TrainingJob | JobNotFound:
        try:
            description = self._client.describe_training_job(TrainingJobName=name)
        except ClientError as err:
            if _code(err) == "ValidationException" and _says_not_found(_message(err)):
                return JobNotFound(name)
            raise
        tags = self._list_tags(description["TrainingJobArn"])
        return job_from_description(description, tags)

    @needs(
        "sagemaker:CreateTrainingJob",
        "sagemaker:AddTags",
        "iam:PassRole",
        "sagemaker:DescribeTrainingJob",
        "sagemaker:ListTags",
    )
    def create(self, request: dict[str, Any], retry_of: str, retry_of_tag_key: str) -> LaunchResult:
        """Create the job. A duplicate name is success only if that job is the relaunch of `retry_of`."""
        try:
            self._client.create_training_job(**request)
            return LaunchResult.CREATED
        except ParamValidationError as err:  # botocore refused it before sending: a retry cannot help
            raise LaunchRefused("ParamValidation", str(err)) from err
        except ClientError as err:
            code = _code(err)
            if code == "ResourceInUse":
                return self._check_existing(request["TrainingJobName"], retry_of, retry_of_tag_key)
            if code in ("ThrottlingException", "InternalFailure", "ServiceUnavailable"):
                raise  # transient: let Lambda's retry deliver it again
            raise LaunchRefused(code, _message(err)) from err

    def _check_existing(self, name: str, retry_of: str, retry_of_tag_key: str) -> LaunchResult:
        existing = self.describe(name)
        if isinstance(existing, TrainingJob) and existing.tags.get(retry_of_tag_key) == retry_of:
            return LaunchResult.ALREADY_EXISTS
        raise NameTaken(f"a training job named {name} exists and is not trainguard's relaunch of {retry_of}")

    @needs("sagemaker:AddTags")
    def add_tags(self, arn: str, tags: dict[str, str]) -> None:
        """Tag a job (`trainguard opt-in`, run by a person; the functions never tag an existing job)."""
        self._client.add_tags(ResourceArn=arn, Tags=[{"Key": k, "Value": v} for k, v in tags.items()])

    @needs("sagemaker:StopTrainingJob")
    def stop(self, name: str) -> bool:
        """Stop a job; False when it was no longer InProgress (AWS: ValidationException "...the training
        job is in status Stopped"), which counts as done, not as an error (docs/aws-facts.md)."""
        try:
            self._client.stop_training_job(TrainingJobName=name)
        except ClientError as err:
            if _code(err) == "ValidationException" and "in status" in _message(err):
                return False
            raise
        return True

    @needs("sagemaker:ListTrainingJobs", "sagemaker:DescribeTrainingJob")
    def instances_in_use(self) -> dict[str, int]:
        """Instances of the training jobs InProgress now, by instance type (ListTrainingJobs gives no
        sizes, so each job is described: ListTrainingJobs allows about 2 calls per second, docs/aws-facts.md)."""
        in_use: dict[str, int] = {}
        for page in self._client.get_paginator("list_training_jobs").paginate(StatusEquals="InProgress"):
            for summary in page.get("TrainingJobSummaries", []):
                described = self._client.describe_training_job(TrainingJobName=summary["TrainingJobName"])
                config = described.get("ResourceConfig", {})
                groups = config.get("InstanceGroups") or [config]
                if config.get("SelectedInstanceType"):  # launched with InstancePreferences: what SageMaker chose
                    groups = [
                        {"InstanceType": config["SelectedInstanceType"], "InstanceCount": instances_of(config)[1]}
                    ]
                for group in groups:
                    if group.get("InstanceType"):
                        in_use[group["InstanceType"]] = in_use.get(group["InstanceType"], 0) + int(
                            group.get("InstanceCount", 0)
                        )
        return in_use

    @needs("sagemaker:ListTrainingJobs")
    def training_now(self) -> list[ListedJob]:
        """The InProgress jobs, newest first, with their SecondaryStatus (TrainingJobSummary has it), at most
        LIST_PAGES_AT_MOST pages. ListTrainingJobs takes no resource type: it is granted on "*" (Service
        Authorization Reference, SageMaker)."""
        pages = self._client.get_paginator("list_training_jobs").paginate(
            StatusEquals="InProgress",
            SortBy="CreationTime",
            SortOrder="Descending",
            PaginationConfig={"PageSize": LIST_PAGE, "MaxItems": LIST_PAGE * LIST_PAGES_AT_MOST},
        )
        return [
            ListedJob(s["TrainingJobName"], s["TrainingJobArn"], s.get("SecondaryStatus", ""))
            for page in pages
            for s in page.get("TrainingJobSummaries", [])
        ]

    @needs("sagemaker:ListTags")
    def tags_of(self, arn: str) -> dict[str, str]:
        """A job's tags (ListTags, every page)."""
        return {tag["Key"]: tag["Value"] for tag in self._list_tags(arn)}

    def _list_tags(self, arn: str) -> list[dict[str, str]]:
        tags: list[dict[str, str]] = []
        kwargs: dict[str, Any] = {"ResourceArn": arn, "MaxResults": 100}
        while True:
            page = self._client.list_tags(**kwargs)
            tags.extend(page.get("Tags", []))
            token = page.get("NextToken")
            if not token:
                return tags
            kwargs["NextToken"] = token


def _code(err: ClientError) -> str:
    return str(err.response.get("Error", {}).get("Code", ""))


def _message(err: ClientError) -> str:
    return str(err.response.get("Error", {}).get("Message", ""))


def _says_not_found(message: str) -> bool:
    # AWS: "Requested resource not found."; moto: "Could not find training job ...".
    lowered = message.lower()
    return "not found" in lowered or "could not find" in lowered
