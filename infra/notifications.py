"""Notifications: the SNS topic trainguard and its alarms report to, encrypted with its own KMS key.

CloudWatch alarms can publish to a KMS-encrypted topic only when the key policy lets the
`cloudwatch.amazonaws.com` service principal use the key (kms:Decrypt and kms:GenerateDataKey*);
the AWS-managed `alias/aws/sns` key cannot be edited, so it would drop every alarm silently:
https://repost.aws/knowledge-center/cloudwatch-configure-alarm-sns and
https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html#compatibility-with-aws-services

`enforce_ssl` gives the topic a resource policy, which replaces SNS's default policy (the one that
lets anything in the account publish), so CloudWatch also needs an explicit sns:Publish there:
https://repost.aws/knowledge-center/cloudwatch-receive-sns-for-alarm-trigger
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Aws, Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

CLOUDWATCH_PRINCIPAL = "cloudwatch.amazonaws.com"
# What a publisher to an SSE topic needs on the key; listed without wildcards for IAM identity policies.
PUBLISH = "sns:Publish"
PUBLISHER_KEY_ACTIONS = ("kms:GenerateDataKey", "kms:Decrypt")


def _from_this_accounts_alarms() -> dict[str, Any]:
    """The conditions on CloudWatch's use of the topic and its key: an alarm of this account and region."""
    return {
        "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
        "ArnLike": {"aws:SourceArn": f"arn:{Aws.PARTITION}:cloudwatch:{Aws.REGION}:{Aws.ACCOUNT_ID}:alarm:*"},
    }


class Notifications(Construct):
    """The topic, its key, and the email subscriptions from settings; with `chat_notifications`, a
    second topic for Amazon Q Developer in chat applications (trainguard.domain.chat_messages)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        notification_emails: Sequence[str],
        chat_notifications: bool = False,
    ) -> None:
        super().__init__(scope, construct_id)
        self.key = self._topic_key()
        self.topic = self._alarm_topic()
        for email in notification_emails:
            self.topic.add_subscription(subscriptions.EmailSubscription(email))
        # Only trainguard's functions publish here; the channel configuration subscribes to it.
        self.chat_topic: sns.Topic | None = None
        if chat_notifications:
            self.chat_topic = sns.Topic(
                self, "ChatTopic", display_name="trainguard chat", master_key=self.key, enforce_ssl=True
            )

    def _topic_key(self) -> kms.Key:
        """The topics' key, which CloudWatch alarms may use to publish."""
        key = kms.Key(
            self,
            "TopicKey",
            description="trainguard: encrypts the notification topic",
            enable_key_rotation=True,
            pending_window=Duration.days(30),
        )
        # The AWS-documented statement (Amazon SNS Developer Guide, "compatibility-with-aws-services"), with the
        # confused-deputy conditions the topic policy below carries: CloudWatch uses the key only for an alarm of
        # this account and region. CloudWatch sends both keys with its KMS calls for an alarm action, as public
        # stacks that alarm to KMS-encrypted topics with this condition rely on (ArnLike aws:SourceArn on
        # arn:aws:cloudwatch:<region>:<account>:alarm:...). Nothing here can try it against AWS: if an alarm's
        # notification is ever refused, CloudWatch records it in the alarm's history ("Failed to execute action"),
        # and the functions' own notifications, which do not go through this statement, are unaffected.
        key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowCloudWatchAlarmsToUseTheKey",
                principals=[iam.ServicePrincipal(CLOUDWATCH_PRINCIPAL)],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
                conditions=_from_this_accounts_alarms(),
            )
        )
        return key

    def _alarm_topic(self) -> sns.Topic:
        """The topic trainguard and its alarms report to; CloudWatch alarms of this account may publish."""
        topic = sns.Topic(self, "Topic", display_name="trainguard", master_key=self.key, enforce_ssl=True)
        topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowCloudWatchAlarmsOfThisAccountToPublish",
                principals=[iam.ServicePrincipal(CLOUDWATCH_PRINCIPAL)],
                actions=["sns:Publish"],
                resources=[topic.topic_arn],
                conditions=_from_this_accounts_alarms(),
            )
        )
        return topic

    @property
    def topic_arns(self) -> list[str]:
        return [topic.topic_arn for topic in (self.topic, self.chat_topic) if topic is not None]

    def grant_publishing(self, grantee: iam.IGrantable, needed: frozenset[str]) -> set[str]:
        """sns:Publish on the topic(s), if `needed` holds it, with the two key actions an SSE publisher needs."""
        if PUBLISH not in needed:
            return set()
        self.grant_publish(grantee)
        return {PUBLISH}

    def grant_publish(self, grantee: iam.IGrantable) -> None:
        """sns:Publish on the topic(s) and the two key actions an SSE publisher needs, nothing more."""
        iam.Grant.add_to_principal(grantee=grantee, actions=[PUBLISH], resource_arns=self.topic_arns)
        iam.Grant.add_to_principal(
            grantee=grantee, actions=list(PUBLISHER_KEY_ACTIONS), resource_arns=[self.key.key_arn]
        )
