"""The SageMaker quotas the simulated Service Quotas knows: names as AWS writes them, made-up codes.

Names and defaults follow docs/aws-facts.md ("Service Quotas") and quotas.json:
  - per instance type: "<type> for training job usage", "<type> for spot training job usage",
    "<type> for training warm pool usage", and "<type> for processing job usage" (the processing name as
    quoted in failure_reasons.json: Debugger and Profiler rules run as processing jobs);
  - account-wide: "Number of instances across all training jobs" (4), "Maximum number of instances per
    training job" (20), "Longest run time for a training job" (432,000 s), their spot counterparts
    (names from quotas.json; 4 and 20 as one account's public listing of its applied values shows them),
    "Number of instances across all processing jobs" (4, as in failure_reasons.json's
    ResourceLimitExceeded text).
  - GPU and other accelerated instance types start at 0 (docs/aws-facts.md); warm pools at 0; other types at
    ``OTHER_INSTANCE_DEFAULT`` (a stand-in: AWS's defaults for CPU types vary by type and account).

Quota codes are ``L-`` and 8 hex digits derived from the name, deliberately NOT AWS's codes: docs/aws-facts.md says
codes differ between sources, so production code must resolve a quota by name (ListServiceQuotas), and a
simulation with the real codes would hide code that hard-codes them. A test checks that no made-up code
is one of the real codes in quotas.json.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from trainguard_local.stand_in.json_api import JsonApiModel

SERVICE_CODE = "sagemaker"
SERVICE_NAME = "Amazon SageMaker"  # ListServices' name for "sagemaker" (a public list-services output)
UNIT = "None"  # the Unit AWS gives count quotas (aws-cli's list-service-quotas and get-service-quota examples)

# Validation errors: Service Quotas models no ValidationException, and no captured answer to a request
# that breaks a model constraint was found. The code and "N validation error(s) detected" wording are
# what AWS's JSON services commonly answer (guessed for this service).
SERVICE_QUOTAS_API = JsonApiModel(
    "service-quotas",
    validation_error_code="ValidationException",
    pattern_checked_shapes=frozenset({"ServiceCode", "QuotaCode", "RequestId", "NextToken"}),
)

DEFAULT_INSTANCE_TYPES = (
    "ml.m5.large",
    "ml.m5.xlarge",
    "ml.c5.xlarge",
    "ml.g5.xlarge",
    "ml.g5.12xlarge",
    "ml.g5.48xlarge",
    "ml.g6.xlarge",
    "ml.p3.2xlarge",
    "ml.p3.8xlarge",
    "ml.p4d.24xlarge",
    "ml.p5.48xlarge",
    "ml.trn1.32xlarge",
)
# GPU (g, p) and AWS's own accelerators (trn: Trainium, inf: Inferentia).
ACCELERATED_FAMILY_PREFIXES = ("ml.g", "ml.p", "ml.trn", "ml.inf")
OTHER_INSTANCE_DEFAULT = 2.0

PER_INSTANCE_TYPE_USAGES = (
    "for training job usage",
    "for spot training job usage",
    "for training warm pool usage",
    "for processing job usage",
)
ACCOUNT_WIDE_DEFAULTS = {
    "Number of instances across all training jobs": 4.0,
    "Maximum number of instances per training job": 20.0,
    "Longest run time for a training job": 432_000.0,  # seconds; its Unit on AWS is unconfirmed ("None" here)
    "Number of instances across all spot training jobs": 4.0,
    "Maximum number of instances per spot training job": 20.0,
    "Number of instances across all processing jobs": 4.0,
}


@dataclass
class Quota:
    """One quota and its applied value (which an approved request changes)."""

    name: str
    code: str
    value: float

    def describe(self, *, region: str, account_id: str) -> dict[str, object]:
        """The ServiceQuota structure, with the members AWS's examples show for an account-level quota."""
        return {
            "ServiceCode": SERVICE_CODE,
            "ServiceName": SERVICE_NAME,
            "QuotaArn": quota_arn(self.code, region=region, account_id=account_id),
            "QuotaCode": self.code,
            "QuotaName": self.name,
            "Value": self.value,
            "Unit": UNIT,
            "Adjustable": True,
            "GlobalQuota": False,
            "QuotaAppliedAtLevel": "ACCOUNT",
        }


def simulated_quota_code(name: str) -> str:
    """``L-`` and 8 upper-case hex digits, the same for the same name in every run."""
    return "L-" + hashlib.sha256(f"trainguard-simulated-quota:{name}".encode()).hexdigest()[:8].upper()


def quota_arn(code: str, *, region: str, account_id: str) -> str:
    # Shape as in aws-cli's examples: arn:aws:servicequotas:us-east-2:123456789012:ec2/L-20F13EBD
    return f"arn:aws:servicequotas:{region}:{account_id}:{SERVICE_CODE}/{code}"


def default_value(name: str) -> float:
    if name in ACCOUNT_WIDE_DEFAULTS:
        return ACCOUNT_WIDE_DEFAULTS[name]
    if name.endswith("for training warm pool usage"):
        return 0.0
    instance_type = name.split(" ", 1)[0]
    return 0.0 if instance_type.startswith(ACCELERATED_FAMILY_PREFIXES) else OTHER_INSTANCE_DEFAULT


def quota_names(instance_types: Iterable[str]) -> list[str]:
    per_type = [f"{t} {usage}" for t in instance_types for usage in PER_INSTANCE_TYPE_USAGES]
    return [*ACCOUNT_WIDE_DEFAULTS, *per_type]


def build_catalogue(instance_types: Iterable[str], values: Mapping[str, float]) -> dict[str, Quota]:
    """The quotas by code, with ``values`` overriding the defaults. Unknown names in ``values`` are an error."""
    names = quota_names(instance_types)
    unknown = set(values) - set(names)
    if unknown:
        raise ValueError(f"values for quotas not in the catalogue: {sorted(unknown)}")
    quotas = [Quota(n, simulated_quota_code(n), float(values.get(n, default_value(n)))) for n in names]
    by_code = {quota.code: quota for quota in quotas}
    if len(by_code) != len(quotas):  # 8 hex digits: a collision is unlikely, but must not pass silently
        raise ValueError("two quota names have the same simulated code; change the code derivation")
    return by_code
