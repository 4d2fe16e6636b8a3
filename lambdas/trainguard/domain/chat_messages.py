"""The same notification, in the custom-notification format of Amazon Q Developer in chat applications
(formerly AWS Chatbot), which posts it to Slack or Microsoft Teams channels.

Amazon Q Developer renders an SNS message in a channel only when the message follows its event schema:
https://docs.aws.amazon.com/chatbot/latest/adminguide/custom-notifs.html ("Event schema"):

    { "version": String, "source": String, "id": String,
      "content": { "textType": String, "title": String, "description": String,
                   "nextSteps": [String, ...], "keywords": [String, ...] },
      "metadata": { "threadId": String, "summary": String, "eventType": String,
                    "relatedResources": [String, ...], "additionalContext": {String: String} } }

with `version` "1.0", `source` "custom" and `textType` "client-markdown" (the page's parameter details
and its samples). `threadId` groups the notifications of one lineage in one thread of the channel.

The email body (trainguard.domain.messages) is the source: its sections become the description and the
notification's links (structured data, never read back from the text) the next steps, so the two never say
different things. Everything taken from the body or the subject is written as markdown that renders as itself
(user_text.as_markdown): the only markup in the message is the chat's own section headings.
"""

from __future__ import annotations

import re
from typing import Any

from trainguard.domain.messages import Notification
from trainguard.domain.naming import lineage_of
from trainguard.domain.user_text import as_markdown, shown_on_one_line

CHAT_SCHEMA_VERSION = "1.0"
CHAT_SOURCE = "custom"
CHAT_TEXT_TYPE = "client-markdown"
_SUBJECT_TAG = re.compile(r"^\[trainguard[^\]]*\] ")
_LINKS_SECTION = "Links"


def compose_chat_message(notification: Notification, notification_id: str = "") -> dict[str, Any]:
    """The notification as Amazon Q Developer's custom notification (a dict to serialize as JSON)."""
    sections = _sections(notification.body)
    description = "\n".join(
        f"*{as_markdown(title)}*\n" + "\n".join(map(as_markdown, lines))
        for title, lines in sections
        if title != _LINKS_SECTION and lines
    )
    job_name = notification.attributes.get("job_name", "")
    # "[trainguard] ..." or, from a hub, "[trainguard <account> <region>] ..." (messages.naming_the_account),
    # whose account and region become keywords.
    title = as_markdown(shown_on_one_line(_SUBJECT_TAG.sub("", notification.subject, count=1)))
    attributes = {name: shown_on_one_line(value) for name, value in notification.attributes.items() if value}
    keywords = [value for value in (attributes.get(k) for k in ("outcome", "category", "account", "region")) if value]
    message: dict[str, Any] = {
        "version": CHAT_SCHEMA_VERSION,
        "source": CHAT_SOURCE,
        "content": {
            "textType": CHAT_TEXT_TYPE,
            "title": title,
            "description": description,
            "nextSteps": [f"Open the {link.label}: {link.url}" for link in notification.links],
            "keywords": keywords,
        },
        "metadata": {
            "threadId": f"trainguard-{lineage_of(job_name)}" if job_name else "trainguard",
            "summary": title,
            "eventType": attributes.get("event_type", "trainguard"),
            "additionalContext": attributes,
        },
    }
    if notification_id:
        message["id"] = notification_id
    return message


def _sections(body: str) -> list[tuple[str, list[str]]]:
    """The body's sections: a title at the start of a line, its text indented under it; the
    signature line (`-- trainguard, ...`) is left out. Lines end at "\n" only (not str.splitlines, which also
    breaks at U+2028 and the like: messages.render_body keeps those out, and a hand-made body must not make a
    section of one either)."""
    sections: list[tuple[str, list[str]]] = []
    for line in body.split("\n"):
        if not line.strip() or line.startswith("-- "):
            continue
        if line.startswith(" ") and sections:
            sections[-1][1].append(line.strip())
        elif not line.startswith(" "):
            sections.append((line.strip(), []))
    return sections
