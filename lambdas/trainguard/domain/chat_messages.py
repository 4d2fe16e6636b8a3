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

The email body (trainguard.domain.messages) is the source: its sections become the description, its
links the next steps, so the two never say different things.
"""

from __future__ import annotations

import re
from typing import Any

from trainguard.domain.messages import Notification
from trainguard.domain.naming import lineage_of

CHAT_SCHEMA_VERSION = "1.0"
CHAT_SOURCE = "custom"
CHAT_TEXT_TYPE = "client-markdown"
_SUBJECT_TAG = re.compile(r"^\[trainguard[^\]]*\] ")
_LINKS_SECTION = "Links"


def compose_chat_message(notification: Notification, notification_id: str = "") -> dict[str, Any]:
    """The notification as Amazon Q Developer's custom notification (a dict to serialize as JSON)."""
    sections = _sections(notification.body)
    description = "\n".join(
        f"*{title}*\n" + "\n".join(lines) for title, lines in sections if title != _LINKS_SECTION and lines
    )
    links = next((lines for title, lines in sections if title == _LINKS_SECTION), [])
    job_name = notification.attributes.get("job_name", "")
    # "[trainguard] ..." or, from a hub, "[trainguard <account> <region>] ..." (messages.naming_the_account),
    # whose account and region become keywords.
    title = _SUBJECT_TAG.sub("", notification.subject, count=1)
    attributes = notification.attributes
    keywords = [value for value in (attributes.get(k) for k in ("outcome", "category", "account", "region")) if value]
    message: dict[str, Any] = {
        "version": CHAT_SCHEMA_VERSION,
        "source": CHAT_SOURCE,
        "content": {
            "textType": CHAT_TEXT_TYPE,
            "title": title,
            "description": description,
            "nextSteps": [_as_step(link) for link in links],
            "keywords": keywords,
        },
        "metadata": {
            "threadId": f"trainguard-{lineage_of(job_name)}" if job_name else "trainguard",
            "summary": title,
            "eventType": notification.attributes.get("event_type", "trainguard"),
            "additionalContext": {name: value for name, value in notification.attributes.items() if value},
        },
    }
    if notification_id:
        message["id"] = notification_id
    return message


def _sections(body: str) -> list[tuple[str, list[str]]]:
    """The body's sections: a title at the start of a line, its text indented under it; the
    signature line (`-- trainguard, ...`) is left out."""
    sections: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if not line.strip() or line.startswith("-- "):
            continue
        if line.startswith(" ") and sections:
            sections[-1][1].append(line.strip())
        elif not line.startswith(" "):
            sections.append((line.strip(), []))
    return sections


def _as_step(link_line: str) -> str:
    """`Job:  https://...` -> `Open the job: https://...`."""
    label, _, url = link_line.partition(":")
    url = url.strip()
    if not url.startswith("http"):
        return link_line
    return f"Open the {label.strip().lower()}: {url}"
