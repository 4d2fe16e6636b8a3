"""Text users and training scripts wrote is data in every notification: never a line of its own, a mention, a link
or markup (trainguard.domain.user_text; issue 24, "Text from users is data, never markup").

Sources of the rules: what `str.splitlines` breaks on (Python's library reference, str.splitlines); Slack's control
characters `&`, `<`, `>` and its `<!channel>`, `<!here>`, `<!everyone>`, `<@U...>`, `<#C...>` sequences
(https://api.slack.com/reference/surfaces/formatting); Teams' `<at>...</at>` mentions; Amazon Q Developer renders
`textType` client-markdown "in the target chat platform's markdown"
(https://docs.aws.amazon.com/chatbot/latest/adminguide/custom-notifs.html, "Parameter details").
"""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainguard.domain.chat_messages import compose_chat_message
from trainguard.domain.checkpoints import CheckpointState
from trainguard.domain.messages import Notification, compose_job_end_notification
from trainguard.domain.model import Category, Decision, TrainingJob
from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard.domain.stall_messages import compose_stall_notification
from trainguard.domain.stalls import StallEvidence, StallVerdict
from trainguard.domain.user_text import as_markdown, shown, shown_on_one_line

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

SHOWN = {
    "plain text is kept": (
        "CUDA out of memory. Tried to allocate 2.00 GiB",
        "CUDA out of memory. Tried to allocate 2.00 GiB",
    ),
    "unicode letters are kept": ("modèle 日本 ✓", "modèle 日本 ✓"),
    "a newline stays the one line break": ("a\nb", "a\nb"),
    "CRLF, CR, VT, FF": ("a\r\nb\rc\vd\fe", "a\nb\nc\nd\ne"),
    "U+2028, U+2029, U+0085, file separators": ("a\u2028b\u2029c\x85d\x1ce\x1df\x1eg", "a\nb\nc\nd\ne\nf\ng"),
    "a tab is a space": ("a\tb", "a b"),
    "other C0 controls and DEL": ("a\x00b\x07c\x1bd\x7fe", "abcde"),
    "bidi overrides and isolates": ("a\u202eb\u202dc\u2066d\u2069e", "abcde"),
    "zero-width characters": ("a\u200bb\u200cc\u200dd\u2060e\ufefff", "abcdef"),
    "tag characters (hidden ASCII)": ("ok\U000e0041\U000e0042", "ok"),
    "private use": ("a\ue000b", "ab"),
    "Slack broadcast mentions": (
        "<!channel> <!here> <!everyone>",
        "\u2039!channel\u203a \u2039!here\u203a \u2039!everyone\u203a",
    ),
    "Slack user, channel and group mentions": (
        "<@U024BE7LH> <#C024BE7LH> <!subteam^S1>",
        "\u2039\uff20U024BE7LH\u203a \u2039#C024BE7LH\u203a \u2039!subteam^S1\u203a",
    ),
    "a Slack link": ("<https://evil.example|the console>", "\u2039https[:]//evil[.]example|the console\u203a"),
    "a Teams mention": ("<at>Alex</at>", "\u2039at\u203aAlex\u2039/at\u203a"),
    "at-mentions": ("@here @channel @everyone @alex", "\uff20here \uff20channel \uff20everyone \uff20alex"),
    "a mention behind a zero-width space": ("@\u200bhere", "\uff20here"),
    "an entity that would decode to a control character": (
        "&lt;!channel&gt; &#60;",
        "\uff06lt;!channel\uff06gt; \uff06#60;",
    ),
    "a lone ampersand is kept": ("A & B", "A & B"),
    "a markdown link": ("[the console](https://evil.example/login)", "[the console] (https[:]//evil[.]example/login)"),
    "a markdown image": ("![x](http://e.x/a.png)", "![x] (http[:]//e[.]x/a.png)"),
    "a bare URL": ("see https://evil.example/x?y=1", "see https[:]//evil[.]example/x?y=1"),
    "another scheme": ("s3://bucket.name/key ftp://a.b", "s3[:]//bucket[.]name/key ftp[:]//a[.]b"),
    "a scheme split by a zero-width space": ("https\u200b://evil.example", "https[:]//evil[.]example"),
    "www without a scheme": ("go to WWW.evil.example", "go to WWW[.]evil.example"),
    "an instance type is not a URL": ("ml.p5.48xlarge", "ml.p5.48xlarge"),
    # Review of issue 24: chat clients link a bare domain themselves.
    "a bare domain with a path": ("go to evil-console.com/login now", "go to evil-console[.]com/login now"),
    "a bare domain of a common top-level domain": ("see evil.example.io", "see evil[.]example[.]io"),
    "a bare domain of another with a path": ("x.example.zz/a", "x[.]example[.]zz/a"),
    "names of code and files are kept": (
        "torch.cuda.OutOfMemoryError in train.py, model.pt",
        "torch.cuda.OutOfMemoryError in train.py, model.pt",
    ),
}


@pytest.mark.parametrize(("text", "expected"), list(SHOWN.values()), ids=list(SHOWN))
def test_shown(text: str, expected: str) -> None:
    assert shown(text) == expected


AS_MARKDOWN = {
    "emphasis like the chat's headings": ("*Links*", "\u2217Links\u2217"),
    "a code fence that would swallow what follows": ("```", "\u02cb\u02cb\u02cb"),
    "a heading": ("# Links", "\uff03 Links"),
    "a setext underline": (
        "Links\n-----\nNext\n=====",
        "Links\n\u2010\u2010\u2010\u2010\u2010\nNext\n\uff1d\uff1d\uff1d\uff1d\uff1d",
    ),
    "a rule": ("* * *\n___", "\u2217 \u2217 \u2217\n\uff3f\uff3f\uff3f"),
    "hyphens inside a line are kept": ("llama-pretrain-retry1 - ok", "llama-pretrain-retry1 - ok"),
    "and everything shown does": ("<!here> [x](https://e.x)", "\u2039!here\u203a [x] (https[:]//e[.]x)"),
}


@pytest.mark.parametrize(("text", "expected"), list(AS_MARKDOWN.values()), ids=list(AS_MARKDOWN))
def test_as_markdown(text: str, expected: str) -> None:
    assert as_markdown(text) == expected


def test_on_one_line_every_break_is_a_space() -> None:
    assert shown_on_one_line("a\u2028b\r\nc\nd") == "a b c d"


# --- no user text can change a notification's shape or its links ---

HOSTILE_PIECES = st.sampled_from(
    [
        "\n",
        "\r",
        "\r\n",
        "\u2028",
        "\u2029",
        "\x85",
        "\v",
        "\f",
        "\x1e",
        "\t",
        "  ",
        "Links",
        "Job:",
        "  Job:  ",
        "https://evil.example/login",
        "[x](https://evil.example)",
        "<https://evil.example|x>",
        "www.evil.example",
        "<!channel>",
        "<!here>",
        "@here",
        "@channel",
        "<@U1>",
        "<#C1>",
        "<at>Alex</at>",
        "&lt;",
        "*Links*",
        "*",
        "```",
        "`",
        "# ",
        "-----",
        "=====",
        "\u202e",
        "\u200b",
        "\ufeff",
        "-- trainguard",
        "What happened",
    ]
)
USER_TEXT = st.lists(st.one_of(HOSTILE_PIECES, st.text(max_size=12)), max_size=12).map("".join)


def _job_end(reason: str, tag_problem: str) -> Notification:
    job = TrainingJob(
        name="llama-pretrain",
        arn="arn:aws:sagemaker:us-east-1:123456789012:training-job/llama-pretrain",
        status="Failed",
        failure_reason=reason,
        tags={},
    )
    outcome = Outcome(
        OutcomeKind.RELAUNCHED, job.name, "transient", Decision.RETRY, Category.INTERNAL, "llama-pretrain-retry1"
    )
    return compose_job_end_notification(job, outcome, None, (tag_problem,) if tag_problem else (), "us-east-1", NOW)


def _stall(log_line: str, host: str) -> Notification:
    evidence = StallEvidence(NOW - timedelta(minutes=40), log_line, {f"algo-1/{host}": 0.0}, gpus_per_host=8)
    verdict = StallVerdict(stalled=True, act=True, reason="no log line for 40 minutes")
    checkpoint = CheckpointState("s3://ckpt/llama/")
    outcome = Outcome(OutcomeKind.STALL_STOPPED, "llama-pretrain", "stalled", Decision.STOP, Category.STALL)
    return compose_stall_notification(
        "llama-pretrain", "log-silence", verdict, evidence, checkpoint, "Stopped it.", outcome, "us-east-1", NOW
    )


def _shape(notification: Notification) -> tuple[list[str], list[str], list[str], int]:
    """The body's unindented lines (section titles and the signature), its links, the chat's next steps, and how
    many headings the chat's description has."""
    body = notification.body
    chat = compose_chat_message(notification)
    titles = [line for line in body.split("\n") if line and not line.startswith(" ")]
    links = body.split("\nLinks\n", 1)[1].split("\n\n", 1)[0].split("\n")
    headings = sum(line.startswith("*") for line in chat["content"]["description"].split("\n"))
    return titles, links, chat["content"]["nextSteps"], headings


def _no_markup_left(notification: Notification) -> None:
    chat = compose_chat_message(notification)
    for text in (notification.body, chat["content"]["description"], chat["content"]["title"]):
        assert text.splitlines() == text.split("\n")  # "\n" is the only line break
        assert all(ch == "\n" or unicodedata.category(ch)[0] != "C" for ch in text)
    for text in (chat["content"]["description"], chat["content"]["title"]):
        assert not {"<", ">", "@", "`"} & set(text)
        assert "://" not in text and "](" not in text


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(reason=USER_TEXT, tag_problem=USER_TEXT, log_line=USER_TEXT, host=USER_TEXT)
def test_no_user_text_adds_a_section_a_link_a_next_step_or_markup(
    reason: str, tag_problem: str, log_line: str, host: str
) -> None:
    for made, plain in (
        (_job_end(reason, tag_problem), _job_end("AlgorithmError: boom", "a tag" if tag_problem else "")),
        (_stall(log_line, host), _stall("step 100", "gpu0")),
    ):
        assert _shape(made) == _shape(plain)
        _no_markup_left(made)


def test_a_list_in_a_message_keeps_its_items_in_line_and_wrapped_text_stays_indented() -> None:
    """A paragraph that is a list (every line "- ...": the GPU peak of each host) is one column of items; any other
    paragraph's later lines (a failure reason over several lines) sit deeper than its first."""
    from trainguard.domain.messages import render_body

    body = render_body(
        [("GPU use per host", ["- algo-1: 0%\n- algo-2: 100%"]), ("What happened", ["Failed:\nTraceback"])],
        [],
        datetime(2026, 12, 5, tzinfo=UTC),
    )
    assert "\n  - algo-1: 0%\n  - algo-2: 100%\n" in body
    assert "\n  Failed:\n    Traceback\n" in body
