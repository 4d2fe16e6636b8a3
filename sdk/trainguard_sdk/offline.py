"""A SageMaker Python SDK launch with no AWS account: every AWS call the SDK makes is answered here.

`examples/launch.py --dry-run` and the tests use it to see the CreateTrainingJob request the SDK
would send. It works at the botocore level: a `before-call` handler on the boto3 session that the
SDK's Session is built from answers each call before botocore signs or sends it (a handler that
returns a response replaces the HTTP request: botocore/client.py, `_make_api_call`). Clients the SDK
creates from that session inherit the handler. Nothing is sent anywhere, and no credentials are read.

The calls a ModelTrainer launch with local source code makes (sagemaker 3.27.0), and their answers:
  s3 ListBuckets                 the staging bucket exists (so the SDK neither creates it nor asks STS)
  iam SimulatePrincipalPolicy    the role may put objects in the staging bucket
  s3 PutObject                   uploads of the source directory and the SDK's container drivers
  sagemaker CreateTrainingJob    recorded as sent (the JSON body); answered with the job's ARN
  sagemaker DescribeTrainingJob  the job as the request described it, InProgress
Any other call raises OfflineCallRefused: a call a later SDK adds is noticed, never sent.

While offline, the SDK's role validation (IAM GetRole and SimulatePrincipalPolicy on the role) is
switched off with its own setting SAGEMAKER_VALIDATE_ROLE=false, and its telemetry (an HTTPS GET to
an AWS endpoint, outside botocore) with TelemetryOptOut in the session's config.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

VALIDATE_ROLE_VARIABLE = "SAGEMAKER_VALIDATE_ROLE"
TELEMETRY_OFF = {"SchemaVersion": "1.0", "SageMaker": {"PythonSDK": {"Modules": {"TelemetryOptOut": True}}}}
_SINCE = datetime(2026, 1, 1, tzinfo=UTC)


class OfflineCallRefused(RuntimeError):
    """The SDK made an AWS call this stand-in does not answer."""


@dataclass
class OfflineAws:
    """Answers the SDK's calls for one launch and keeps what it was asked."""

    bucket: str
    region: str = "us-east-1"
    account: str = "123456789012"
    calls: list[str] = field(default_factory=list)  # "s3.PutObject", "sagemaker.CreateTrainingJob", ...
    create_training_job_requests: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def answer(self, model: Any, params: dict[str, Any], **_: Any) -> tuple[Any, dict[str, Any]]:
        """botocore's before-call handler: (HTTP response, parsed response) for the call."""
        from botocore.awsrequest import AWSResponse

        call = f"{model.service_model.service_name}.{model.name}"
        with self._lock:  # the SDK uploads from several threads
            self.calls.append(call)
            if call == "sagemaker.CreateTrainingJob":
                self.create_training_job_requests.append(json.loads(params["body"]))
            parsed = self._parsed_answer(call, model)
        return AWSResponse(params.get("url", ""), 200, {}, None), parsed

    def _parsed_answer(self, call: str, model: Any) -> dict[str, Any]:
        if call == "s3.ListBuckets":
            return {"Buckets": [{"Name": self.bucket, "CreationDate": _SINCE}]}
        if call == "iam.SimulatePrincipalPolicy":
            resource = f"arn:aws:s3:::{self.bucket}/*"
            result = {"EvalActionName": "s3:PutObject", "EvalResourceName": resource, "EvalDecision": "allowed"}
            return {"EvaluationResults": [result], "IsTruncated": False}
        if call == "s3.PutObject":
            return {"ETag": '"offline"'}
        if call == "sagemaker.CreateTrainingJob":
            return {"TrainingJobArn": self._job_arn(self.create_training_job_requests[-1])}
        if call == "sagemaker.DescribeTrainingJob" and self.create_training_job_requests:
            request = self.create_training_job_requests[-1]
            described = {k: v for k, v in request.items() if k in model.output_shape.members}
            return described | {
                "TrainingJobArn": self._job_arn(request),
                "TrainingJobStatus": "InProgress",
                "SecondaryStatus": "Starting",
                "CreationTime": datetime.now(UTC),
                "ModelArtifacts": {"S3ModelArtifacts": ""},
            }
        raise OfflineCallRefused(f"{call} is not answered offline (the SDK would have sent it to AWS)")

    def _job_arn(self, request: dict[str, Any]) -> str:
        return f"arn:aws:sagemaker:{self.region}:{self.account}:training-job/{request['TrainingJobName']}"


@contextmanager
def offline_session(aws: OfflineAws) -> Iterator[Any]:
    """A `sagemaker.core.helper.session_helper.Session` whose AWS calls `aws` answers."""
    import boto3
    from sagemaker.core.helper.session_helper import Session

    boto_session = boto3.session.Session(
        aws_access_key_id="offline", aws_secret_access_key="offline", region_name=aws.region
    )
    boto_session.events.register("before-call", aws.answer)
    before = os.environ.get(VALIDATE_ROLE_VARIABLE)
    os.environ[VALIDATE_ROLE_VARIABLE] = "false"
    try:
        yield Session(boto_session=boto_session, default_bucket=aws.bucket, sagemaker_config=TELEMETRY_OFF)
    finally:
        if before is None:
            os.environ.pop(VALIDATE_ROLE_VARIABLE, None)
        else:
            os.environ[VALIDATE_ROLE_VARIABLE] = before
