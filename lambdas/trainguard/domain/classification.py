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

from trainguard.domain.classification_rules import RELAUNCH, RULES
from trainguard.domain.model import Category, Classification, Decision

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
    """Map a FailureReason, API error or log text to a category, a decision and the reason for both."""
    if not text or not text.strip():
        return Classification(Category.UNKNOWN, Decision.NOTIFY, _NO_REASON)
    lowered = text.lower()
    for rule in RULES:
        found = rule.pattern.search(lowered)
        if found:
            reason = rule.reason.replace("{match}", _snippet(text, lowered, found.span()))
            return Classification(rule.category, DECISION_BY_CATEGORY[rule.category], reason)
    return Classification(Category.UNKNOWN, Decision.NOTIFY, _UNRECOGNISED)


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
        return classify_failure_reason(failure_reason)
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
