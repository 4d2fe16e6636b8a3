"""A job's own progress rule, declared by tags: which of its lines report a step, how often they come, and by when
the first must.

Like the HyperPod training operator's log monitoring rules (`logPattern`, `expectedRecurringFrequencyInSeconds`,
`expectedStartCutOffInSeconds`: https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-eks-operator-usage.html),
but read from the training job's tags:

    trainguard:progress-pattern            a template of the step line, such as `iteration @step/ @any lm loss: @loss`
    trainguard:progress-interval-seconds   the longest expected gap between two step lines, 1-86400
    trainguard:progress-start-seconds      the first step line is expected this long after training starts, 0-86400

The pattern is a template, not a regular expression, for two reasons. A SageMaker tag value may hold only letters,
digits, spaces and `_ . : / = + - @` (the TagValue shape's pattern, `([\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]*)`, max 256,
in botocore's sagemaker service model), so no backslash, bracket, parenthesis or star can be written in one. And a
job's own regular expression would run on every line it prints: a template is compiled by trainguard into patterns
that are bounded by construction, so no value can make a line expensive to read. In a template:
- `@step` is the step, a whole number (exactly once); `@loss` its loss, a number, NaN or an infinity (at most once);
  `@batch` its batch size, a whole number (at most once: a change of it is planned, step_pace.py);
- `@any` is any text of up to ANY_CHARS characters (at most MAX_ANY times, always between two other parts);
- a run of spaces matches one to 64 spaces or tabs (beside `@any`, nothing more than `@any`); every other character
  matches itself.
The template must hold a literal word of MIN_LITERAL characters, so that it cannot match every number in every line,
and a placeholder must be followed by a literal character or end the template (`@step@loss` is ambiguous). A value
that breaks a rule is refused with the reason, and the job is read as if it had no rule.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from trainguard.domain.policy import TagKeys, TagProblem, read_int_tag
from trainguard.domain.progress_reading import NUMBER, STEP, ProgressReading, Reader, read_number
from trainguard.domain.wording import format_value

MAX_TEMPLATE_CHARS = 256  # SageMaker's TagValue max
ANY_CHARS = 256
MAX_ANY = 2
MIN_LITERAL = 3
MAX_SECONDS = 86400
_TAG_VALUE = re.compile(r"[\w .:/=+@-]*")  # the TagValue alphabet (its spaces: the plain one only)
_TOKEN = re.compile(r"@[A-Za-z]*| +|[^@ ]+")
_PLACEHOLDERS = {
    "@step": f"(?P<step>{STEP})(?![0-9])",
    "@loss": f"(?P<loss>{NUMBER})",
    "@batch": f"(?P<batch>{STEP})(?![0-9])",
}
_MAX_FIRST_MATCHES = 8  # where the first part occurs more often than this in a line, the later places are not tried


@dataclass(frozen=True)
class ProgressRule:
    """A job's progress rule, compiled: `parts` are the template's patterns between its `@any`s, in order."""

    template: str
    parts: tuple[re.Pattern[str], ...]

    def read(self, text: str) -> ProgressReading | None:
        """The step (and loss) of `text` when the template matches it, else None."""
        first, rest = self.parts[0], self.parts[1:]
        for count, start in enumerate(first.finditer(text)):
            if count == _MAX_FIRST_MATCHES:
                return None
            found = [start]
            for part in rest:  # each `@any` is the bounded lazy prefix of the next part, matched where the last ended
                following = part.match(text, found[-1].end())
                if following is None:
                    break
                found.append(following)
            else:
                return _reading(found)
        return None


@dataclass(frozen=True)
class RuleTags:
    """What a job's progress tags say: its rule (None: none, or refused) and its expectations, with the problems."""

    rule: ProgressRule | None = None
    interval_seconds: int | None = None
    start_seconds: int | None = None
    problems: tuple[TagProblem, ...] = field(default=())


def read_rule_tags(tags: Mapping[str, str], keys: TagKeys) -> RuleTags:
    """A job's progress rule and expectations from its tags. Never raises: a value that cannot be used is left out
    and reported, with the reason."""
    problems: list[TagProblem] = []
    rule = None
    if keys.progress_pattern in tags:
        value = tags[keys.progress_pattern]
        rule_or_reason = compile_template(value)
        if isinstance(rule_or_reason, str):
            problems.append(TagProblem(keys.progress_pattern, value, "no progress rule of its own", rule_or_reason))
        else:
            rule = rule_or_reason
    interval = _seconds(tags, keys.progress_interval_seconds, 1, problems)
    start = _seconds(tags, keys.progress_start_seconds, 0, problems)
    return RuleTags(rule=rule, interval_seconds=interval, start_seconds=start, problems=tuple(problems))


def _seconds(tags: Mapping[str, str], key: str, low: int, problems: list[TagProblem]) -> int | None:
    if key not in tags:
        return None
    found: list[TagProblem] = []
    value = read_int_tag(tags, key, -1, low, MAX_SECONDS, found, unit=" s")
    if found:
        why = f"it must be a whole number from {format_value(low)} s to {format_value(MAX_SECONDS)} s"
        problems.append(TagProblem(key, tags[key], "none", why))
        return None
    return value


def compile_template(template: str) -> ProgressRule | str:
    """The rule a template declares, or why it is refused (a sentence for the notification and explain)."""
    if len(template) > MAX_TEMPLATE_CHARS:
        return f"longer than {MAX_TEMPLATE_CHARS} characters"
    if not _TAG_VALUE.fullmatch(template):
        return "a SageMaker tag value holds only letters, digits, spaces and _ . : / = + - @"
    tokens = _TOKEN.findall(template.strip())
    if reason := _template_problem(tokens):
        return reason
    parts: list[list[str]] = [[]]
    for index, token in enumerate(tokens):
        if token.startswith(" ") and "@any" in tokens[max(index - 1, 0) : index + 2]:
            continue  # a space beside @any: @any covers it
        if token == "@any":
            parts.append([f"[^\\n]{{0,{ANY_CHARS}}}?"])
        elif token in _PLACEHOLDERS:
            parts[-1].append(_PLACEHOLDERS[token])
        elif token.startswith(" "):
            parts[-1].append("[ \\t]{1,64}")
        else:
            parts[-1].append(re.escape(token))
    return ProgressRule(template=template, parts=tuple(re.compile("".join(part)) for part in parts))


def _template_problem(tokens: list[str]) -> str:
    """Why `tokens` (a template's words, spaces and placeholders) make no rule; "" when they do."""
    unknown = [token for token in tokens if token.startswith("@") and token not in {*_PLACEHOLDERS, "@any"}]
    if unknown:
        return f"unknown placeholder {unknown[0][:20]}: use @step, @loss, @batch or @any"
    if tokens.count("@step") != 1:
        return "it needs @step exactly once"
    for once in ("@loss", "@batch"):
        if tokens.count(once) > 1:
            return f"{once} may appear once"
    if tokens.count("@any") > MAX_ANY:
        return f"@any may appear at most {MAX_ANY} times"
    if tokens[0] == "@any" or tokens[-1] == "@any":
        return "@any must stand between two other parts"
    if not any(len(token) >= MIN_LITERAL for token in tokens if not token.startswith(("@", " "))):
        return f"it needs a literal word of at least {MIN_LITERAL} characters"
    for before, after in itertools.pairwise(tokens):
        if before.startswith("@") and after.startswith("@"):
            return f"{before} and {after} need a space or literal text between them"
    return ""


def _reading(found: list[re.Match[str]]) -> ProgressReading | None:
    groups = {name: value for match in found for name, value in match.groupdict().items() if value is not None}
    if "step" not in groups:
        return None
    loss = read_number(groups["loss"]) if "loss" in groups else None
    batch = int(groups["batch"]) if "batch" in groups else None
    return ProgressReading(step=int(groups["step"]), loss=loss, batch=batch, source=Reader.TAG_RULE)
