"""SNS: publish one notification, with attributes subscribers can filter on.

IAM: sns:Publish on the topic (and kms:GenerateDataKey*/kms:Decrypt on its key).
"""

from __future__ import annotations

from typing import Any

from trainguard.domain.messages import Notification

IAM_ACTIONS = ("sns:Publish",)


class Notifier:
    def __init__(self, client: Any, topic_arn: str) -> None:
        self._client = client
        self._topic_arn = topic_arn

    def publish(self, notification: Notification) -> str:
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
        return str(response.get("MessageId", ""))
