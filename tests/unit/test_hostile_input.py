"""Bad input, generated (issue 6, item 2): every case gets a clear skip or a correct action, never a
crash loop, and never a destructive action on doubt.

Hypothesis draws malformed events (real samples truncated and mistyped at any depth, and plain JSON
garbage), hostile tags, names at every length, long and cut FailureReasons, DescribeTrainingJob
responses with members missing, rewrapped quota texts and broken log deliveries. Every property runs
derandomized (the same examples on every run, so CI is stable); `--hypothesis-show-statistics` shows
how many examples each one ran.

The seven bugs this suite found are fixed; their minimal examples stay below as regression tests. Pin a
new bug as a strict xfail of its minimal example until it is fixed.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import gzip
import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore.validate import ParamValidator
from hypothesis import HealthCheck, given, settings
from hypothesis import event as count_as
from hypothesis import strategies as st

from tests import strategies as hs
from tests.cloudtrail_events import envelope_from_record
from tests.conftest import load_fixture
from tests.fakes import ROLE, FakePorts, described_job, fake_ports, with_config
from trainguard.adapters.scheduler import schedule_name
from trainguard.domain.classification import (
    DECISION_BY_CATEGORY,
    classify_failure_reason,
    classify_job_end,
    classify_text,
)
from trainguard.domain.model import Category, Decision, TextSource
from trainguard.domain.naming import MAX_JOB_NAME_LENGTH, is_valid_job_name, retry_job_name
from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard.domain.policy import KNOWN_ACTIONS, MAX_RETRIES_CEILING, PolicyDefaults, read_job_policy
from trainguard.domain.quotas import read_quota_error
from trainguard.domain.stall_alarms import MAX_GPU_PARTS, gpu_part_name, owned_alarm_job, parse_gpu_part_name
from trainguard.domain.stalls import StallSignal, StallThresholds, alarm_name, parse_alarm_name, read_stall_thresholds
from trainguard.events.cloudtrail import parse_failed_launch
from trainguard.events.log_subscription import LAST_LINE_LIMIT, LogActivity, parse_log_delivery
from trainguard.events.training_job import MalformedInput, job_from_description
from trainguard.handlers import (
    failed_launches,
    job_events,
    log_activity,
    quota_watch,
    retry_launcher,
    stall_alarms,
    stall_prober,
)

HOSTILE = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
WORKFLOW = settings(HOSTILE, max_examples=100)  # each example runs a whole workflow

KEYS = hs.KEYS
OPTED_IN = {KEYS.enabled: "true"}
MODEL = botocore.session.get_session().get_service_model("sagemaker")
CREATE_INPUT = MODEL.operation_model("CreateTrainingJob").input_shape
DESCRIBE_OUTPUT = MODEL.operation_model("DescribeTrainingJob").output_shape
NAME_SHAPE = MODEL.shape_for("TrainingJobName").metadata
SCHEDULE_NAME_SHAPE = (
    botocore.session.get_session().get_service_model("scheduler").shape_for("Name").metadata  # 1-64, [0-9a-zA-Z-_.]+
)


def _is_valid(request: dict[str, Any]) -> bool:
    return not ParamValidator().validate(request, CREATE_INPUT).has_errors()


def assert_valid_create_request(request: dict[str, Any]) -> None:
    report = ParamValidator().validate(request, CREATE_INPUT)
    assert not report.has_errors(), report.generate_report()
    assert is_valid_job_name(request["TrainingJobName"])


def assert_nothing_destructive(ports: FakePorts, *, quota_request_allowed: bool = False) -> None:
    assert ports.jobs.created == [] and ports.jobs.stops == []  # type: ignore[attr-defined]
    assert ports.scheduler.schedules == {}  # type: ignore[attr-defined]
    if not quota_request_allowed:
        assert ports.quotas.requests == [] and ports.quota_ledger.waiting() == []  # type: ignore[attr-defined]


# --- the real samples that the malformed events start from ---

STATE_CHANGE = load_fixture("events/sagemaker_training_job_state_change.awsdocs.json")
INTERNAL = "InternalServerError: We encountered an internal error. Please try again."
CAPACITY = (
    "CapacityError: Unable to provision requested ML compute capacity. Please retry using a different ML instance type."
)
USER_BUG = "AlgorithmError: ExecuteUserScriptError:\nTraceback (most recent call last):\nKeyError: 'label'"
P4D = "ml.p4d.24xlarge for training job usage"
WALL = (
    f"The account-level service limit '{P4D}' is 0 Instances, with current utilization of 0 Instances and a "
    "request delta of 4 Instances. Please use AWS Service Quotas to request an increase for this quota."
)


def failed_event(name: str = "llama-pretrain", tags: Any = None) -> dict[str, Any]:
    event = copy.deepcopy(STATE_CHANGE)
    event["detail"].update(
        TrainingJobName=name, TrainingJobStatus="Failed", SecondaryStatus="Failed", FailureReason=INTERNAL
    )
    event["detail"]["Tags"] = OPTED_IN if tags is None else tags
    return event


def alarm_event(job: str = "llama-pretrain", signal: StallSignal = StallSignal.LOG_SILENCE) -> dict[str, Any]:
    event = load_fixture("events/cloudwatch_alarm_state_change.single_metric.awsdocs.json")
    event["detail"]["alarmName"] = alarm_name(signal, job)
    return event


def failed_launch_event(tags: list[dict[str, str]], message: str = WALL) -> dict[str, Any]:
    record = load_fixture("events/cloudtrail_record.create_training_job.medzen_sanitized_real.json")
    record["requestParameters"]["roleArn"] = ROLE
    record["requestParameters"]["tags"] = tags
    return envelope_from_record(record, "ResourceLimitExceeded", message)


LOG_PAYLOAD = {
    "messageType": "DATA_MESSAGE",
    "owner": "123456789012",
    "logGroup": "/aws/sagemaker/TrainingJobs",
    "logStream": "llama-pretrain/algo-1-1764417600",
    "subscriptionFilters": ["trainguard-activity"],
    "logEvents": [
        {"id": "1", "timestamp": 1764417600000, "message": "step 10 loss 1.93\n"},
        {"id": "2", "timestamp": 1764417660000, "message": "step 11 loss 1.91\n"},
    ],
}
SCHEDULED = {
    "version": "0",
    "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
    "detail-type": "Scheduled Event",
    "source": "aws.events",
    "account": "123456789012",
    "time": "2026-11-29T12:00:00Z",
    "region": "us-east-1",
    "resources": ["arn:aws:events:us-east-1:123456789012:rule/trainguard-prober"],
    "detail": {},
}


def delivery(data: str) -> dict[str, Any]:
    return {"awslogs": {"data": data}}


def encoded(payload: Any) -> str:
    return base64.b64encode(gzip.compress(json.dumps(payload).encode())).decode()


ODD_TIMES = (1e300, -1.0e17, math.nan, math.inf, -math.inf, 10**20, 2**63, 10**400)  # no datetime has these
LOG_PAYLOADS = st.fixed_dictionaries(
    {
        "messageType": st.sampled_from(["DATA_MESSAGE"] * 4 + ["CONTROL_MESSAGE", "data_message"]),
        "logStream": st.one_of(
            st.builds("{}/algo-{}-{}".format, hs.job_names(), st.integers(1, 999), st.integers(0, 2**40)),
            st.builds("{}/algo-{}-{}".format, hs.HOSTILE_TEXT, hs.HOSTILE_TEXT, hs.HOSTILE_TEXT),
        ),
        "logEvents": st.lists(
            st.fixed_dictionaries(
                {"timestamp": st.one_of(st.integers(0, 2**45), st.floats(), st.booleans(), st.sampled_from(ODD_TIMES))},
                optional={"id": hs.JSON_SCALARS, "message": st.one_of(hs.HOSTILE_TEXT, hs.HUGE_TEXT, hs.GARBAGE)},
            ),
            min_size=1,
            max_size=4,
        ),
    }
)
LOG_DELIVERIES = st.one_of(
    LOG_PAYLOADS.map(lambda payload: delivery(encoded(payload))),
    hs.mutated(LOG_PAYLOAD).map(lambda payload: delivery(encoded(payload))),
    hs.mutated(delivery(encoded(LOG_PAYLOAD))),
    hs.json_values().map(lambda payload: delivery(encoded(payload))),
    st.binary(max_size=300).map(lambda raw: delivery(base64.b64encode(raw).decode())),
    st.binary(max_size=300).map(lambda raw: delivery(base64.b64encode(gzip.compress(raw)).decode())),
    st.text(max_size=100).map(delivery),
    hs.GARBAGE,
)


def _events(*samples: Any) -> st.SearchStrategy[Any]:
    return st.one_of(*(hs.mutated(sample) for sample in samples), hs.GARBAGE)


HANDLERS: dict[str, tuple[Any, st.SearchStrategy[Any]]] = {
    "job_events": (
        job_events,
        _events(
            failed_event(), STATE_CHANGE, load_fixture("events/sagemaker_training_job_state_change.mlspace_test.json")
        ),
    ),
    "retry_launcher": (retry_launcher, _events({"failed_job_name": "llama-pretrain", "reason": CAPACITY})),
    "stall_alarms": (
        stall_alarms,
        _events(
            alarm_event(),
            alarm_event(signal=StallSignal.IDLE_GPU),
            load_fixture("events/cloudwatch_alarm_state_change.composite.awsdocs.json"),
        ),
    ),
    "log_activity": (log_activity, LOG_DELIVERIES),
    "failed_launches": (
        failed_launches,
        _events(
            failed_launch_event([{"key": KEYS.enabled, "value": "true"}]),
            failed_launch_event([{"key": "project", "value": "x"}]),
            load_fixture("events/eventbridge_aws_api_call_via_cloudtrail.create_labeling_job.mlspace_test.json"),
        ),
    ),
    "quota_watch": (quota_watch, _events(SCHEDULED)),
    "stall_prober": (stall_prober, _events(SCHEDULED)),
}


# --- bugs this suite found (fixed): their minimal examples, kept as regression tests ---


def _end_with_attempt_tag(value: str) -> Outcome:
    ports = fake_ports()
    ports.jobs.add(described_job(), {**OPTED_IN, KEYS.attempt: value})
    return job_events.handle(failed_event(), ports)


def _log_delivery_at(timestamp: float) -> dict[str, Any]:
    return delivery(encoded({**LOG_PAYLOAD, "logEvents": [{"id": "1", "timestamp": timestamp, "message": "x"}]}))


def _failed_launch_without_role() -> tuple[Outcome, FakePorts]:
    event = failed_launch_event([{"key": KEYS.enabled, "value": "true"}])
    del event["detail"]["requestParameters"]["roleArn"]
    ports = fake_ports()
    return failed_launches.handle(event, ports), ports


def _kept_launches_of_mistyped_record() -> list[dict[str, Any]]:
    event = failed_launch_event([{"key": KEYS.enabled, "value": "true"}])
    event["detail"]["requestParameters"]["resourceConfig"]["instanceCount"] = "4"  # a string, not an integer
    ports = fake_ports()
    failed_launches.handle(event, ports)
    return [waiting.request for waiting in ports.quota_ledger.waiting()]


def test_a_superscript_digit_in_the_attempt_tag_is_read_as_no_attempt_not_a_crash() -> None:
    assert _end_with_attempt_tag("²").kind is OutcomeKind.RELAUNCHED


@pytest.mark.parametrize("timestamp", ODD_TIMES)
def test_a_log_event_with_an_impossible_timestamp_is_read_or_refused(timestamp: float) -> None:
    with contextlib.suppress(MalformedInput):
        parse_log_delivery(_log_delivery_at(timestamp))


def test_a_deeply_nested_log_payload_is_read_or_refused() -> None:
    data = base64.b64encode(gzip.compress(b"[" * 100_000 + b"]" * 100_000)).decode()
    with contextlib.suppress(MalformedInput):
        parse_log_delivery(delivery(data))


def test_an_opted_in_failed_launch_whose_record_lacks_a_required_member_is_not_a_crash() -> None:
    outcome, ports = _failed_launch_without_role()
    assert outcome.kind in (OutcomeKind.SKIPPED, OutcomeKind.NOTIFIED, OutcomeKind.QUOTA_WALL)
    assert ports.quota_ledger.waiting() == []


def test_a_launch_kept_for_a_quota_is_a_valid_request_even_from_a_mistyped_record() -> None:
    for request in _kept_launches_of_mistyped_record():
        assert _is_valid(request)


# --- 1. malformed events, to every handler ---


def _opted_in_launch(event: Any, ports: FakePorts) -> tuple[bool, bool]:
    """(opted in, quota request allowed) for a failed launch, which opts in with its own tags (there is no
    job to describe): a request is fine only for a readable record of an opted-in launch whose message
    names a quota Service Quotas knows."""
    try:
        launch = parse_failed_launch(event)
    except MalformedInput:
        return False, False
    policy = read_job_policy(launch.tags, ports.config.policy_defaults, ports.keys)
    demand = read_quota_error(launch.error_message)
    known = demand is not None and ports.quotas.find(demand.quota_name) is not None
    return policy.enabled, policy.enabled and policy.allows("quota") and known


@pytest.mark.parametrize("handler", HANDLERS)
@HOSTILE
@given(data=st.data())
def test_a_malformed_event_is_raised_or_skipped_and_nothing_is_done(handler: str, data: st.DataObject) -> None:
    module, events = HANDLERS[handler]
    event = data.draw(events, label="event")
    ports = fake_ports()
    try:
        result = module.handle(event, ports)
    except MalformedInput:  # counted and raised (handlers/observability.parsed): Lambda's retries, then the DLQ
        result = None
    opted_in, allowed = _opted_in_launch(event, ports) if handler == "failed_launches" else (False, False)
    count_as(f"result: {result.kind.value if isinstance(result, Outcome) else type(result).__name__}")
    assert_nothing_destructive(ports, quota_request_allowed=allowed)
    assert len(ports.quotas.requests) <= 1  # type: ignore[attr-defined]
    for waiting in ports.quota_ledger.waiting():
        # The periodic quota check sends it as it is: boto3 must accept it (SageMaker refusing a bad name
        # later is a LaunchRefused, told to the owner; boto3 refusing it is an exception nobody catches).
        assert _is_valid(waiting.request), ParamValidator().validate(waiting.request, CREATE_INPUT).generate_report()
    if result is None:
        assert handler not in ("quota_watch", "stall_prober")  # scheduled: nothing in their event to parse
    elif isinstance(result, Outcome):
        opted_in_kinds = (OutcomeKind.QUOTA_WALL, OutcomeKind.NOTIFIED) if opted_in else ()
        assert result.kind is OutcomeKind.SKIPPED or result.kind in opted_in_kinds, result
    elif handler == "log_activity":
        assert result["recorded"] is False  # no job is watched
    elif handler in ("quota_watch", "stall_prober"):
        assert result in ([], {"watched": 0, "published": 0, "swept": [], "started": []})


OPTED_IN_LAUNCH = failed_launch_event([{"key": KEYS.enabled, "value": "true"}])
LAUNCH_MEMBERS = sorted(set(OPTED_IN_LAUNCH["detail"]["requestParameters"]) - {"tags", "trainingJobName"})


@HOSTILE
@given(dropped=st.sets(st.sampled_from(LAUNCH_MEMBERS), max_size=3), case_twin=st.sampled_from([None, *LAUNCH_MEMBERS]))
def test_an_opted_in_launch_recorded_with_members_missing_is_told_not_a_crash(
    dropped: set[str], case_twin: str | None
) -> None:
    event = copy.deepcopy(OPTED_IN_LAUNCH)
    parameters = event["detail"]["requestParameters"]
    if case_twin is not None:  # the same member twice, in different case
        parameters[case_twin[0].upper() + case_twin[1:]] = copy.deepcopy(parameters[case_twin])
    for member in dropped:
        del parameters[member]
    ports = fake_ports()
    outcome = failed_launches.handle(event, ports)
    count_as(f"outcome: {outcome.kind.value}")
    assert outcome.kind in (OutcomeKind.QUOTA_WALL, OutcomeKind.NOTIFIED)
    assert len(ports.quotas.requests) <= 1 and ports.jobs.created == []  # type: ignore[attr-defined]
    for waiting in ports.quota_ledger.waiting():
        assert _is_valid(waiting.request) and waiting.request["RoleArn"] == ROLE


def _doubtful_job(data: st.DataObject) -> tuple[dict[str, Any], dict[str, str]]:
    """A described job that trainguard must leave alone: not opted in, or opted in but failed on a bug."""
    if data.draw(st.booleans()):
        return described_job(reason=USER_BUG), {**data.draw(hs.hostile_tags()), **OPTED_IN, KEYS.dry_run: "false"}
    tags = data.draw(hs.hostile_tags())
    if tags.get(KEYS.enabled, "").strip().lower() == "true":
        del tags[KEYS.enabled]
    status = data.draw(
        st.sampled_from([("Failed", "Failed"), ("InProgress", "Training"), ("Stopped", "MaxWaitTimeExceeded")])
    )
    return described_job(status=status[0], secondary=status[1], reason=INTERNAL), tags


@pytest.mark.parametrize("handler", ["job_events", "retry_launcher", "stall_alarms"])
@WORKFLOW
@given(data=st.data())
def test_an_event_is_only_a_hint_a_job_in_doubt_is_left_alone(handler: str, data: st.DataObject) -> None:
    module, events = HANDLERS[handler]
    description, tags = _doubtful_job(data)
    ports = fake_ports()
    ports.jobs.add(description, tags)  # type: ignore[attr-defined]
    try:
        result = module.handle(data.draw(events, label="event"), ports)
    except MalformedInput:  # counted and raised (handlers/observability.parsed): Lambda's retries, then the DLQ
        count_as("outcome: raised as malformed")
        assert_nothing_destructive(ports)
        return
    count_as(f"outcome: {result.kind.value}")
    assert_nothing_destructive(ports)
    assert result.kind in (OutcomeKind.SKIPPED, OutcomeKind.NOTIFIED, OutcomeKind.WATCHING), result


# --- 2. hostile tags ---


def _flag_readable(value: str) -> bool:
    return value.strip().lower() in ("true", "false")


def _actions_readable(value: str) -> bool:
    words = [w for w in re.split(r"[\s+]+", value.strip().lower()) if w]
    return bool(words) and set(words) <= KNOWN_ACTIONS


def _int_reading(value: str, low: int, high: int) -> int | None:
    """The reading docs/tags.md gives: plain ASCII digits within the range; None when unreadable."""
    text = value.strip()
    return int(text) if re.fullmatch(r"[0-9]{1,6}", text) and low <= int(text) <= high else None


OVERRIDES: dict[str, Callable[[str], bool]] = {
    KEYS.max_retries: lambda v: _int_reading(v, 0, MAX_RETRIES_CEILING) is not None,
    KEYS.actions: _actions_readable,
    KEYS.dry_run: _flag_readable,
    KEYS.restart_without_checkpoint: _flag_readable,
    KEYS.continue_after_max_runtime: _flag_readable,
}
STALL_RANGES = {"stall-minutes": (5, 1440), "gpu-idle-minutes": (5, 1440), "gpu-idle-percent": (0, 50),
                "startup-grace-minutes": (0, 720)}  # fmt: skip


@HOSTILE
@given(tags=hs.hostile_tags())
def test_any_tags_read_into_a_bounded_policy_that_reports_every_unreadable_override(tags: dict[str, str]) -> None:
    policy = read_job_policy(tags, PolicyDefaults(), KEYS)
    raw = tags.get(KEYS.enabled)
    assert policy.enabled is (raw is not None and raw.strip().lower() == "true")
    assert policy.enabled or policy.why_not_enabled
    assert 0 <= policy.max_retries <= MAX_RETRIES_CEILING
    assert "notify" in policy.actions and policy.actions <= KNOWN_ACTIONS
    reported = {problem.key for problem in policy.problems}
    for key, readable in OVERRIDES.items():
        assert (key in reported) is (key in tags and not readable(tags[key])), (key, tags.get(key))
    if not _actions_readable(tags.get(KEYS.actions, "retry")) or not _flag_readable(tags.get(KEYS.dry_run, "false")):
        assert policy.dry_run  # an unreadable safety tag falls to the safe side
    if KEYS.max_retries in tags and (number := _int_reading(tags[KEYS.max_retries], 0, MAX_RETRIES_CEILING)):
        assert policy.max_retries == number
    assert all(len(problem.describe()) < 400 for problem in policy.problems)
    thresholds = read_stall_thresholds(tags, StallThresholds(), KEYS)
    stall_reported = {problem.key for problem in thresholds.problems}
    for name, (low, high) in STALL_RANGES.items():
        key = KEYS.key(name)
        assert low <= getattr(thresholds, name.replace("-", "_")) <= high
        assert (key in stall_reported) is (key in tags and _int_reading(tags[key], low, high) is None)


@WORKFLOW
@given(
    tags=hs.hostile_tags(),
    opt_in=st.sampled_from([None, "true", " TRUE ", "True\n"]),  # None: whatever the hostile tags say
    safe_side=st.booleans(),  # keep the hostile actions and dry-run tags, which mostly make a dry run
    reason=st.sampled_from([INTERNAL, CAPACITY, USER_BUG]),
    name=hs.job_names(),
)
def test_a_failed_job_with_hostile_tags_is_relaunched_only_within_its_policy(
    tags: dict[str, str], opt_in: str | None, safe_side: bool, reason: str, name: str
) -> None:
    if opt_in is not None:
        tags[KEYS.enabled] = opt_in
    if not safe_side:
        tags.pop(KEYS.actions, None), tags.pop(KEYS.dry_run, None)
    ports = fake_ports()
    ports.jobs.add(described_job(name, reason=reason, checkpoint=f"s3://ckpt/{name}/"), tags)  # type: ignore[attr-defined]
    outcome = job_events.handle(failed_event(name), ports)
    count_as(f"outcome: {outcome.kind.value}")
    policy = read_job_policy(tags, ports.config.policy_defaults, ports.keys)
    created, schedules = ports.jobs.created, ports.scheduler.schedules  # type: ignore[attr-defined]
    if not policy.enabled:
        assert outcome.kind is OutcomeKind.SKIPPED and ports.notifier.sent == []  # type: ignore[attr-defined]
    if created or schedules:
        assert policy.enabled and policy.allows("retry") and reason != USER_BUG
        assert len(created) + len(schedules) == 1
    for request in created:
        assert_valid_create_request(request)
        new_tags = {tag["Key"]: tag["Value"] for tag in request["Tags"]}
        assert 1 <= int(new_tags[KEYS.attempt]) <= policy.max_retries
        assert new_tags[KEYS.enabled] == "true" and new_tags[KEYS.retry_of] == name
        assert not any(key.lower().startswith("aws:") for key in new_tags)
        assert request["TrainingJobName"] == outcome.new_job_name
    assert len(ports.notifier.sent) == (1 if outcome.notifies else 0)  # type: ignore[attr-defined]


@HOSTILE
@given(attempt=st.one_of(st.sampled_from(hs.NUMBER_TRAPS), st.text(max_size=4)), root=hs.LINEAGE_ROOTS)
def test_hostile_lineage_tags_never_crash_a_relaunch_nor_pass_its_limit(attempt: str, root: str) -> None:
    tags = {**OPTED_IN, KEYS.attempt: attempt, KEYS.root_job: root}
    ports = fake_ports()
    ports.jobs.add(described_job(), tags)  # type: ignore[attr-defined]
    outcome = job_events.handle(failed_event(), ports)
    count_as(f"outcome: {outcome.kind.value}")
    assert outcome.kind in (OutcomeKind.RELAUNCHED, OutcomeKind.NOT_RELAUNCHED)
    for request in ports.jobs.created:  # type: ignore[attr-defined]
        assert_valid_create_request(request)
        new_tags = {tag["Key"]: tag["Value"] for tag in request["Tags"]}
        assert 1 <= int(new_tags[KEYS.attempt]) <= ports.config.default_max_retries
        assert new_tags[KEYS.root_job] == (root.strip() or "llama-pretrain")


# --- 3. names at every length limit ---

SAGEMAKER_NAME = re.compile(NAME_SHAPE["pattern"])
SCHEDULE_NAME = re.compile(r"[0-9a-zA-Z_.\-]+")


def assert_sagemaker_name(name: str) -> None:
    assert SAGEMAKER_NAME.fullmatch(name) and NAME_SHAPE["min"] <= len(name) <= NAME_SHAPE["max"], name


@pytest.mark.parametrize("length", range(1, MAX_JOB_NAME_LENGTH + 1))
def test_relaunch_names_of_roots_of_every_length_are_valid(length: int) -> None:
    roots = {"a" * length, ("a-" * length)[: length - 1] + "b" if length > 1 else "b", "7" + "-" * (length - 2) + "x"}
    for root in {r for r in roots if len(r) == length and SAGEMAKER_NAME.fullmatch(r)}:
        for attempt in (1, 9, 10, 99, 100, 999, 1000):
            assert_sagemaker_name(retry_job_name(root, attempt))


def test_an_empty_root_still_gets_a_valid_relaunch_name() -> None:
    assert_sagemaker_name(retry_job_name("", 1))


@HOSTILE
@given(root=hs.LINEAGE_ROOTS, attempt=st.integers(min_value=1, max_value=1000))
def test_a_relaunch_name_is_always_a_valid_job_name(root: str, attempt: int) -> None:
    name = retry_job_name(root, attempt)
    assert_sagemaker_name(name)
    assert name == retry_job_name(root, attempt) and name.endswith(f"-retry{attempt}")
    if SAGEMAKER_NAME.fullmatch(root) and len(root) + len(f"-retry{attempt}") <= MAX_JOB_NAME_LENGTH:
        assert name == f"{root}-retry{attempt}"


@HOSTILE
@given(job=hs.job_names(), signal=st.sampled_from(StallSignal), part=st.integers(1, MAX_GPU_PARTS))
def test_alarm_names_round_trip(job: str, signal: StallSignal, part: int) -> None:
    name = alarm_name(signal, job)
    assert parse_alarm_name(name) == (signal, job) and owned_alarm_job(name) == job
    part_name = gpu_part_name(part, job)
    assert parse_gpu_part_name(part_name) == (part, job) and owned_alarm_job(part_name) == job
    assert parse_alarm_name(part_name) is None  # the stall rule's prefix never matches a part
    assert max(len(name), len(part_name)) <= 255  # CloudWatch AlarmName


@HOSTILE
@given(first=st.one_of(hs.job_names(), hs.LINEAGE_ROOTS), second=hs.job_names())
def test_schedule_names_are_valid_and_distinct(first: str, second: str) -> None:
    for job in (first, second):
        name = schedule_name(job)
        assert SCHEDULE_NAME_SHAPE["min"] <= len(name) <= SCHEDULE_NAME_SHAPE["max"] and SCHEDULE_NAME.fullmatch(name)
    assert (schedule_name(first) == schedule_name(second)) is (first == second)


# --- 4. FailureReason: 1,024 characters, longer, random, real texts cut anywhere ---

REAL_REASONS = [entry["text"] for entry in load_fixture("failure_reasons.json")]
PATTERN_WORDS = (
    "libfabric", "efa", "NET/OFI", "cannot allocate memory", "NCCL", "nccl", "timeout", "timed out", "watchdog",
    "xid", "Xid (PCI:0000:10:1c):", "48", "79", "exit code", "exitcode: -6", "signal 6 (SIGABRT) received by PID",
    "Traceback (most recent call last)", "CUDA out of memory", "internal error", "InternalServerError", "spot",
    "interrupt", "capacity", "ResourceLimitExceeded", "not available in this region", "AccessDenied", "KeyError",
    "/opt/ml/input/data", "ClientError:", "AlgorithmError:", "(", ")", ":", "'", "\\", ".*", "\n", "  ", "\t",
)  # fmt: skip
REASON_TEXTS = st.one_of(
    st.text(max_size=2000),
    st.builds(lambda text, cut: text[:cut], st.sampled_from(REAL_REASONS), st.integers(0, 1300)),
    st.builds(lambda a, b: (a + "\n" + b)[:1024], st.sampled_from(REAL_REASONS), st.sampled_from(REAL_REASONS)),
    st.builds(lambda text, pad: (text + pad * 1024)[:1024], st.sampled_from(REAL_REASONS), st.sampled_from("x é\n")),
    st.lists(st.sampled_from(PATTERN_WORDS), max_size=400).map(" ".join),
    st.lists(st.sampled_from(PATTERN_WORDS), max_size=400).map("".join),
    hs.HUGE_TEXT,
)
NEVER_RETRIED = (Category.USER_CODE, Category.OOM, Category.CONFIG, Category.DATA, Category.UNKNOWN)


@HOSTILE
@given(text=REASON_TEXTS)
def test_any_failure_reason_is_classified_quickly_into_a_known_decision(text: str) -> None:
    reading = classify_failure_reason(text)
    assert reading.category in Category and reading.decision is DECISION_BY_CATEGORY[reading.category]
    assert reading.reason.endswith(".") or reading.reason.endswith(".'")
    if reading.category in NEVER_RETRIED:
        assert reading.decision is not Decision.RETRY
    as_failure_reason = classify_job_end("Failed", "Failed", text)
    assert as_failure_reason == classify_text(text, TextSource.SAGEMAKER)
    assert as_failure_reason.category is reading.category
    assert as_failure_reason.decision is not Decision.QUOTA  # a FailureReason never files a quota request
    # Its cost on any text is bounded by construction (tests/unit/test_classification.py); speed is make bench's.


@WORKFLOW
@given(text=REASON_TEXTS)
def test_a_failure_that_is_not_transient_is_never_relaunched(text: str) -> None:
    reading = classify_text(text, TextSource.SAGEMAKER)
    ports = fake_ports()
    ports.jobs.add(described_job(reason=text), OPTED_IN)  # type: ignore[attr-defined]
    outcome = job_events.handle(failed_event(), ports)
    count_as(f"{reading.category.value}: {outcome.kind.value}")
    assert ports.quotas.requests == []  # type: ignore[attr-defined]  # only a refused launch's error files one
    if reading.decision is not Decision.RETRY:
        assert ports.jobs.created == [] and ports.scheduler.schedules == {}  # type: ignore[attr-defined]
    if reading.category in NEVER_RETRIED:
        assert outcome.kind is OutcomeKind.NOTIFIED and outcome.decision == "notify"


# --- 5. DescribeTrainingJob responses with members missing ---

ACK_SAMPLES = sorted((Path(__file__).parents[1] / "fixtures" / "describe_training_job").glob("ack_fixture.*.json"))
DESCRIPTIONS = [
    described_job(),
    described_job(spot=True, checkpoint=None),
    *(load_fixture(f"describe_training_job/{path.name}") for path in ACK_SAMPLES),
]
for _sample in DESCRIPTIONS:
    _sample.update(TrainingJobName="llama-pretrain", TrainingJobStatus="Failed", FailureReason=INTERNAL)
PASSABLE = tuple({ROLE, *(str(d["RoleArn"]) for d in DESCRIPTIONS)})
RELAUNCH_ANYWAY = {**OPTED_IN, KEYS.restart_without_checkpoint: "true"}


def _readable(description: dict[str, Any]) -> bool:
    name, status = description.get("TrainingJobName"), description.get("TrainingJobStatus")
    return isinstance(name, str) and bool(name) and isinstance(status, str) and bool(status)


def _end_described(description: dict[str, Any]) -> FakePorts:
    """Parse the description; if it parses, run the job-ended workflow on it and check what it sent."""
    try:
        job_from_description(description)
    except MalformedInput:
        assert not _readable(description)
        count_as("outcome: MalformedInput")
        return fake_ports()
    assert _readable(description)
    ports = with_config(fake_ports(), passable_role_arns=PASSABLE)
    ports.jobs.add(description, RELAUNCH_ANYWAY)  # type: ignore[attr-defined]
    outcome = job_events.handle(failed_event(description["TrainingJobName"]), ports)
    count_as(f"outcome: {outcome.kind.value}")
    # a status cut short ("Fail") is no terminal status: skipped as an early event
    expected = (OutcomeKind.RELAUNCHED, OutcomeKind.NOT_RELAUNCHED, OutcomeKind.NOTIFIED)
    assert outcome.kind in expected or description["TrainingJobStatus"] != "Failed", outcome
    if not isinstance(description.get("FailureReason"), str) or not description["FailureReason"]:
        assert outcome.kind is OutcomeKind.NOTIFIED  # no reason, no retry: a person looks
    for request in ports.jobs.created:  # type: ignore[attr-defined]
        assert_valid_create_request(request)
    return ports


def _relaunches_of_channel_without_name() -> list[dict[str, Any]]:
    ports = fake_ports()
    channel = {"DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://data/train/"}}}
    ports.jobs.add({**described_job(), "InputDataConfig": [channel]}, OPTED_IN)  # type: ignore[attr-defined]
    job_events.handle(failed_event(), ports)
    return ports.jobs.created  # type: ignore[attr-defined, no-any-return]


def test_a_relaunch_never_sends_a_list_emptied_by_the_projection() -> None:
    for request in _relaunches_of_channel_without_name():
        assert_valid_create_request(request)


@WORKFLOW
@given(data=st.data(), base=st.sampled_from(DESCRIPTIONS))
def test_a_description_without_optional_members_parses_and_relaunches_validly(
    data: st.DataObject, base: dict[str, Any]
) -> None:
    top_level = tuple(DESCRIBE_OUTPUT.required_members)  # TrainingJobName and TrainingJobStatus too
    _end_described(data.draw(hs.without_optional_members(base, DESCRIBE_OUTPUT, top_level), label="description"))


@WORKFLOW
@given(data=st.data(), base=st.sampled_from(DESCRIPTIONS))
def test_a_description_missing_members_at_any_depth_never_becomes_a_broken_request(
    data: st.DataObject, base: dict[str, Any]
) -> None:
    _end_described(data.draw(hs.mutated(base, max_mutations=8, operations=("delete",)), label="description"))


# --- 6. quota texts ---

QUOTA_TEXTS = [entry["text"] for entry in load_fixture("failure_reasons.json") if entry["category"] == "quota"]
QUOTA_TEXTS += [WALL, "The account-level service limit for training-job/ml.p2.xlarge is 0 Instances"]
SEPARATORS = st.sampled_from([" ", "  ", "\n", "\t", "\r\n", " \n   ", "\n\n", "\u00a0", "\x0b", "\u2028"])
QUOTA_WORDS = ("service", "limit", "for", "'", "'ml.p3.2xlarge for training job usage'", "is", "0", "1,024", "1.2.3",
               "9" * 400, "Instances", ",", "with current utilization of", "and a request delta of", "training-job/",
               "ml.g5.xlarge", "not available in this region", "\n")  # fmt: skip


@HOSTILE
@given(text=st.one_of(st.text(), hs.HUGE_TEXT, st.lists(st.sampled_from(QUOTA_WORDS), max_size=60).map(" ".join)))
def test_any_text_is_read_as_a_quota_or_none_without_raising(text: str) -> None:
    demand = read_quota_error(text)
    if demand is not None:
        assert demand.quota_name and math.isfinite(demand.limit) and demand.limit >= 0


@HOSTILE
@given(text=st.sampled_from(QUOTA_TEXTS), data=st.data())
def test_a_rewrapped_quota_text_reads_the_same(text: str, data: st.DataObject) -> None:
    words = text.split()
    gaps = data.draw(st.lists(SEPARATORS, min_size=len(words) - 1, max_size=len(words) - 1), label="gaps")
    rewrapped = words[0] + "".join(gap + word for gap, word in zip(gaps, words[1:], strict=True))
    expected = read_quota_error(text)
    assert expected is not None and read_quota_error(rewrapped) == expected


# --- 7. log subscription deliveries ---


@HOSTILE
@given(event=LOG_DELIVERIES)
def test_a_log_delivery_is_read_or_refused_as_malformed(event: Any) -> None:
    try:
        activity = parse_log_delivery(event)
    except MalformedInput:
        count_as("MalformedInput")
        return
    count_as("None" if activity is None else "LogActivity")
    if activity is not None:
        assert isinstance(activity, LogActivity) and is_valid_job_name(activity.job_name)
        assert len(activity.last_line) <= LAST_LINE_LIMIT and activity.newest.tzinfo is not None
