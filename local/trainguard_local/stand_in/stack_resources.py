"""The stack's resources as every stand-in creates them: one description, read by `local_aws` (the moto
server behind the demo, the chaos suite and the sandbox) and by the fleet simulator's in-process world.

What comes from trainguard and infra/ rather than from here: the ledger's keys and TTL
(`trainguard.adapters.ledger.create_table_request`, which infra/ledger.py builds the table from), the rules'
event patterns (infra/event_patterns.py, the stack's own), the training log group's name
(`trainguard.adapters.job_activity.LOG_GROUP`, which infra/stall_detection.py subscribes to) and the schedule
group's name (GuardConfig's default, the name infra/job_events.py gives the group). What is the stand-in's
own choice, since the stack lets CloudFormation name it: the table's, the topic's, the rules' and the
functions' names, and the scheduler role.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import Any

from infra.event_patterns import failed_training_job_launch_pattern, stall_alarm_pattern, training_job_state_pattern
from trainguard.adapters.job_activity import LOG_GROUP as TRAINING_LOG_GROUP
from trainguard.adapters.ledger import create_table_request
from trainguard.config import GuardConfig
from trainguard_local.stand_in.sagemaker_api_model import SAGEMAKER_API

REGION = "us-east-1"
ACCOUNT = "123456789012"
TRAINING_ROLE = f"arn:aws:iam::{ACCOUNT}:role/TrainingRole"  # the users' execution role, which trainguard may pass
LEDGER_TABLE = "trainguard-ledger"
TOPIC = "trainguard"
SCHEDULE_GROUP = str(next(f.default for f in dataclasses.fields(GuardConfig) if f.name == "schedule_group_name"))
RETRY_LAUNCHER_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:trainguard-retry-launcher"
SCHEDULER_ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/trainguard-scheduler"
# The stack's EventBridge rules (infra/job_events.py, stall_detection.py, quota_walls.py): name -> pattern.
JOB_EVENTS_RULE = "trainguard-job-ended"
FAILED_LAUNCHES_RULE = "trainguard-failed-launches"
STALL_ALARMS_RULE = "trainguard-stall-alarms"
RULES: Mapping[str, Callable[[], dict[str, Any]]] = {
    JOB_EVENTS_RULE: training_job_state_pattern,
    FAILED_LAUNCHES_RULE: failed_training_job_launch_pattern,
    STALL_ALARMS_RULE: stall_alarm_pattern,
}


def rule_pattern(rule: str) -> str:
    """The rule's event pattern, as EventBridge takes it (JSON)."""
    return json.dumps(RULES[rule]())


def create_stack_resources(client: Callable[[str], Any], *, checkpoint_bucket: str) -> str:
    """Create the ledger table, the topic, the schedule group and the training log group, and the users'
    checkpoint bucket; the topic's ARN. The rules are the caller's: local_aws targets SQS queues with
    them, the fleet world matches the same patterns in process."""
    client("dynamodb").create_table(**create_table_request(LEDGER_TABLE))
    topic_arn = str(client("sns").create_topic(Name=TOPIC)["TopicArn"])
    client("scheduler").create_schedule_group(Name=SCHEDULE_GROUP)
    client("s3").create_bucket(Bucket=checkpoint_bucket)
    client("logs").create_log_group(logGroupName=TRAINING_LOG_GROUP)
    return topic_arn


def every_training_instance_type() -> tuple[str, ...]:
    """The stand-in's deployer lets trainguard launch any training instance type (botocore's TrainingInstanceType):
    the widest bound a deployer can set. The product's default is none, which turns every fallback and on-demand
    move off (docs/deploying.md); the bounds on accelerators and instances hold whatever the list."""
    return tuple(SAGEMAKER_API.service_model.shape_for("TrainingInstanceType").enum)


def stack_config(topic_arn: str, **overrides: Any) -> GuardConfig:
    """The functions' configuration for these resources (what the stack puts in their environment)."""
    settings: dict[str, Any] = {
        "ledger_table_name": LEDGER_TABLE,
        "topic_arn": topic_arn,
        "passable_role_arns": (TRAINING_ROLE,),
        "launchable_instance_types": every_training_instance_type(),
        "retry_launcher_arn": RETRY_LAUNCHER_ARN,
        "scheduler_role_arn": SCHEDULER_ROLE_ARN,
        "schedule_group_name": SCHEDULE_GROUP,
    }
    return GuardConfig(**(settings | overrides))
