"""The failure classifier: every real text in the fixture, texts from outside it, and hostile input."""

from __future__ import annotations

import ast
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from trainguard.domain import classification
from trainguard.domain.classification import DECISION_BY_CATEGORY, classify_failure_reason, classify_job_end
from trainguard.domain.model import Category, Decision

FAILURE_REASONS = Path(__file__).parents[1] / "fixtures" / "failure_reasons.json"

# The fixture's category names, in our words.
FIXTURE_CATEGORY = {
    "capacity": Category.CAPACITY,
    "config/permission": Category.CONFIG,
    "data": Category.DATA,
    "hardware": Category.HARDWARE,
    "internal": Category.INTERNAL,
    "nccl-hang/collective-timeout": Category.COLLECTIVE_TIMEOUT,
    "oom": Category.OOM,
    "quota": Category.QUOTA,
    "spot-interruption": Category.SPOT_INTERRUPTION,
    "unknown": Category.UNKNOWN,
    "user-code": Category.USER_CODE,
}


def _load_fixture() -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = json.loads(FAILURE_REASONS.read_text(encoding="utf-8"))
    return entries


def _fixture_id(index: int, entry: dict[str, Any]) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", entry["text"][:40].lower()).strip("-")
    return f"{index:02d}-{entry['category']}-{words}"


FIXTURE = _load_fixture()


@pytest.mark.parametrize("entry", FIXTURE, ids=[_fixture_id(i, e) for i, e in enumerate(FIXTURE)])
def test_every_real_text_gets_its_category_and_decision(entry: dict[str, Any]) -> None:
    assert_classified_as_the_fixture_says(entry)


def assert_classified_as_the_fixture_says(entry: dict[str, Any]) -> None:
    """One fixture entry (text, category, decision) against the classifier; also used for other fixtures."""
    result = classify_failure_reason(entry["text"])
    # A null decision in the fixture means the text alone cannot decide: a person should look.
    expected_decision = Decision(entry["decision"]) if entry["decision"] else Decision.NOTIFY
    assert (result.category, result.decision) == (FIXTURE_CATEGORY[entry["category"]], expected_decision), result.reason
    assert result.reason.endswith(".")


# Texts that are not in the fixture: AWS, driver and framework wording, quoted or closely modelled on
# real messages, to show the rules generalise (rewording, wrapping, truncation) and to pin the traps.
OTHER_TEXTS: list[tuple[str, Category, str]] = [
    # capacity
    (
        "capacity-error-from-ec2",
        Category.CAPACITY,
        "CapacityError: Insufficient capacity error from EC2 while launching instances",
    ),
    (
        "capacity-status-message",
        Category.CAPACITY,
        "Insufficient capacity error from EC2 while launching instances, retrying!",
    ),
    (
        "capacity-ec2-wording",
        Category.CAPACITY,
        "An error occurred (InsufficientInstanceCapacity) when calling the RunInstances operation: We "
        "currently do not have sufficient p4d.24xlarge capacity in the Availability Zone you requested "
        "(us-east-1a).",
    ),
    ("capacity-cut-mid-word", Category.CAPACITY, "CapacityError: Unable to provision requested ML compute capac"),
    # internal and throttling
    (
        "internal-two-spaces",
        Category.INTERNAL,
        "InternalServerError: We encountered an internal error.  Please try again.",
    ),
    ("internal-line-wrapped-no-prefix", Category.INTERNAL, "We encountered an\ninternal error. Please try\nagain."),
    ("internal-cut-mid-word", Category.INTERNAL, "InternalServerError: We encountered an internal err"),
    (
        "internal-s3-inside-artifact-upload",
        Category.INTERNAL,
        "ClientError: Artifact upload failed:An error occurred (InternalError) when calling the "
        "CompleteMultipartUpload operation: We encountered an internal error. Please try again.",
    ),
    (
        "service-unavailable",
        Category.INTERNAL,
        "An error occurred (ServiceUnavailable) when calling the CreateTrainingJob operation: Service "
        "is unavailable. Please try again later.",
    ),
    (
        "throttled-list-training-jobs",
        Category.INTERNAL,
        "An error occurred (ThrottlingException) when calling the ListTrainingJobs operation (reached "
        "max retries: 4): Rate exceeded",
    ),
    # S3 throttling inside the data-download wrapper is transient, not a data problem.
    (
        "s3-slowdown-inside-data-download",
        Category.INTERNAL,
        "ClientError: Data download failed:An error occurred (SlowDown) when calling the GetObject "
        "operation (reached max retries: 4): Please reduce your request rate.",
    ),
    # hardware
    ("cuda-uncorrectable-ecc", Category.HARDWARE, "RuntimeError: CUDA error: uncorrectable ECC error encountered"),
    (
        "instance-failed-health-check",
        Category.HARDWARE,
        "ClientError: Instance ml.p4d.24xlarge (algo-3) failed health check. Please retry.",
    ),
    (
        "rendezvous-peer-never-joined",
        Category.COLLECTIVE_TIMEOUT,
        'AlgorithmError: ExecuteUserScriptError:\nExitCode 1\nErrorMessage "torch.distributed.DistStoreError: '
        'Timed out after 901 seconds waiting for clients. 1/2 clients joined."',
    ),
    (
        "xid-79-fallen-off-the-bus",
        Category.HARDWARE,
        "NVRM: Xid (PCI:0000:10:1c): 79, pid=1234, name=python, GPU has fallen off the bus.",
    ),
    (
        "xid-48-short-form",
        Category.HARDWARE,
        "kernel: NVRM: Xid 48, An uncorrectable double bit error (DBE) has been detected",
    ),
    (
        "xid-74-nvlink-error",
        Category.HARDWARE,
        "NVRM: Xid (PCI:0000:53:00): 74, pid=2042, NVLink: fatal error detected on link 4",
    ),
    (
        "gpu-is-lost",
        Category.HARDWARE,
        "Unable to determine the device handle for GPU 0000:A0:1C.0: GPU is lost.  Reboot the system "
        "to recover this GPU",
    ),
    ("cluster-repair", Category.HARDWARE, "Repairing training cluster due to hardware failure"),
    # collective timeouts and NCCL faults
    (
        "nccl-watchdog-timeout",
        Category.COLLECTIVE_TIMEOUT,
        "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=48211, "
        "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600023 milliseconds "
        "before timing out.",
    ),
    ("nccl-timeout-bare", Category.COLLECTIVE_TIMEOUT, "NCCL timeout"),
    (
        "nccl-communicator-aborted",
        Category.COLLECTIVE_TIMEOUT,
        "RuntimeError: NCCL communicator was aborted on rank 5.",
    ),
    (
        "nccl-watchdog-stuck",
        Category.COLLECTIVE_TIMEOUT,
        "[Rank 0] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in "
        "monitoring enqueued collectives.",
    ),
    (
        "nccl-remote-error",
        Category.COLLECTIVE_TIMEOUT,
        "torch.distributed.DistBackendError: NCCL error in: "
        "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, remote process exited or there was "
        "a network error, NCCL version 2.20.5\nncclRemoteError: A call failed possibly due to a "
        "network error or a remote process exiting prematurely.",
    ),
    # spot
    (
        "spot-interrupted-status",
        Category.SPOT_INTERRUPTION,
        "Interrupted - The job stopped because the managed spot training instances were interrupted.",
    ),
    ("max-wait-exceeded", Category.SPOT_INTERRUPTION, "MaxWaitTimeExceeded"),
    # quota
    (
        "quota-p4d-service-quotas-wording",
        Category.QUOTA,
        "ResourceLimitExceeded: An error occurred (ResourceLimitExceeded) when calling the "
        "CreateTrainingJob operation: The account-level service limit 'ml.p4d.24xlarge for training "
        "job usage' is 0 Instances, with current utilization of 0 Instances and a request delta of 1 "
        "Instances. Please use AWS Service Quotas to request an increase for this quota.",
    ),
    (
        "quota-older-wording",
        Category.QUOTA,
        "The account-level service limit for training-job/ml.p2.xlarge is 0 Instances",
    ),
    (
        "quota-spot-usage",
        Category.QUOTA,
        "The account-level service limit 'ml.g5.12xlarge for spot training job usage' is 0 Instances, "
        "with current utilization of 0 Instances and a request delta of 2 Instances.",
    ),
    (
        "quota-cut-mid-word",
        Category.QUOTA,
        "The account-level service limit 'Number of instances across all training jobs' is 4 "
        "Instances, with current utilization of 4 Instan",
    ),
    # configuration and permissions
    (
        "s3-get-object-denied",
        Category.CONFIG,
        "ClientError: Data download failed:AccessDenied (403): User: "
        "arn:aws:sts::111122223333:assumed-role/SageMakerRole/SageMaker is not authorized to perform: "
        "s3:GetObject on resource: arn:aws:s3:::my-bucket/train/part-00000",
    ),
    # Mentions MaxWaitTime, but it is a rejected request, not a spot stop.
    (
        "validation-max-wait",
        Category.CONFIG,
        "ClientError: An error occurred (ValidationException) when calling the CreateTrainingJob "
        "operation: Invalid MaxWaitTimeInSeconds. It must be present and be greater than or equal to "
        "MaxRuntimeInSeconds",
    ),
    (
        "validation-enum",
        Category.CONFIG,
        "ValidationException: 1 validation error detected: Value 'ml.p5.48xlarge' at "
        "'resourceConfig.instanceType' failed to satisfy constraint",
    ),
    ("no-space-left", Category.CONFIG, "OSError: [Errno 28] No space left on device"),
    # EDQUOT is a disk quota, not a service quota.
    (
        "disk-quota-exceeded",
        Category.CONFIG,
        "OSError: [Errno 122] Disk quota exceeded: '/opt/ml/checkpoints/step_1200'",
    ),
    (
        "region-p5",
        Category.CONFIG,
        "The requested resource training-job/ml.p5.48xlarge is not available in this region",
    ),
    (
        "no-nvidia-driver",
        Category.CONFIG,
        "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU "
        "and installed a driver",
    ),
    (
        "no-route-to-endpoint",
        Category.CONFIG,
        "botocore.exceptions.EndpointConnectionError: Could not connect to the endpoint URL: "
        '"https://sts.us-east-1.amazonaws.com/"',
    ),
    (
        "ofi-register-memory-enomem",
        Category.CONFIG,
        "NCCL WARN NET/OFI Unable to register memory (type = 2) for device 0. RC: -12, Error: Cannot allocate memory",
    ),
    (
        "data-download-insufficient-permissions",
        Category.CONFIG,
        "ClientError: Data download failed:Insufficient permissions to access s3://my-bucket/train/",
    ),
    (
        "subnet-out-of-ip-addresses",
        Category.CONFIG,
        "ClientError: The subnet subnet-0abc does not have enough free IP addresses to launch the instances",
    ),
    (
        "cannot-pull-container",
        Category.CONFIG,
        "CannotPullContainerError: ref pull has been retried 5 time(s): failed to resolve reference",
    ),
    # out of memory
    ("bare-killed-line", Category.OOM, "Killed"),
    ("bash-killed", Category.OOM, "bash: line 1:    47 Killed                  python train.py --epochs 10"),
    (
        "exit-code-137",
        Category.OOM,
        'AlgorithmError: ExecuteUserScriptError:\nExitCode 137\nErrorMessage ""\nCommand '
        '"/opt/conda/bin/python3.10 train.py", exit code: 137',
    ),
    (
        "tensorflow-oom",
        Category.OOM,
        "ResourceExhaustedError: OOM when allocating tensor with shape[32,1024,1024] and type float on "
        "/job:localhost/replica:0/task:0/device:GPU:0",
    ),
    ("cuda-error-out-of-memory", Category.OOM, "RuntimeError: CUDA error: out of memory"),
    ("artifact-upload-out-of-memory", Category.OOM, "ClientError: Artifact upload failed:ClientError: Out of Memory"),
    ("enomem-outside-efa", Category.OOM, "OSError: [Errno 12] Cannot allocate memory"),
    (
        "dataloader-worker-killed",
        Category.OOM,
        "RuntimeError: DataLoader worker (pid 1234) is killed by signal: Killed.",
    ),
    (
        "oom-wins-over-cudnn",
        Category.OOM,
        "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB\nRuntimeError: cuDNN error: "
        "CUDNN_STATUS_INTERNAL_ERROR",
    ),
    # user code
    # An illegal memory access (cudaErrorIllegalAddress) is almost always an out-of-bounds index or a
    # kernel bug; a failing GPU reports an Xid or ECC error of its own. Notify: never loop on a bug.
    (
        "cuda-illegal-memory-access",
        Category.USER_CODE,
        "RuntimeError: CUDA error: an illegal memory access was encountered\nCUDA kernel errors might "
        "be asynchronously reported at some other API call",
    ),
    (
        "illegal-access-inside-nccl",
        Category.USER_CODE,
        "ncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\nCuda failure 'an illegal "
        "memory access was encountered'",
    ),
    ("device-side-assert", Category.USER_CODE, "RuntimeError: CUDA error: device-side assert triggered"),
    (
        "name-error-in-wrapper",
        Category.USER_CODE,
        "AlgorithmError: ExecuteUserScriptError:\nExitCode 1\nErrorMessage \"NameError: name 'modle' is not defined\"",
    ),
    (
        "nccl-invalid-usage",
        Category.USER_CODE,
        "torch.distributed.DistBackendError: NCCL error in: "
        "../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, invalid usage (run with NCCL_DEBUG=WARN for "
        "details), NCCL version 2.18.1\nncclInvalidUsage: This usually reflects invalid usage of NCCL "
        "library.",
    ),
    (
        "value-error-in-wrapper",
        Category.USER_CODE,
        'AlgorithmError: ExecuteUserScriptError:\nExitCode 1\nErrorMessage "ValueError: Expected input '
        'batch_size (32) to match target batch_size (16)."',
    ),
    (
        "retry-words-in-a-bug",
        Category.USER_CODE,
        'AlgorithmError: ExecuteUserScriptError:\nExitCode 1\nErrorMessage "RuntimeError: loading '
        'failed, please retry"',
    ),
    # data
    (
        "no-such-key",
        Category.DATA,
        "ClientError: Data download failed:NoSuchKey (404): The specified key does not exist.",
    ),
    (
        "pandas-parser-error",
        Category.DATA,
        "pandas.errors.ParserError: Error tokenizing data. C error: Expected 5 fields in line 3, saw 7",
    ),
    (
        "missing-channel-file",
        Category.DATA,
        "FileNotFoundError: [Errno 2] No such file or directory: '/opt/ml/input/data/train/train.csv'",
    ),
    (
        "unicode-decode",
        Category.DATA,
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0x89 in position 0: invalid start byte",
    ),
    # unknown: a person should look
    # EFA's own "internal error" is not SageMaker's: without a cause we do not relaunch.
    (
        "efa-internal-error-without-cause",
        Category.UNKNOWN,
        "Libfabric EFA provider has encountered an internal error:\n\nEFA internal error: (4112) "
        "Failure to post internal receive buffers\n\nYour application will now abort().",
    ),
    ("client-error-prefix-alone", Category.UNKNOWN, "ClientError: "),
    ("artifact-upload-wrapper-alone", Category.UNKNOWN, "ClientError: Artifact upload failed:"),
    (
        "stop-refused-completed",
        Category.UNKNOWN,
        "An error occurred (ValidationException) when calling the StopTrainingJob operation: The "
        "request was rejected because the training job is in status Completed.",
    ),
    ("training-job-failed", Category.UNKNOWN, "Training job failed"),
]


@pytest.mark.parametrize(
    ("category", "text"), [case[1:] for case in OTHER_TEXTS], ids=[case[0] for case in OTHER_TEXTS]
)
def test_texts_outside_the_fixture(category: Category, text: str) -> None:
    result = classify_failure_reason(text)
    assert result.category == category, result.reason
    assert result.decision == DECISION_BY_CATEGORY[category]


def test_every_category_has_a_decision() -> None:
    assert set(DECISION_BY_CATEGORY) == set(Category)


def test_reason_quotes_the_words_that_matched() -> None:
    result = classify_failure_reason("InternalServerError: We encountered an internal error.")
    assert "'InternalServerError'" in result.reason
    assert "relaunch from the last checkpoint" in result.reason


def test_reason_quotes_wrapped_words_on_one_line() -> None:
    result = classify_failure_reason("ResourceLimitExceeded: The account-level service\n   limit 'x'")
    assert result.category == Category.QUOTA
    assert "\n" not in result.reason


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\t ",
        "".join(chr(33 + (i * 7) % 90) for i in range(1024)),  # 1,024 characters of punctuation and letters
        "训练失败 💥 ошибка \u202e\u0000 ñ \ufffd",
        "\u0130" * 1024,  # lower-cases to two characters each
    ],
    ids=["empty", "whitespace", "1024-chars-of-junk", "unicode", "changes-length-when-lowered"],
)
def test_junk_is_unknown_and_notifies(text: str) -> None:
    result = classify_failure_reason(text)
    assert (result.category, result.decision) == (Category.UNKNOWN, Decision.NOTIFY)
    assert result.reason


def test_text_that_changes_length_when_lowered_still_matches() -> None:
    result = classify_failure_reason("\u0130" * 10 + " InternalServerError: please try again.")
    assert result.category == Category.INTERNAL


def _long_texts() -> dict[str, str]:
    rng = random.Random(7)
    return {
        "ascii-junk": "".join(chr(rng.randrange(32, 127)) for _ in range(100_000)),
        "unicode-junk": "".join(chr(rng.randrange(32, 0x2FFF)) for _ in range(100_000)),
        "one-letter": "a" * 100_000,
        "newlines": "x" + "\n" * 100_000 + "x",
        "near-miss-nccl": ("NCCL " + "x" * 60 + " ") * 1_500,
        "near-miss-efa": "EFA " * 25_000,
        "near-miss-xid": "Xid (" * 20_000,
        "near-miss-exit": "exit code " * 10_000,
    }


def test_no_rule_can_backtrack_without_bound() -> None:
    """By construction (tests/regex_safety.py): no unbounded repetition inside another, and no unbounded `.`."""
    from tests.regex_safety import unsafe_constructs
    from trainguard.domain.classification_rules import RULES

    assert {i: found for i, rule in enumerate(RULES) if (found := unsafe_constructs(rule.pattern))} == {}
    assert unsafe_constructs("(a+)+b") and unsafe_constructs("nccl.*timeout")  # the check itself sees them


@pytest.mark.parametrize(("name", "text"), list(_long_texts().items()), ids=list(_long_texts()))
def test_the_cost_of_a_long_text_grows_linearly(name: str, text: str) -> None:
    from tests.regex_safety import GROWTH_FACTOR, LINEAR_GROWTH_LIMIT, cost_growth

    growth = cost_growth(classify_failure_reason, text)
    assert growth < LINEAR_GROWTH_LIMIT, f"{name}: {GROWTH_FACTOR}x the text cost {growth:.1f}x"


def test_a_cause_at_the_end_of_a_long_log_is_found() -> None:
    log = "step 1 loss 0.1\n" * 6_000 + "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert classify_failure_reason(log).category == Category.OOM


JOB_ENDS: list[tuple[str, str, str, str, Category, Decision]] = [
    ("completed", "Completed", "Completed", "", Category.COMPLETED, Decision.IGNORE),
    ("in-progress", "InProgress", "Training", "", Category.IN_PROGRESS, Decision.IGNORE),
    ("stopping", "Stopping", "Stopping", "", Category.IN_PROGRESS, Decision.IGNORE),
    (
        "failed-internal",
        "Failed",
        "Failed",
        "InternalServerError: We encountered an internal error.",
        Category.INTERNAL,
        Decision.RETRY,
    ),
    (
        "failed-oom",
        "Failed",
        "Failed",
        "ClientError: Please use an instance type with more memory",
        Category.OOM,
        Decision.NOTIFY,
    ),
    ("failed-without-reason", "Failed", "Failed", "", Category.UNKNOWN, Decision.NOTIFY),
    ("max-runtime", "Stopped", "MaxRuntimeExceeded", "", Category.MAX_RUNTIME, Decision.NOTIFY),
    ("max-wait", "Stopped", "MaxWaitTimeExceeded", "", Category.SPOT_INTERRUPTION, Decision.RETRY),
    ("max-wait-typo", "Stopped", "MaxWaitTmeExceeded", "", Category.SPOT_INTERRUPTION, Decision.RETRY),
    ("max-wait-lower", "Stopped", "maxwaittimeexceeded", "", Category.SPOT_INTERRUPTION, Decision.RETRY),
    ("spot-interrupted", "Stopped", "Interrupted", "", Category.SPOT_INTERRUPTION, Decision.RETRY),
    ("stopped-on-purpose", "Stopped", "Stopped", "", Category.STOPPED, Decision.IGNORE),
    ("stopped-no-secondary", "Stopped", "", "", Category.STOPPED, Decision.IGNORE),
    (
        "status-case-and-spaces",
        " failed ",
        "",
        "CapacityError: Unable to provision requested ML compute capacity.",
        Category.CAPACITY,
        Decision.RETRY,
    ),
    ("unknown-status", "Deleting", "", "", Category.UNKNOWN, Decision.NOTIFY),
    ("empty-status", "", "", "", Category.UNKNOWN, Decision.NOTIFY),
]


@pytest.mark.parametrize(
    ("status", "secondary", "reason", "category", "decision"),
    [case[1:] for case in JOB_ENDS],
    ids=[case[0] for case in JOB_ENDS],
)
def test_job_end(status: str, secondary: str, reason: str, category: Category, decision: Decision) -> None:
    result = classify_job_end(status, secondary, reason)
    assert (result.category, result.decision) == (category, decision), result.reason
    assert result.reason


def test_max_wait_reason_speaks_of_spot_capacity() -> None:
    spot = classify_job_end("Stopped", "MaxWaitTimeExceeded", "", managed_spot=True)
    assert "managed spot" in spot.reason and "spot capacity" in spot.reason
    assert "spot capacity" in classify_job_end("Stopped", "MaxWaitTimeExceeded", "").reason


def test_domain_module_imports_nothing_impure() -> None:
    tree = ast.parse(Path(classification.__file__).read_text(encoding="utf-8"))
    nodes = list(ast.walk(tree))
    imported = {alias.name.split(".")[0] for node in nodes if isinstance(node, ast.Import) for alias in node.names}
    imported |= {(node.module or "").split(".")[0] for node in nodes if isinstance(node, ast.ImportFrom)}
    assert imported <= {"__future__", "re", "dataclasses", "trainguard"}


def test_the_growth_check_tells_quadratic_from_linear() -> None:
    """The check itself: a backtracking search (each start scans to the end: quadratic) fails it, a scan passes."""
    from tests.regex_safety import LINEAR_GROWTH_LIMIT, cost_growth

    quadratic = re.compile(r"\s*x")
    assert cost_growth(quadratic.search, " " * 2_400) > LINEAR_GROWTH_LIMIT
    assert cost_growth(lambda text: text.count("x"), " " * 400_000) < LINEAR_GROWTH_LIMIT
