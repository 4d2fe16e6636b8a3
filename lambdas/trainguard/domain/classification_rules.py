"""The classifier's rules, in order: the first that matches a text decides its category (classification.py).

How to write a pattern: start each alternative with a literal character (not `\\b`, `^` or a
group), so the engine can skip to candidate positions; put no space inside `[...]`; keep windows
between words bounded (`.{0,N}`) and never nest unbounded repetition. Matching then stays linear
and fast on long inputs (tests/unit/test_classification.py times a 100 kB text).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from trainguard.domain.model import Category

_ESCAPE_OR_TEXT = re.compile(r"\\.|[^\\]+")


def _rx(*alternatives: str) -> re.Pattern[str]:
    """One pattern, matched against the lower-cased text; a space means one or more whitespace characters.

    Patterns are written in natural case for reading and lower-cased here (escapes such as `\\S` keep
    theirs): a case-sensitive search of lower-cased text is several times faster than re.IGNORECASE.
    """
    pattern = "|".join(alternatives).replace(" ", r"(?:\s+)")
    lowered = _ESCAPE_OR_TEXT.sub(lambda part: part[0] if part[0][0] == "\\" else part[0].lower(), pattern)
    return re.compile(lowered, re.DOTALL)


@dataclass(frozen=True)
class _Rule:
    category: Category
    pattern: re.Pattern[str]
    reason: str  # "{match}" becomes the words that matched


NO_RETRY = "A relaunch would fail the same way, so trainguard does not retry."
RELAUNCH = "so a relaunch from the last checkpoint should help."


def _notify(what: str, next_step: str) -> str:
    """A user-side failure's reason: what happened, that a relaunch would not help, and what a person can do."""
    return f"{what} {NO_RETRY} Next step: {next_step}"


RULES: tuple[_Rule, ...] = (
    # Not a failure of a job: StopTrainingJob refusing a job that has already ended (FACTS: treat as done).
    _Rule(Category.UNKNOWN, _rx(r"rejected because the (training )?job is (already )?in status"),
          "StopTrainingJob was refused because the job had already ended ({match}); this is not a training "
          "failure and there is nothing to relaunch, but a person should check what called it."),
    # The job's own time limit, not spot: AWS describes it almost as it describes the spot stop, "MaxWaitTimeExceeded
    # - The job stopped because it exceeded the maximum allowed wait time" (API_DescribeTrainingJob, SecondaryStatus).
    _Rule(Category.MAX_RUNTIME, _rx(r"MaxRuntimeExceeded", r"exceeded the maximum allowed runtime"),
          "SageMaker stopped the job at its own time limit, MaxRuntimeInSeconds ({match}); that is not a fault, so "
          "trainguard does not relaunch it. Next step: see in the log whether it was still making progress (then "
          "raise the limit or resume from its checkpoint) or had hung (then find where)."),

    # --- Configuration: before quota and before anything transient. ---
    # Same error code as a quota (ResourceLimitExceeded), but no increase can fix it.
    _Rule(Category.CONFIG, _rx(r"not (available|supported|offered) in (this|the|your) (current )?region"),
          _notify("The instance type is not offered in this region ({match}); it looks like a quota error but no "
                  "increase can fix it.", "pick an instance type offered in this region, or another region.")),
    # EFA/libfabric "internal error ... Cannot allocate memory" means the memlock ulimit is too low.
    _Rule(Category.CONFIG, _rx(r"libfabric.{0,300}cannot allocate memory",
                               r"efa\b.{0,300}cannot allocate memory",
                               r"NET/OFI.{0,300}cannot allocate memory",
                               r"cannot allocate memory.{0,300}(libfabric|efa\b)",
                               r"max(imum)? locked memory", r"memlock", r"ulimit -l"),
          _notify("The EFA network stack could not lock memory ({match}): the container's memlock ulimit is too "
                  "low.", "raise the memlock ulimit in the image (unlimited, as EFA needs).")),
    # The EFA stack failing to start (aws-ofi-nccl, libfabric): the instance type, the container's EFA libraries
    # or its settings, the same on new hosts (aws/aws-ofi-nccl#715, #24, #889; aws/deep-learning-containers#2675;
    # NVIDIA/nccl#546): tests/fixtures/failure_reasons_over_the_years.json.
    _Rule(Category.CONFIG, _rx(r"aws-ofi-nccl initialization failed", r"NET/OFI only EFA provider",
                               r"NET/OFI couldn't (open|enable) (CQ|AV|endpoint)",
                               r"NET/OFI creating new endpoint .{0,80}failed",
                               r"NET/OFI unable to register memory"),
          _notify("The EFA network stack could not start on the hosts ({match}).", "check that the instance type "
                  "supports EFA and that the image's libfabric, aws-ofi-nccl and their settings fit it.")),
    # "Disk quota exceeded" (EDQUOT) is a disk problem, not a service quota.
    _Rule(Category.CONFIG, _rx(r"insufficient disk space", r"no space left on device", r"disk quota exceeded",
                               r"not enough (free )?disk space", r"ENOSPC"),
          _notify("The job ran out of disk space ({match}).", "raise VolumeSizeInGB, or write less (checkpoints, "
                  "caches) to the local disk.")),
    _Rule(Category.CONFIG, _rx(r"access ?denied", r"not authorized to perform",
                               r"unable to assume (the )?role", r"sts:AssumeRole", r"trust relationship",
                               r"permission ?denied", r"PermissionError", r"UnauthorizedOperation",
                               r"forbidden\b", r"insufficient permissions?",
                               r"KMS.{0,60}(denied|disabled|cannot)"),
          _notify("Access was denied ({match}).", "allow what the message names in the execution role, or fix "
                  "the bucket, key or trust policy it names.")),
    _Rule(Category.CONFIG, _rx(r"route table", r"VPC endpoint", r"NAT (device|gateway)", r"network ACL",
                               r"could not connect to the endpoint URL", r"free IP addresses"),
          _notify("The job could not reach S3 or another endpoint from its VPC ({match}).", "give its subnets a "
                  "route to S3 (an endpoint or NAT) and its security groups outbound access.")),
    _Rule(Category.CONFIG, _rx(r"cannot ?pull", r"image does not exist", r"pull permissions",
                               r"image (could not be |was not )?found",
                               r"cannot find (the requested image|repository)",
                               r"exec format error", r"executable file not found",
                               r"CUDA driver version is insufficient", r"found no NVIDIA driver",
                               r"no CUDA-capable device is detected", r"FATAL tini \(\d+\)\] exec"),
          _notify("The training image could not be pulled or started on this instance ({match}).", "check the "
                  "image URI, the role's pull permission, the entry point and the instance type.")),
    # A build made for other GPUs (nnUNet#1040: "the pytorch version you installed is not compatible with the GPU");
    # FlashAttention 2 on a T4 or V100 (flash-attention#762): on SageMaker, g4dn and p3.
    _Rule(Category.CONFIG, _rx(r"no kernel image is available", r"only supports Ampere GPUs",
                               r"not compatible with the current PyTorch installation"),
          _notify("The framework or a library in the image was not built for this instance's GPU ({match}).",
                  "use an image built for this GPU generation, or an instance type the code supports "
                  "(FlashAttention 2 needs Ampere or newer: g5, p4d, p5, not g4dn or p3).")),
    # from_pretrained: a wrong name (huggingface/notebooks#145) or no way to the Hub (network isolation, a VPC without
    # NAT: philschmid/huggingface-sagemaker-workshop-series#15); a Hub outage is rarer than either.
    _Rule(Category.CONFIG, _rx(r"couldn't connect to 'https://huggingface\.co", r"not a valid model identifier",
                               r"can't load (the )?(config|tokenizer|model|weights) for"),
          _notify("The code could not load a model by name ({match}): a wrong name (an unset hyperparameter "
                  "reads 'None') or no way to the Hugging Face Hub.", "check the name; in a VPC, use a channel.")),
    # torch.distributed's env:// rendezvous reads RANK, WORLD_SIZE, MASTER_ADDR that torchrun sets (llama-cookbook#59).
    _Rule(Category.CONFIG, _rx(r"environment variable \w+ expected, but not set"),
          _notify("The script was started without the distributed launcher's environment ({match}).", "start it "
                  "with torchrun, or set the estimator's distribution (torch_distributed) so SageMaker does.")),
    _Rule(Category.CONFIG, _rx(r"ValidationException", r"validation errors? detected",
                               r"failed to satisfy constraint", r"not valid under any of the given schemas",
                               r"InvalidInputException", r"InvalidParameter", r"ResourceInUse",
                               r"ResourceNotFound", r"hyperparameter_validation", r"required hyperparameter",
                               r"invalid hyperparameter", r"unknown hyperparameter",
                               r"hyperparameter.{0,60}(is invalid|not valid|not supported|not recognized)"),
          _notify("SageMaker or the algorithm rejected the job's configuration ({match}).", "fix the request "
                  "field or hyperparameter the message names, then launch again.")),

    # --- Quota: before anything that retries (quota texts say "Retry not appropriate", "retry policy"). ---
    _Rule(Category.QUOTA, _rx(r"account-level service limit", r"ResourceLimitExceeded",
                              r"ServiceQuotaExceeded", r"service quota.{0,40}exceeded",
                              r"request an increase for this (limit|quota)"),
          "An account service quota blocks the job ({match}); a relaunch is refused the same way until the "
          "quota is raised, so trainguard treats it as a quota problem."),

    # --- Out of memory: before the user-script wrapper that often hides it. ---
    # DataLoader workers pass batches through /dev/shm; SageMaker has no setting for it (sagemaker-python-sdk#5592).
    _Rule(Category.OOM, _rx(r"out of shared memory", r"insufficient shared memory", r"killed by signal: Bus error"),
          _notify("DataLoader workers ran out of shared memory ({match}).", "lower num_workers or the batch size.")),
    _Rule(Category.OOM, _rx(r"out[\s_]*of[\s_]*memory", r"OOM when allocating", r"bad_alloc",
                            r"memory allocation (error|failed|failure)",
                            r"CUBLAS_STATUS_ALLOC_FAILED"),
          _notify("The job ran out of memory ({match}).", "lower the batch size, or use activation checkpointing "
                  "or an instance type with more GPU memory.")),
    # Host RAM: SageMaker's own hint, the kernel's OOM killer (SIGKILL, exit code 137), ENOMEM.
    _Rule(Category.OOM, _rx(r"instance type with more memory", r"MemoryError", r"cannot allocate memory",
                            r"OOMKilled", r"oom[-_]?\s*kill", r"exit ?(code|status)\s*:?\s*(137|-9)\b",
                            r"signal 9 \(SIGKILL\)", r":\s*\d+ Killed\b", r"killed by signal:? killed"),
          _notify("The job ran out of host memory, most likely killed by the out-of-memory killer ({match}).",
                  "use an instance type with more memory, or hold less in RAM at once.")),
    # A shell's bare "Killed" line. Its own rule: an anchor would slow down the alternatives above.
    _Rule(Category.OOM, re.compile(r"(?m)^[^\S\n]*killed[^\S\n]*$"),
          _notify("The job was killed, most likely by the out-of-memory killer ({match}).", "use an instance "
                  "type with more memory, or hold less in RAM at once.")),

    # --- Data. ---
    _Rule(Category.DATA, _rx(r"error (when |while )?parsing", r"failed (to |when |while )?pars(e|ing)",
                             r"unable to parse", r"could not parse", r"cannot parse", r"ParserError",
                             r"error tokenizing data", r"could not determine delimiter",
                             r"UnicodeDecodeError", r"JSONDecodeError", r"illegal char", r"S3 prefix",
                             r"NoSuchKey", r"the specified key does not exist", r"non-numeric value",
                             r"no such file or directory.{0,120}/opt/ml/input/data",
                             r"no files? (was |were )?found.{0,120}/opt/ml/input/data",
                             r"FileNotFoundError.{0,120}/opt/ml/input/data"),
          _notify("The input data could not be read ({match}).", "check the file the message names and that the "
                  "channel's S3 prefix holds what the code expects.")),

    # --- Surely a bug in the training code, even if other words in the text look transient. ---
    _Rule(Category.USER_CODE, _rx(r"ModuleNotFoundError", r"ImportError", r"no module named"),
          _notify("A Python package the code imports is missing or is another version than the code expects "
                  "({match}).", "add it, pinned, to requirements.txt next to the entry point, or to the image.")),
    # An index out of range inside a CUDA kernel (fastai#1835: "usually means there has been a bad index error").
    _Rule(Category.USER_CODE, _rx(r"device-side assert"),
          _notify("A CUDA kernel's own check failed ({match}): almost always an index out of range (a label or a "
                  "token id too large).", "check labels and ids; rerun with CUDA_LAUNCH_BLOCKING=1 to see where.")),
    # "an illegal memory access was encountered" (cudaErrorIllegalAddress) is almost always an
    # out-of-bounds index or a kernel bug; a real GPU fault comes with an Xid or ECC line of its own.
    # Notify rather than risk a retry loop on a bug.
    _Rule(Category.USER_CODE, _rx(r"SyntaxError", r"IndentationError", r"NameError", r"UnboundLocalError",
                                  r"AttributeError", r"TypeError", r"KeyError", r"IndexError", r"ZeroDivisionError",
                                  r"AssertionError", r"NotImplementedError", r"RecursionError",
                                  r"illegal memory access", r"invalid device ordinal",
                                  r"ncclInvalid(Usage|Argument)", r"NCCL.{0,200}invalid (usage|argument)",
                                  # gloo: the ranks called different collectives (pytorch/gloo#456)
                                  r"collective mismatch in your code", r"op\.preamble\.length <= op\.nbytes"),
          _notify("The training code has a bug ({match}).", "read the traceback in the job's log, fix the code "
                  "and launch again.")),

    # --- Transient: relaunch from the last checkpoint. ---
    _Rule(Category.SPOT_INTERRUPTION, _rx(r"max ?wait ?ti?me ?exceeded", r"maximum allowed wait time",
                                          r"spot.{0,40}interrupt"),
          "The managed spot instances were interrupted and spot capacity did not come back in time "
          "({match}); an interruption beyond MaxWait is treated as capacity, " + RELAUNCH),
    _Rule(Category.CAPACITY, _rx(r"CapacityError", r"insufficient ?instance ?capacity",
                                 r"insufficient ?capacity", r"not enough capacity",
                                 r"unable to provision requested ML compute capacity",
                                 r"do not have sufficient .{0,60}capacity"),
          "AWS did not have enough instances of the requested type ({match}); capacity shortages pass, "
          + RELAUNCH),
    # cuDNN's internal error is grouped with ECC faults by teams who retry it on another instance; when it
    # is really an OOM the text says so and the OOM rules win. Retries are capped per job anyway.
    _Rule(Category.HARDWARE, _rx(r"uncorrectable ECC", r"ECC ?uncorrectable", r"double-?\s*bit ECC",
                                 r"fallen off the bus", r"GPU_IS_LOST", r"GPU is lost",
                                 r"NVLink:? (fatal )?error",
                                 r"xid\b(\s*\([^)\n]{0,40}\))?\s*:?\s*(48|6[1-4]|74|79|9[245]|119|120)\b",
                                 r"hardware ?(failure|fault|error)", r"instance was unhealthy",
                                 r"failed (the |a |its )?health ?check", r"unhealthy (instance|host|node)",
                                 r"CUDNN_STATUS_INTERNAL_ERROR"),
          "A GPU or host failed in hardware ({match}); a relaunch gets healthy instances, " + RELAUNCH),
    # gloo (torch.distributed on the CPU) says "Connection closed by peer" when another rank's process exited
    # (a Python exception closes its sockets) and "Read error ...: Connection reset by peer" when it died with
    # data unread (OOM killer, abort, os._exit: RFC 1122 4.2.2.13); os._exit(1) and SIGKILL print the same words.
    # That rank's own log names the cause, mostly a bug (gloo: "typically caused by a remote worker crashing";
    # pytorch/pytorch#75512), while a dead or hung host sends nothing and its peers time out (gloo's timeout,
    # below). Captured from examples/train.py: tests/fixtures/distributed_failure_reasons.json. Before the
    # SIGABRT rule: a gloo collective mismatch aborts one rank and leaves only this and "exitcode: -6".
    _Rule(Category.USER_CODE, _rx(r"pair\.cc:\d+\] connection closed by peer",
                                  r"pair\.cc:\d+\] read error .{0,80}connection reset by peer"),
          "Another rank's process ended ({match}); its own log names the cause, most often a bug or an "
          "out-of-memory kill (a dead or hung host shows as a timeout instead), so trainguard does not "
          "relaunch on this text alone. Next step: read the log of the rank that failed first."),
    # The network fabric failing under a running collective: EFA completions in error (libfabric's efa provider,
    # the OFI plugin's NET/OFI warnings), a socket to a peer broken. A lost or faulty link or peer host, as
    # transient as a collective timeout (aws/aws-ofi-nccl#161, #156, #346, #927; NVIDIA/nccl#1597, #795).
    _Rule(Category.COLLECTIVE_TIMEOUT, _rx(r"NET/OFI.{0,160}completed with error", r"NET/OFI unexpected status",
                                           r"NET/OFI write complete from un", r"rxr_cq_write_(tx|rx)_error",
                                           r"efa_rdm_(txe|rxe|pke|ope)_handle_error", r"unresponsive receiver",
                                           r"NCCL WARN Net : (call to|connect to) .{0,120}failed"),
          "The network fabric between the hosts failed during a collective ({match}); a lost link or a faulty peer "
          "host is transient, " + RELAUNCH),
    # A torchrun summary with SIGABRT (exitcode -6) is how ranks die when the NCCL watchdog aborts them
    # after a collective timeout; bugs that end in SIGABRT (OOM, illegal access) are caught above.
    _Rule(Category.COLLECTIVE_TIMEOUT, _rx(r"collective operation timeout",
                                           r"ran for \d+ milliseconds before timing out",
                                           r"NCCL (\w+ ){0,2}(timeout|timed out|timing out)",
                                           r"NCCL communicator.{0,40}abort", r"watchdog got stuck",
                                           r"heartbeat monitor timed out",
                                           r"DistBackendError", r"NCCL error",
                                           # a peer that never joined the rendezvous: a host or network fault
                                           r"DistStoreError", r"waiting for clients",
                                           r"rendezvous.{0,60}(timeout|timed out)",
                                           r"nccl(System|Remote|Internal)Error",
                                           r"signal 6 \(SIGABRT\) received by PID", r"exitcode\s*:\s*-6\b",
                                           # gloo: a peer sent nothing in time (hung or dead host, as above)
                                           r"timed out waiting \d+ ?ms for (recv|send) operation"),
          "A collective operation between the hosts failed or timed out ({match}); these are usually "
          "transient network or peer faults, " + RELAUNCH),
    _Rule(Category.INTERNAL, _rx(r"InternalServerError", r"InternalFailure", r"\(InternalError\)",
                                 r"internal server error", r"we encountered an internal error",
                                 r"Platform Error", r"ServiceUnavailable", r"service unavailable"),
          "SageMaker reported an internal error ({match}); these are transient, " + RELAUNCH),
    _Rule(Category.INTERNAL, _rx(r"Throttling", r"rate exceeded", r"TooManyRequests", r"\(SlowDown\)",
                                 r"reduce your request rate", r"RequestLimitExceeded"),
          "An AWS API call was throttled ({match}); throttling passes, " + RELAUNCH),

    # --- What the training code said, after every transient cause (a real one inside these texts still wins). ---
    # A native library's assertion (TensorFlow, XGBoost, MXNet: glog's CHECK), e.g. sagemaker-python-sdk#330.
    _Rule(Category.USER_CODE, _rx(r"Check failed: "),
          _notify("A native library (TensorFlow, XGBoost, MXNet) stopped on a failed internal check ({match}): "
                  "usually a shape, an empty input or versions that do not fit together.", "read the condition "
                  "after 'Check failed' in the log; fix the input or pin another framework version.")),
    _Rule(Category.USER_CODE, _rx(r"Expected all tensors to be on the same device", r"size mismatch",
                                  r"shapes cannot be multiplied", r"Error\(s\) in loading state_dict",
                                  r"must match the size of tensor"),
          _notify("Tensors did not fit together ({match}): model, data and checkpoint disagree in shape or "
                  "device.", "put every tensor on the model's device, or use a checkpoint of the same model.")),
    # A library refusing a feature: Lightning-AI/pytorch-lightning#20409, "RuntimeError: SMDDP does not support:
    # ReduceOp". Only after an error's name: libfabric warns "which this device does not support" on its way.
    _Rule(Category.USER_CODE, _rx(r"error:? .{0,200}(does not|doesn't|do not) support",
                                  r"error:? .{0,200}(is|are) (not (yet )?|only )supported"),
          _notify("A framework or library refused what the code asked ({match}): not supported with this version "
                  "or instance type.", "change the call or setting, or use a version or instance that supports it.")),
    # SIGSEGV (139, torchrun's -11): a failing host shows Xid or ECC lines (relaunched above); code crashing on one GPU
    # type only is a build that does not fit it (NVIDIA/Megatron-LM#1880). A loop on a bug costs more than a notice.
    _Rule(Category.USER_CODE, _rx(r"segmentation fault", r"SIGSEGV", r"signal 11\b",
                                  r"exit ?code\s*:?\s*(139|-11)\b"),
          _notify("Native code crashed with a segmentation fault ({match}): most often a bug or a build made for "
                  "another PyTorch, CUDA or GPU; a failing host would show Xid or ECC lines.", "read the native "
                  "frames before the crash; if the log shows nothing else, relaunch once by hand.")),
    _Rule(Category.USER_CODE, _rx(r"ValueError"),
          _notify("The training code rejected a value ({match}): often a row of data, a hyperparameter or a "
                  "shape.", "read the message after ValueError in the log, fix the value and launch again.")),
    _Rule(Category.USER_CODE, _rx(r"FileNotFoundError", r"no such file or directory", r"IsADirectoryError",
                                  r"NotADirectoryError"),
          _notify("A path the code opened does not exist ({match}).", "check it against SageMaker's paths "
                  "(/opt/ml/input/data/<channel>, /opt/ml/model) and create output folders before writing.")),
    # Last: PyTorch raises RuntimeError for most things (transient ones matched above). One about a connection or a
    # wait running out (gloo's "Connection refused", "DataLoader timed out") stays unknown: a host, a security group.
    _Rule(Category.USER_CODE, _rx(r"RuntimeError(?!.{0,200}(connect|socket|broken pipe|reset by peer|time ?d? ?out))"),
          _notify("The code or its framework raised RuntimeError ({match}) and the text names no transient cause.",
                  "read the message after RuntimeError in the job's log.")),

    # --- Wrappers: only when nothing above named the cause. ---
    _Rule(Category.DATA, _rx(r"data download failed", r"failed to download data"),
          _notify("SageMaker could not download the input data ({match}) and names no transient cause.", "check "
                  "the channel's S3 URI, that the objects exist and that the execution role may read them.")),
    _Rule(Category.CONFIG, _rx(r"failed to invoke sagemaker:\s*Create\w*"),
          _notify("SageMaker Pipelines could not create the job ({match}): the request was rejected as given.",
                  "fix the step's request as the message says.")),
    _Rule(Category.USER_CODE, _rx(r"ExecuteUserScriptError", r"AlgorithmError", r"algorithm error",
                                  r"framework error", r"Traceback \(most recent call last\)",
                                  r"non-zero exit status", r"CalledProcessError", r"ChildFailedError",
                                  r"exit ?code\s*:?\s*[1-9]"),
          _notify("The training script exited with an error ({match}) and the text names no transient cause.",
                  "read the last error in the job's log.")),
)
