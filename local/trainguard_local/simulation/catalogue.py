"""What the trace draws from: instance types with prices, and real failure texts per fault kind.

Prices are us-east-1 on-demand SageMaker *training* rates per instance-hour. docs/aws-facts.md gives two
(third-party, unconfirmed); the others are assumptions, taken from public price tables that agree
with each other (for example $7.09 for ml.g5.12xlarge in several), unconfirmed: recheck them at
https://aws.amazon.com/sagemaker/ai/pricing/ before quoting a dollar figure. GPUs per instance come
from trainguard's own table (EC2's accelerated-computing specifications).

The mix of types and of instance counts per job is an assumption: most jobs are small (1-8
instances), a few large ones hold most of the GPUs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from trainguard.domain.instance_prices import ON_DEMAND_PRICES


@dataclass(frozen=True)
class InstanceOffer:
    instance_type: str
    price_per_instance_hour: float
    price_source: str
    share_of_jobs: float  # weight when a job's type is drawn (assumption)
    instance_counts: tuple[tuple[int, float], ...]  # (count, weight) for a job of this type (assumption)


_SMALL = ((1, 60.0), (2, 25.0), (4, 15.0))
_MEDIUM = ((1, 35.0), (2, 25.0), (4, 25.0), (8, 15.0))
_LARGE = ((1, 15.0), (2, 20.0), (4, 25.0), (8, 20.0), (16, 10.0), (32, 6.0), (64, 4.0))


def _offer(instance_type: str, share_of_jobs: float, counts: tuple[tuple[int, float], ...]) -> InstanceOffer:
    """An offer priced from the product's own list-price table (trainguard.domain.instance_prices)."""
    price = ON_DEMAND_PRICES[instance_type]
    return InstanceOffer(instance_type, price.per_instance_hour, f"assumption: {price.source}", share_of_jobs, counts)


INSTANCE_OFFERS: tuple[InstanceOffer, ...] = (
    _offer("ml.g4dn.xlarge", 10.0, _SMALL),
    _offer("ml.g5.xlarge", 15.0, _SMALL),
    _offer("ml.g5.12xlarge", 20.0, _MEDIUM),
    _offer("ml.g5.48xlarge", 10.0, _MEDIUM),
    _offer("ml.p3.16xlarge", 10.0, _MEDIUM),
    _offer("ml.p4d.24xlarge", 25.0, _LARGE),
    _offer("ml.p5.48xlarge", 10.0, _LARGE),
)

# Real texts, copied from tests/fixtures/failure_reasons.json (each with its original source there);
# a test checks that every text is still in that file under the category named here. Copied rather
# than read so that a fixture edit cannot change the trace a seed gives.
FAILURE_TEXTS: dict[str, tuple[str, tuple[str, ...]]] = {
    # fault kind: (category in failure_reasons.json, texts)
    "internal_error": (
        "internal",
        (
            "InternalServerError: We encountered an internal error. Please try again.",  # sagemaker-python-sdk#70
            "InternalServerError: We encountered an internal error - Platform Error: SageMaker pipe channel "
            "timed out",  # amazon-sagemaker-examples#1316
        ),
    ),
    "capacity_error": (
        "capacity",
        (
            "CapacityError: Unable to provision requested ML compute capacity. Please retry using a different ML "
            "instance type.",  # DIAGNijmegen/rse-grand-challenge#2631
        ),
    ),
    "hardware_fault": (
        "hardware",
        ("RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR",),  # DIAGNijmegen/rse-grand-challenge#2836
    ),
    "nccl_timeout": (
        "nccl-hang/collective-timeout",
        (
            "torch.distributed.DistBackendError: NCCL error",  # aws/aws-ofi-nccl#715
            "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
            "ProcessGroupNCCL.cpp:1691, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL "
            "version 2.19.3\nncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
            "device error.\nLast error:\nsocketStartConnect: Connect to 169.254.255.18<58539> failed : Software "
            "caused connection abort",  # ultralytics/yolov5#12811
        ),
    ),
    "spot_interruption": (
        "spot-interruption",
        # The SecondaryStatus text (with AWS's historical typo); the job ends Stopped, MaxWaitTimeExceeded.
        ("MaxWaitTmeExceeded - The job stopped because it exceeded the maximum allowed wait time.",),
    ),
    "user_code_error": (
        "user-code",
        (
            "AlgorithmError: Exit Code: 1",  # amazon-sagemaker-examples#372
            "AlgorithmError: , exit code: 1",  # aws-samples/amazon-sagemaker-ml-pipeline-deploy-with-terraform#12
            'AlgorithmError: ExecuteUserScriptError:\nCommand "/opt/conda/bin/python train_deploy.py --backend gloo '
            '--epochs 1 --num_labels 2"',  # aws-samples/amazon-sagemaker-bert-classify-pytorch#2
        ),
    ),
    "out_of_memory": (
        "oom",
        (
            "ClientError: Please use an instance type with more memory, or reduce the size of job data processed on "
            "an instance.",  # DIAGNijmegen/rse-grand-challenge, amazon_sagemaker_base.py
            "torch.cuda.OutOfMemoryError: Caught OutOfMemoryError in replica 0 on device 0.",  # huggingface/trl#1169
        ),
    ),
}


def training_quota_name(instance_type: str) -> str:
    """The Service Quotas name of an instance type's training quota (docs/aws-facts.md, Service Quotas)."""
    return f"{instance_type} for training job usage"


def quota_in_limit_message(text: str) -> str:
    """The quota a ResourceLimitExceeded message (`limit_exceeded_message`'s wording) names, or ''."""
    found = re.search(r"service limit '([^']+)'", text)
    return found.group(1) if found else ""


def limit_exceeded_message(instance_type: str, limit: int, in_use: int, delta: int) -> str:
    """CreateTrainingJob's ResourceLimitExceeded message, in the current wording that docs/aws-facts.md quotes."""
    return (
        f"The account-level service limit '{training_quota_name(instance_type)}' is {limit} Instances, with current "
        f"utilization of {in_use} Instances and a request delta of {delta} Instances. Please use AWS Service Quotas "
        "to request an increase for this quota."
    )


def resource_limit_exceeded(instance_type: str, limit: int, in_use: int, delta: int) -> str:
    """The message as botocore's ClientError shows it."""
    return "An error occurred (ResourceLimitExceeded) when calling the CreateTrainingJob operation: " + (
        limit_exceeded_message(instance_type, limit, in_use, delta)
    )
