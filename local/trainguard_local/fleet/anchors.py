"""What teams use today, as models built from the documentation (they are models, not the services).

- `none`: nothing acts. A person on call notices a failure, a stop or a hang after a response time
  and relaunches from the checkpoint (requesting the quota first at a quota wall). A hang bills
  until the person stops it, or until MaxRuntimeInSeconds (default 1 day) stops it if sooner.
  Source: docs/aws-facts.md, "Anchors' behaviour": "Nothing in SageMaker acts on a job that hangs without
  failing: it runs until MaxRuntimeInSeconds"; https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_StoppingCondition.html
- `sagemaker_retry`: SageMaker's RetryStrategy retries a job that fails with InternalServerError, and
  nothing else, up to MaximumRetryAttempts times (1-30); the retry is the same job, so MaxRuntime
  covers all attempts; it resumes from the checkpoint. Everything else as `none`.
  Source: docs/aws-facts.md, "Anchors' behaviour"; https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_RetryStrategy.html
- `debugger_rule`: Debugger's StalledTrainingRule with the StopTraining action stops a job whose hook
  saved nothing for `threshold` seconds (default 1800), and never relaunches. It needs the Debugger
  hook (not from PyTorch 2.0 on), and its actions work neither in a VPC (nor with network isolation)
  nor on spot jobs. After its stop, the person relaunches. Everything else as `none`.
  Source: docs/aws-facts.md, "Anchors' behaviour"; https://docs.aws.amazon.com/sagemaker/latest/dg/debugger-built-in-rules.html
  (StalledTrainingRule); https://docs.aws.amazon.com/sagemaker/latest/dg/debugger-built-in-actions.html
  ("Considerations": no network isolation or VPC, no spot training interruptions).

- `aws_batch`: every job submitted to an AWS Batch job queue for SageMaker Training (service jobs, 2025),
  what a team would pick instead of a guard today. Modelled from its documentation:
  * queueing: jobs wait RUNNABLE until the service environment has room, "started as soon as sufficient
    resources are available" (https://docs.aws.amazon.com/batch/latest/userguide/service-job-status.html);
    the model assumes a service environment large enough for the trace (no queueing delay), FIFO
    ("defaults to a first-in, first-out (FIFO) strategy", .../job_scheduling.html), so priorities and fair
    share never reorder its jobs;
  * capacity: "When a SageMaker Training job fails due to insufficient capacity, AWS Batch retries the job
    automatically until capacity becomes available [...] These capacity-based retries don't consume your
    configured retry attempts" (.../service-job-retries.html): each retry is a new training job, refused
    again while the trace's repeats last;
  * per-reason retry rules: `retryStrategy` with `attempts` (1-10) and `evaluateOnExit` rules on
    `onStatusReason`; the model uses the documented example: RETRY on "Received status from SageMaker:
    InternalServerError*", EXIT on everything else, 3 attempts (.../service-job-retries.html,
    API_ServiceJobRetryStrategy.html). Hardware faults, NCCL timeouts and spot stops past MaxWait exit;
  * no stall detection: a hang bills until the attempt's timeout (the SDK's default attemptDurationSeconds,
    86400 s, as MaxRuntime's default day) or the person;
  * no quota requests: a quota wall is the person's, as in `none`.
  Everything else as `none`.

Parents (every strategy): a job a SageMaker Pipelines step or an AWS Batch queue launched is retried by
its parent where its owner configured it (Pipelines RetryPolicies SageMaker.JOB_INTERNAL_ERROR and
SageMaker.CAPACITY_ERROR start a new job, pipelines-retry-policy.html; Batch retries capacity errors
always, internal errors when configured), a new job a minute later; a job launched with InstancePreferences
starts on the first listed type with capacity (ResourceConfig.InstancePreferences), so its capacity
error does not happen when an alternative has capacity.

Every strategy meets the same person (`person.py`).
"""

from __future__ import annotations

from trainguard_local.fleet.anchor_life import AnchorStrategy
from trainguard_local.fleet.anchor_rules import BatchRetries, RetryStrategy, StalledTrainingRule
from trainguard_local.fleet.person import PersonOnCall

_FACTS = "docs/aws-facts.md, Anchors' behaviour"


def no_guard(person: PersonOnCall | None = None) -> AnchorStrategy:
    return AnchorStrategy(
        "none",
        "no guard: a person on call notices and relaunches",
        (_FACTS, "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_StoppingCondition.html"),
        person or PersonOnCall(),
    )


def sagemaker_retry(person: PersonOnCall | None = None, attempts: int = 3) -> AnchorStrategy:
    return AnchorStrategy(
        "sagemaker_retry",
        "SageMaker's RetryStrategy (InternalServerError only); a person for the rest",
        (_FACTS, "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_RetryStrategy.html"),
        person or PersonOnCall(),
        retry_strategy=RetryStrategy(attempts),
    )


def debugger_rule(person: PersonOnCall | None = None, threshold_seconds: int = 1800) -> AnchorStrategy:
    return AnchorStrategy(
        "debugger_rule",
        "Debugger's StalledTrainingRule with StopTraining, no relaunch; a person for the rest",
        (
            _FACTS,
            "https://docs.aws.amazon.com/sagemaker/latest/dg/debugger-built-in-rules.html",
            "https://docs.aws.amazon.com/sagemaker/latest/dg/debugger-built-in-actions.html",
        ),
        person or PersonOnCall(),
        stall_rule=StalledTrainingRule(threshold_seconds),
    )


def aws_batch(person: PersonOnCall | None = None, attempts: int = 3) -> AnchorStrategy:
    return AnchorStrategy(
        "aws_batch",
        "AWS Batch for SageMaker Training: capacity retried without attempts, InternalServerError by rule; a person "
        "for the rest",
        (
            "https://docs.aws.amazon.com/batch/latest/userguide/service-job-retries.html",
            "https://docs.aws.amazon.com/batch/latest/APIReference/API_ServiceJobRetryStrategy.html",
            "https://docs.aws.amazon.com/batch/latest/userguide/service-job-status.html",
            "https://docs.aws.amazon.com/batch/latest/userguide/job_scheduling.html",
        ),
        person or PersonOnCall(),
        batch=BatchRetries(attempts),
    )


def anchor_strategies(person: PersonOnCall | None = None) -> tuple[AnchorStrategy, ...]:
    return no_guard(person), sagemaker_retry(person), debugger_rule(person), aws_batch(person)
