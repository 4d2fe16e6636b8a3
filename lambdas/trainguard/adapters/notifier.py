"""SNS: publish one notification, with attributes subscribers can filter on; and, when a chat topic
is configured, the same notification in Amazon Q Developer's custom-notification format
(trainguard.domain.chat_messages) to that second topic, for Slack and Teams channels.

The chat copy is a courtesy: if its publish fails, the failure is logged and counted, and the
action the notification reports is not redone (the email-readable topic already has it).

In an organization's hub, each notification names the job's account and region (`job_account`, and the region
of the job's ports: messages.naming_the_account).

IAM: `needs` on publish, granted on the topics (the stack adds kms:GenerateDataKey/kms:Decrypt on their key).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from trainguard.adapters.permissions import needs
from trainguard.domain.chat_messages import compose_chat_message
from trainguard.domain.messages import Notification, naming_the_account

logger = logging.getLogger(__name__)


class Notifier:
    def __init__(
        self, client: Any, topic_arn: str, chat_topic_arn: str = "", *, job_account: str = "", job_region: str = ""
    ) -> None:
        self._client = client
        self._topic_arn = topic_arn
        self._chat_topic_arn = chat_topic_arn
        self._job_account, self._job_region = job_account, job_region
        self.chat_failures = 0

    @needs("sns:Publish")
    def publish(self, notification: Notification) -> str:
        if self._job_account:
            notification = naming_the_account(notification, self._job_account, self._job_region)
        response = self._client.publish(
            TopicArn=self._topic_arn,
            Subject=notification.subject,
            Message=notification.body,
            MessageAttributes={
                name: {"DataType": "String", "StringValue": value}
                for name, value in notification.attributes.items()
                if value
            },
        )
        message_id = str(response.get("MessageId", ""))
        if self._chat_topic_arn:
            self._publish_to_chat(notification, message_id)
        return message_id

    def _publish_to_chat(self, notification: Notification, message_id: str) -> None:
        message = compose_chat_message(notification, notification_id=message_id)
        try:
            self._client.publish(TopicArn=self._chat_topic_arn, Message=json.dumps(message))
        except Exception:  # the email-readable copy is out; a chat failure must not redo the action
            self.chat_failures += 1
            logger.exception("could not publish the chat copy of %r", notification.subject)
