"""Classify why a training job ended: a category, what trainguard should do about it, and why.

Texts come from FailureReason (cut by SageMaker at about 1,024 characters, so possibly mid-word),
from API errors and from log lines. They are matched on meaning, not on exact strings:

* matching ignores case, and a space in a pattern stands for any run of whitespace, because texts
  arrive line-wrapped anywhere and AWS rewords its messages ("internal error.  Please" had two
  spaces until 2024);
* a prefix alone (`ClientError:`, `AlgorithmError:`, `Data download failed:`) decides nothing: it
  wraps unrelated causes, so the wrappers are tried last, after the causes they hide;
* the first matching rule wins. Specific causes come first: configuration traps (a memlock
  "internal error", a ResourceLimitExceeded that is really "not in this region") before quota,
  quota before anything that retries, out-of-memory before the user-script wrapper, and what is
  surely a bug before the transient categories, so a user's bug never loops through retries (a
  peer process that ended comes before the collective timeouts for the same reason).

The rules themselves, in their order, are in classification_rules.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from trainguard.domain.classification_rules import RELAUNCH, RULES
from trainguard.domain.model import Category, Classification, Decision, TextSource

DECISION_BY_CATEGORY: dict[Category, Decision] = {
    Category.INTERNAL: Decision.RETRY,
    Category.CAPACITY: Decision.RETRY,
    Category.HARDWARE: Decision.RETRY,
    Category.COLLECTIVE_TIMEOUT: Decision.RETRY,
    Category.SPOT_INTERRUPTION: Decision.RETRY,
    Category.QUOTA: Decision.QUOTA,
    Category.USER_CODE: Decision.NOTIFY,
    Category.OOM: Decision.NOTIFY,
    Category.CONFIG: Decision.NOTIFY,
    Category.DATA: Decision.NOTIFY,
    Category.MAX_RUNTIME: Decision.NOTIFY,
    Category.STALL: Decision.RETRY,
    Category.SLOWDOWN: Decision.RETRY,
    Category.DIVERGED: Decision.IGNORE,
    Category.UNKNOWN: Decision.NOTIFY,
    Category.STOPPED: Decision.IGNORE,
    Category.STUCK_STOPPING: Decision.NOTIFY,
    Category.CHECKPOINT_STALE: Decision.NOTIFY,
    Category.COMPLETED: Decision.IGNORE,
    Category.IN_PROGRESS: Decision.IGNORE,
}

_SNIPPET_CHARS = 80
_UNRECOGNISED = "trainguard does not recognise this failure reason; a person should look before a relaunch."
_NO_REASON = "The job failed and SageMaker gave no failure reason; a person should look before a relaunch."


def _snippet(text: str, lowered: str, span: tuple[int, int]) -> str:
    """The matched words, from the original text where lower-casing kept its positions."""
    source = text if len(text) == len(lowered) else lowered
    words = " ".join(source[span[0] : span[1]].split())
    return repr(words if len(words) <= _SNIPPET_CHARS else words[: _SNIPPET_CHARS - 3] + "...")


def classify_failure_reason(text: str) -> Classification:
    """What a FailureReason, API error or log text says, read as if AWS had written all of it: a category, the
    decision that category calls for, and the reason for both. What the text may buy depends on who wrote it:
    `classify_text` caps it."""
    return _read(text).classification


@dataclass(frozen=True)
class _Reading:
    classification: Classification
    start: int | None = None  # where the deciding words start in the text (None: no rule matched)
    words: str = ""  # those words, quoted


def _read(text: str) -> _Reading:
    if not text or not text.strip():
        return _Reading(Classification(Category.UNKNOWN, Decision.NOTIFY, _NO_REASON))
    lowered = text.lower()
    for rule in RULES:
        found = rule.pattern.search(lowered)
        if found:
            words = _snippet(text, lowered, found.span())
            reason = rule.reason.replace("{match}", words)
            reading = Classification(rule.category, DECISION_BY_CATEGORY[rule.category], reason)
            return _Reading(reading, found.start(), words)
    return _Reading(Classification(Category.UNKNOWN, Decision.NOTIFY, _UNRECOGNISED))


# SageMaker's own FailureReason openings (docs/aws-facts.md; tests/fixtures/failure_reasons.json). What follows one is
# SageMaker's text up to the first words of the job's own. An algorithm "can write a description of the failure to
# the failure file" (https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-training-signal-success-failure
# .html), and every real report shows it after "AlgorithmError:" ("AlgorithmError: , exit code: 1" for an empty one,
# aws-samples/amazon-sagemaker-ml-pipeline-deploy-with-terraform#12). A text that opens otherwise may be the
# script's from its first word.
_SAGEMAKER_OPENING = re.compile(
    r"\s*(?:(?:ClientError|CapacityError|InternalServerError|ResourceLimitExceeded|ValidationException)\s*:"
    r"|We encountered an internal error|Unable to provision requested ML compute capacity)",
    re.IGNORECASE,
)
_SCRIPT_WORDS = re.compile(r"AlgorithmError|Algorithm Error|ExecuteUserScriptError", re.IGNORECASE)


def script_text_start(failure_reason: str) -> int:
    """Where the words the training job could write begin in a FailureReason: after SageMaker's own opening, at
    the first AlgorithmError; without a known opening, at the start (the whole text may be the job's)."""
    if not _SAGEMAKER_OPENING.match(failure_reason):
        return 0
    found = _SCRIPT_WORDS.search(failure_reason)
    return found.start() if found else len(failure_reason)


_SCRIPT_QUOTA = (
    "The words that name a quota ({where}) are the job's own, which its training script can write; trainguard "
    "requests a quota increase only from an error AWS returns to a launch, so it only tells you."
)
_SAGEMAKER_QUOTA = (
    "{reading} trainguard requests a quota increase only from an error AWS returns to a launch, so it relaunches the "
    "same shape: if the quota still blocks that launch, AWS's refusal is what the request is sized from."
)
_SCRIPT_RETRY = (
    " The words are the job's own (its training script can write them), so trainguard relaunches only the same shape: "
    "no fallback instance type and no move to on-demand."
)


def classify_text(text: str, source: TextSource) -> Classification:
    """The reading of `text`, capped by who wrote the words that decided it (docs/decisions.md, "Who wrote the
    text"): an API error may buy everything its category calls for; SageMaker's own words in a FailureReason no
    quota request; the training script's words at most a relaunch of the same shape.

    `source` is where the text came from; for a FailureReason (TextSource.SAGEMAKER) the words from
    `script_text_start` on are the job's own, and a rule that matched there was decided by the script."""
    reading = _read(text)
    found, start = reading.classification, reading.start
    writer = source
    if source is TextSource.SAGEMAKER and start is not None and start >= script_text_start(text):
        writer = TextSource.TRAINING_SCRIPT
    if found.category is Category.QUOTA and writer is TextSource.TRAINING_SCRIPT:
        return Classification(Category.QUOTA, Decision.NOTIFY, _SCRIPT_QUOTA.format(where=reading.words), writer)
    if found.category is Category.QUOTA and writer is TextSource.SAGEMAKER:
        return Classification(Category.QUOTA, Decision.RETRY, _SAGEMAKER_QUOTA.format(reading=found.reason), writer)
    if found.decision is Decision.RETRY and writer is TextSource.TRAINING_SCRIPT:
        return Classification(found.category, found.decision, found.reason + _SCRIPT_RETRY, writer)
    return Classification(found.category, found.decision, found.reason, writer)


def _squash(status: str) -> str:
    """'In Progress', 'inprogress' and 'InProgress' all become 'inprogress'."""
    return re.sub(r"[^a-z]", "", status.lower())


_MAX_WAIT = re.compile(r"maxwaitti?meexceeded")  # older AWS docs spelled it "MaxWaitTmeExceeded"


def classify_job_end(
    status: str, secondary_status: str, failure_reason: str, *, managed_spot: bool = False
) -> Classification:
    """Classify a job from TrainingJobStatus and SecondaryStatus, and from its FailureReason if it failed.

    `managed_spot` only sharpens the wording of a MaxWait stop: the statuses decide.
    """
    primary = _squash(status)
    if primary == "completed":
        return Classification(Category.COMPLETED, Decision.IGNORE, "The job completed; nothing to do.")
    if primary in ("inprogress", "stopping"):
        still = f"The job is still {status.strip()}; nothing to do yet."
        return Classification(Category.IN_PROGRESS, Decision.IGNORE, still)
    if primary == "failed":
        return classify_text(failure_reason, TextSource.SAGEMAKER)
    if primary == "stopped":
        return _classify_stop(_squash(secondary_status), managed_spot=managed_spot)
    unknown = f"trainguard does not know the job status {status!r}; a person should look."
    return Classification(Category.UNKNOWN, Decision.NOTIFY, unknown)


def _classify_stop(secondary: str, *, managed_spot: bool) -> Classification:
    if secondary == "maxruntimeexceeded":
        return Classification(
            Category.MAX_RUNTIME,
            Decision.NOTIFY,
            "SageMaker stopped the job at its MaxRuntimeInSeconds (MaxRuntimeExceeded); it may need more "
            "time or it may have hung, so a person should decide (a per-job tag can allow a relaunch).",
        )
    # Interrupted is documented as "the managed spot training instances were interrupted".
    if _MAX_WAIT.fullmatch(secondary) or secondary == "interrupted":
        job = "The managed spot job" if managed_spot else "The job (SageMaker does this only to spot jobs)"
        return Classification(
            Category.SPOT_INTERRUPTION,
            Decision.RETRY,
            f"{job} was stopped because spot capacity did not come back within MaxWaitTimeInSeconds; an "
            "interruption beyond MaxWait is treated as capacity, " + RELAUNCH,
        )
    stopped = "Someone or something stopped the job on purpose; trainguard leaves it stopped."
    return Classification(Category.STOPPED, Decision.IGNORE, stopped)
