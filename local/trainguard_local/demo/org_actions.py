"""What `make demo-org` did, and where, read from each account's own record in the stand-in (the jobs its
SageMaker holds, the requests its Service Quotas holds, the messages the hub's topic delivered), not from
trainguard's answers; and how the demo tells it."""

from __future__ import annotations

import textwrap
from typing import Any

from trainguard.domain.origin import Location
from trainguard_local.stand_in.organization import Organization, Spoke


def subscribe_inbox(org: Organization) -> str:
    """An SQS queue subscribed to the hub's topic (a subscriber's inbox); its URL."""
    sqs, sns = org.hub_client("sqs"), org.hub_client("sns")
    url = sqs.create_queue(QueueName="trainguard-org-inbox")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=org.config.topic_arn, Protocol="sqs", Endpoint=arn)
    return str(url)


def actions_of(org: Organization, report: dict[str, Any]) -> list[dict[str, Any]]:
    """What was done where, from each account's own record: a job trainguard created or stopped in a spoke's
    SageMaker, a request in a spoke's Service Quotas, an event refused, a message the topic delivered."""
    actions = [action for place, spoke in org.spokes.items() for action in _spoke_actions(place, spoke, report)]
    for outcome in report["outcomes"]:
        if outcome["kind"] == "skipped" and "comes from account" in outcome["reason"]:
            where = {"account": outcome["account"], "region": outcome["region"]}
            actions.append({**where, "job": outcome["job_name"], "action": "refused", "reason": outcome["reason"]})
    for message in report["notifications"]:
        attributes = {k: v["Value"] for k, v in message.get("MessageAttributes", {}).items()}
        where = {"account": attributes.get("account", ""), "region": attributes.get("region", "")}
        job, subject = attributes.get("job_name", ""), message.get("Subject", "")
        actions.append({**where, "job": job, "action": "notify", "subject": subject})
    return actions


def _spoke_actions(place: Location, spoke: Spoke, report: dict[str, Any]) -> list[dict[str, Any]]:
    where, actions = {"account": place.account, "region": place.region}, []
    for name in spoke.sagemaker.job_names():
        job = spoke.sagemaker.describe(name)
        listed = spoke.sagemaker.handle("ListTags", {"ResourceArn": job["TrainingJobArn"]})["Tags"]
        if retry_of := {t["Key"]: t["Value"] for t in listed}.get("trainguard:retry-of"):
            actions.append({**where, "job": retry_of, "action": "relaunch", "new_job": name})
        if job["TrainingJobStatus"] == "Stopped" and _stopped_by_trainguard(report, place, name):
            actions.append({**where, "job": name, "action": "stop"})
    for request in spoke.quotas.requests():
        quota, desired, status = request["QuotaName"], request["DesiredValue"], request["Status"]
        waiting = _quota_job(report, place)
        actions.append(
            {
                **where,
                "job": waiting,
                "action": "quota_request",
                "quota": quota,
                "desired_value": desired,
                "status": status,
            }
        )
    return actions


def _stopped_by_trainguard(report: dict[str, Any], place: Location, job: str) -> bool:
    return any(
        o["kind"] == "stall-stopped"
        and o["job_name"] == job
        and (o["account"], o["region"]) == (place.account, place.region)
        for o in report["outcomes"]
    )


def _quota_job(report: dict[str, Any], place: Location) -> str:
    names = [o["job_name"] for o in report["outcomes"] if o["kind"] == "quota-wall" and o["account"] == place.account]
    return names[0] if names else ""


def tell_actions(report: dict[str, Any], say: Any) -> None:
    say("=== What was done, and where (from each account's own record) ===")
    for action in report["actions"]:
        extra = action.get("new_job") or action.get("quota") or action.get("subject") or ""
        say(f"  {action['account']:<12} {action['region']:<10} {action['action']:<13} {action['job']:<22} {extra}")
    say(f"\n  {len(report['notifications'])} notification(s); {report['parked']} event(s) parked by the hub's bus")
    if report["notifications"]:
        first = report["notifications"][0]
        say(
            f"\n--- Subject: {first['Subject']}\n"
            + textwrap.indent(first["Message"].rstrip(), "    | ", lambda line: True)
        )
