"""Fallbacks the owner allowed by tag: another instance type, on-demand instead of spot, a type with quota room.

Workflow tests run on in-memory ports; every request sent is checked against botocore's CreateTrainingJob input.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fakes import FakePorts, described_job, with_config
from tests.fakes import fake_ports as product_default_ports
from tests.unit.test_request_builder import assert_valid_create_request
from trainguard.domain.fallback_options import (
    Alternative,
    FallbackOptions,
    LaunchBounds,
    read_fallback_options,
    within_bounds,
)
from trainguard.domain.fallbacks import FallbackKind, JobFacts, plan_fallback
from trainguard.domain.model import Category
from trainguard.domain.outcome import OutcomeKind
from trainguard.domain.policy import TagKeys
from trainguard.workflows.job_ended import handle_job_end
from trainguard.workflows.scheduled_relaunch import handle_scheduled_relaunch

KEYS = TagKeys()
CAPACITY = (
    "CapacityError: Unable to provision requested ML compute capacity. Please retry using a different ML instance type."
)
OPTED_IN = {"trainguard:enabled": "true"}
ALTERNATIVES = {"trainguard:fallback-types": "ml.p5.48xlarge:2+ml.p4de.24xlarge"}
# The deployer's bound these tests run under (setting launchable_instance_types); the product's default is none.
LAUNCHABLE = ("ml.p4d.24xlarge", "ml.p4de.24xlarge", "ml.p5.48xlarge", "ml.g5.48xlarge", "ml.g6e.48xlarge")


def bounds(request: dict[str, Any], launchable: tuple[str, ...] = LAUNCHABLE) -> LaunchBounds:
    """The bounds of a request that starts its lineage."""
    return LaunchBounds.of_a_first_launch(launchable, request)


def fake_ports() -> FakePorts:
    return with_config(product_default_ports(), launchable_instance_types=LAUNCHABLE)


def tags_of(request: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in request["Tags"]}


def test_the_tags_are_read_and_bad_values_allow_nothing() -> None:
    options = read_fallback_options({**ALTERNATIVES, "trainguard:on-demand-after": "2"}, KEYS)
    assert options.alternatives == (Alternative("ml.p5.48xlarge", 2), Alternative("ml.p4de.24xlarge", None))
    assert options.on_demand_after == 2 and options.problems == ()
    for bad in ("p5.48xlarge", "ml.p5.48xlarge:0", "ml.p5.48xlarge:x", "a b c d e", ""):
        read = read_fallback_options({"trainguard:fallback-types": bad}, KEYS)
        assert read.alternatives == () and read.problems, bad
    assert read_fallback_options({"trainguard:on-demand-after": "0"}, KEYS).on_demand_after is None
    assert (
        len(read_fallback_options({"trainguard:fallback-types": " ".join(["ml.g5.xlarge"] * 4)}, KEYS).alternatives)
        == 1
    )


def test_a_capacity_error_relaunches_at_once_with_instance_preferences() -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(reason=CAPACITY), {**OPTED_IN, **ALTERNATIVES})
    outcome = handle_job_end(ports, "llama-pretrain")
    assert outcome.kind is OutcomeKind.RELAUNCHED and ports.scheduler.schedules == {}  # no backoff
    [request] = ports.jobs.created
    assert_valid_create_request(request)
    assert request["ResourceConfig"] == {
        "VolumeSizeInGB": 100,
        "InstancePreferences": [
            {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 4},
            {"InstanceType": "ml.p5.48xlarge", "InstanceCount": 2},
            {"InstanceType": "ml.p4de.24xlarge", "InstanceCount": 4},
        ],
    }
    assert request["CheckpointConfig"]["S3Uri"] == "s3://ckpt-bucket/llama-pretrain/"
    assert outcome.details["fallback"] == "instance-preferences"
    body = ports.notifier.sent[0].body
    assert "InstancePreferences (4 x ml.p4d.24xlarge, then 2 x ml.p5.48xlarge, then 4 x ml.p4de.24xlarge)" in body


def test_a_tag_that_lists_the_jobs_own_type_keeps_its_own_count() -> None:
    """Found by test_explain_cli's property: 2 x ml.p5.48xlarge tagged "ml.m5.large:1+ml.p5.48xlarge:1" was
    relaunched on 1 x ml.p5.48xlarge first."""
    ports = with_config(product_default_ports(), launchable_instance_types=("ml.m5.large", "ml.p5.48xlarge"))
    description = described_job(reason=CAPACITY)
    description["ResourceConfig"] = {"InstanceType": "ml.p5.48xlarge", "InstanceCount": 2, "VolumeSizeInGB": 100}
    ports.jobs.add(description, {**OPTED_IN, "trainguard:fallback-types": "ml.m5.large:1+ml.p5.48xlarge:1"})
    handle_job_end(ports, "llama-pretrain")
    [request] = ports.jobs.created
    assert request["ResourceConfig"]["InstancePreferences"][0] == {"InstanceType": "ml.p5.48xlarge", "InstanceCount": 2}


def test_without_alternatives_a_capacity_error_waits_its_backoff() -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(reason=CAPACITY), OPTED_IN)
    assert handle_job_end(ports, "llama-pretrain").kind is OutcomeKind.RELAUNCH_SCHEDULED


def test_a_spot_job_walks_the_list_itself_and_stays_spot() -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(reason=CAPACITY, spot=True), {**OPTED_IN, **ALTERNATIVES})
    handle_job_end(ports, "llama-pretrain")
    [request] = ports.jobs.created
    assert_valid_create_request(request)
    assert request["ResourceConfig"]["InstanceType"] == "ml.p5.48xlarge"
    assert request["ResourceConfig"]["InstanceCount"] == 2 and request["EnableManagedSpotTraining"] is True
    assert tags_of(request)["trainguard:spot-failures"] == "1"


def test_a_spot_job_at_the_end_of_its_list_gets_the_plain_relaunch() -> None:
    request = {
        "ResourceConfig": {"InstanceType": "ml.p4de.24xlarge", "InstanceCount": 4},
        "EnableManagedSpotTraining": True,
    }
    options = read_fallback_options(ALTERNATIVES, KEYS)
    assert plan_fallback(Category.CAPACITY, request, JobFacts(True, 1, None), options, bounds(request)) is None


def spot_description(**extra: Any) -> dict[str, Any]:
    description = described_job(status="Stopped", secondary="MaxWaitTimeExceeded", spot=True)
    description["StoppingCondition"] = {"MaxRuntimeInSeconds": 86400, "MaxWaitTimeInSeconds": 172800}
    description.update(extra)
    return description


def test_a_spot_job_past_max_wait_moves_to_on_demand_and_the_message_says_what_it_costs() -> None:
    ports = fake_ports()
    description = spot_description(BillableTimeInSeconds=3000, TrainingTimeInSeconds=10000)
    ports.jobs.add(description, {**OPTED_IN, "trainguard:on-demand-after": "1"})
    outcome = handle_job_end(ports, "llama-pretrain")
    assert outcome.kind is OutcomeKind.RELAUNCHED and outcome.details["fallback"] == "on-demand"
    [request] = ports.jobs.created
    assert_valid_create_request(request)
    assert "EnableManagedSpotTraining" not in request
    assert request["StoppingCondition"] == {"MaxRuntimeInSeconds": 86400}
    assert "trainguard:spot-failures" not in tags_of(request)
    body = ports.notifier.sent[0].body
    # The job paid for 30% of its training time on spot: on-demand costs 1 / 0.3 = 3.3 times as much. The table's
    # $37.69 for ml.p4d.24xlarge is not confirmed, so no dollar figure is given.
    assert "billed for 30% of their training time" in body and "about 3.3 times as much per hour" in body
    assert "$" not in body.split("\nLinks")[0] and "no confirmed list price for ml.p4d.24xlarge" in body


def test_on_demand_after_two_counts_the_lineages_spot_failures() -> None:
    ports = fake_ports()
    tags = {**OPTED_IN, "trainguard:on-demand-after": "2"}
    ports.jobs.add(spot_description(), tags)
    assert handle_job_end(ports, "llama-pretrain").kind is OutcomeKind.RELAUNCH_SCHEDULED  # still spot: its backoff
    handle_scheduled_relaunch(ports, "llama-pretrain")
    first = ports.jobs.created[0]
    assert first["EnableManagedSpotTraining"] is True and tags_of(first)["trainguard:spot-failures"] == "1"
    ports.jobs.add(spot_description(TrainingJobName="llama-pretrain-retry1"), tags_of(first))
    handle_job_end(ports, "llama-pretrain-retry1")
    second = ports.jobs.created[1]
    assert "EnableManagedSpotTraining" not in second and second["TrainingJobName"] == "llama-pretrain-retry2"


def test_on_demand_with_alternatives_lists_them_as_preferences() -> None:
    ports = fake_ports()
    tags = {**OPTED_IN, **ALTERNATIVES, "trainguard:on-demand-after": "1"}
    ports.jobs.add(described_job(reason=CAPACITY, spot=True), tags)
    handle_job_end(ports, "llama-pretrain")
    [request] = ports.jobs.created
    assert_valid_create_request(request)
    assert "EnableManagedSpotTraining" not in request
    assert [p["InstanceType"] for p in request["ResourceConfig"]["InstancePreferences"]] == [
        "ml.p4d.24xlarge",
        "ml.p5.48xlarge",
        "ml.p4de.24xlarge",
    ]


def test_a_dry_run_says_which_fallback_it_would_send() -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(reason=CAPACITY), {**OPTED_IN, **ALTERNATIVES, "trainguard:dry-run": "true"})
    outcome = handle_job_end(ports, "llama-pretrain")
    assert outcome.kind is OutcomeKind.NOT_RELAUNCHED and ports.jobs.created == []
    assert "InstancePreferences" in outcome.reason
    assert "InstancePreferences" in outcome.details["would_send"]["ResourceConfig"]


def test_a_lineage_out_of_retries_gets_no_fallback_either() -> None:
    ports = fake_ports()
    tags = {**OPTED_IN, **ALTERNATIVES, "trainguard:attempt": "3", "trainguard:root-job": "llama-pretrain"}
    ports.jobs.add(described_job(reason=CAPACITY), tags)
    assert handle_job_end(ports, "llama-pretrain").kind is OutcomeKind.NOT_RELAUNCHED
    assert ports.jobs.created == []


def test_a_tag_that_cannot_be_read_is_told_and_the_plain_relaunch_goes() -> None:
    ports = fake_ports()
    ports.jobs.add(described_job(reason=CAPACITY), {**OPTED_IN, "trainguard:fallback-types": "p5 please"})
    assert handle_job_end(ports, "llama-pretrain").kind is OutcomeKind.RELAUNCH_SCHEDULED
    assert "trainguard:fallback-types='p5 please' could not be read" in ports.notifier.sent[0].body


TYPES = ["ml.p4d.24xlarge", "ml.p5.48xlarge", "ml.p4de.24xlarge", "ml.g5.48xlarge", "ml.p5e.48xlarge", "ml.g6.48xlarge"]


@given(
    own=st.sampled_from(TYPES),
    listed=st.lists(st.sampled_from(TYPES), min_size=1, max_size=4),
    spot=st.booleans(),
    failures=st.integers(0, 3),
)
def test_a_fallback_never_asks_for_a_type_the_user_did_not_list(
    own: str, listed: list[str], spot: bool, failures: int
) -> None:
    request: dict[str, Any] = {"ResourceConfig": {"InstanceType": own, "InstanceCount": 2}}
    if spot:
        request["EnableManagedSpotTraining"] = True
    options = FallbackOptions(tuple(Alternative(t, None) for t in dict.fromkeys(listed)), on_demand_after=2)
    for category in (Category.CAPACITY, Category.SPOT_INTERRUPTION):
        fallback = plan_fallback(category, request, JobFacts(spot, failures, None), options, bounds(request))
        if fallback is None:
            continue
        resource = fallback.request["ResourceConfig"]
        asked = {p["InstanceType"] for p in resource.get("InstancePreferences", [])} | {resource.get("InstanceType")}
        assert asked - {None} <= {own, *listed}
        if fallback.kind is FallbackKind.INSTANCE_PREFERENCES:
            assert "EnableManagedSpotTraining" not in fallback.request


P4D_WALL = (
    "The account-level service limit 'ml.p4d.24xlarge for training job usage' is 0 Instances, with current "
    "utilization of 0 Instances and a request delta of 4 Instances. Please use AWS Service Quotas to request an "
    "increase for this quota."
)
QUOTAS = {
    "ml.p4d.24xlarge for training job usage": 0,
    "ml.p5.48xlarge for training job usage": 0,  # no room: never tried
    "ml.p4de.24xlarge for training job usage": 8,  # room by its value; SageMaker decides on usage
    "ml.g6e.48xlarge for training job usage": 8,
}
QUOTA_ALTERNATIVES = {"trainguard:fallback-types": "ml.p5.48xlarge:2+ml.p4de.24xlarge+ml.g6e.48xlarge:4"}


def quota_wall_ports() -> Any:
    from trainguard.workflows.ports import LaunchRefused

    ports = fake_ports()
    ports.quotas.values = dict(QUOTAS)
    ports.jobs.refused_types["ml.p4d.24xlarge"] = LaunchRefused("ResourceLimitExceeded", P4D_WALL)
    return ports


def test_at_a_quota_wall_the_first_alternative_with_room_runs_while_the_request_is_pending() -> None:
    from trainguard.workflows.ports import LaunchRefused
    from trainguard.workflows.quota_watch import check_quota_walls

    ports = quota_wall_ports()
    usage_full = "The account-level service limit 'ml.p4de.24xlarge for training job usage' is 8 Instances, with "
    usage_full += "current utilization of 8 Instances and a request delta of 4 Instances."
    ports.jobs.refused_types["ml.p4de.24xlarge"] = LaunchRefused("ResourceLimitExceeded", usage_full)
    ports.jobs.add(described_job(), {**OPTED_IN, **QUOTA_ALTERNATIVES})
    outcome = handle_job_end(ports, "llama-pretrain")

    assert outcome.kind is OutcomeKind.RELAUNCHED and outcome.details["fallback"] == "quota-room"
    # p4d refused (the wall); p5 skipped (quota 0); p4de refused on usage; g6e launched, under the waiting name.
    tried = [(a["ResourceConfig"]["InstanceType"], a["TrainingJobName"]) for a in ports.jobs.attempts]
    assert tried == [
        ("ml.p4d.24xlarge", "llama-pretrain-retry1"),
        ("ml.p4de.24xlarge", "llama-pretrain-retry1"),
        ("ml.g6e.48xlarge", "llama-pretrain-retry1"),
    ]
    [request] = ports.jobs.created
    assert_valid_create_request(request)
    assert request["ResourceConfig"]["InstanceCount"] == 4
    assert request["CheckpointConfig"]["S3Uri"] == "s3://ckpt-bucket/llama-pretrain/"
    [filed] = ports.quotas.requests  # for the job's own type only, never for an alternative
    assert filed.quota_name == "ml.p4d.24xlarge for training job usage" and filed.status == "PENDING"
    assert ports.quota_ledger.waiting() == []  # nothing waits: the approval launches no second copy
    assert ports.ledger.lineage == [("llama-pretrain", 1, "llama-pretrain-retry1", "llama-pretrain")]
    body = ports.notifier.sent[0].body
    assert "4 x ml.g6e.48xlarge" in body
    # One launch ran, under one name: the message names it once, as the launch on the alternative.
    told = body.split("\nLinks")[0]
    assert told.count("llama-pretrain-retry1") == 1 and "A quota refused the relaunch as it was." in told

    ports.quotas.decide(filed.request_id, "APPROVED")
    check_quota_walls(ports)
    assert len(ports.jobs.created) == 1


def test_with_no_alternative_with_room_the_launch_waits_as_before() -> None:
    ports = quota_wall_ports()
    ports.jobs.add(described_job(), {**OPTED_IN, "trainguard:fallback-types": "ml.p5.48xlarge:2"})
    assert handle_job_end(ports, "llama-pretrain").kind is OutcomeKind.QUOTA_WALL
    assert [w.job_name for w in ports.quota_ledger.waiting()] == ["llama-pretrain-retry1"] and ports.jobs.created == []


def test_a_dry_run_at_a_quota_wall_launches_no_alternative() -> None:
    ports = quota_wall_ports()
    ports.jobs.add(described_job(), {**OPTED_IN, **QUOTA_ALTERNATIVES, "trainguard:actions": "notify+quota"})
    handle_job_end(ports, "llama-pretrain")
    assert ports.jobs.created == []


def test_cloudtrails_copy_of_a_refused_alternative_files_no_second_request() -> None:
    from tests.unit.test_quota_walls import failed_launch
    from trainguard.handlers import failed_launches

    ports = quota_wall_ports()
    tags = [{"key": "trainguard:enabled", "value": "true"}, {"key": "trainguard:retry-of", "value": "llama-pretrain"}]
    outcome = failed_launches.handle(failed_launch(tags=tags), ports)
    assert outcome.kind is OutcomeKind.SKIPPED and "trainguard's own launch" in outcome.reason
    assert ports.quotas.requests == [] and ports.notifier.sent == []


def test_a_preference_whose_quota_is_short_is_dropped_and_the_others_are_tried() -> None:
    """SageMaker checks the quota of every listed type and refuses the whole request if one is short."""
    from trainguard.workflows.ports import LaunchRefused

    ports = fake_ports()
    p5_short = (
        "The account-level service limit 'ml.p5.48xlarge for training job usage' is 0 Instances, with current "
        "utilization of 0 Instances and a request delta of 2 Instances."
    )
    calls: list[dict[str, Any]] = []
    create = ports.jobs.create

    def refuse_while_p5_is_listed(request: dict[str, Any], retry_of: str, key: str) -> Any:
        calls.append(request)
        listed = [p["InstanceType"] for p in request["ResourceConfig"].get("InstancePreferences", [])]
        if "ml.p5.48xlarge" in listed:
            raise LaunchRefused("ResourceLimitExceeded", p5_short)
        return create(request, retry_of, key)

    ports.jobs.create = refuse_while_p5_is_listed  # type: ignore[method-assign]
    ports.jobs.add(described_job(reason=CAPACITY), {**OPTED_IN, **ALTERNATIVES})
    assert handle_job_end(ports, "llama-pretrain").kind is OutcomeKind.RELAUNCHED
    [request] = ports.jobs.created
    assert_valid_create_request(request)
    assert [p["InstanceType"] for p in request["ResourceConfig"]["InstancePreferences"]] == [
        "ml.p4d.24xlarge",
        "ml.p4de.24xlarge",
    ]
    assert len(calls) == 2 and ports.quotas.requests == []  # no request for an alternative's quota


def test_a_dry_run_of_a_users_launch_at_a_quota_wall_names_the_alternatives_it_would_try() -> None:
    from tests.unit.test_quota_walls import failed_launch
    from trainguard.handlers import failed_launches

    ports = quota_wall_ports()
    tags = [
        {"key": "trainguard:enabled", "value": "true"},
        {"key": "trainguard:dry-run", "value": "true"},
        {"key": "trainguard:fallback-types", "value": "ml.p4de.24xlarge:2"},
    ]
    outcome = failed_launches.handle(failed_launch(tags=tags), ports)
    assert "launch meanwhile on the first of 2 x ml.p4de.24xlarge whose quota has room" in outcome.reason
    assert ports.jobs.attempts == [] and ports.quotas.requests == []


def test_an_alternative_more_than_twice_the_jobs_accelerators_or_instances_is_never_used() -> None:
    request = {"ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 4}}  # 32 GPUs
    options = read_fallback_options({"trainguard:fallback-types": "ml.p5.48xlarge:16+ml.p5.48xlarge:8"}, KEYS)
    assert within_bounds(options, request, bounds(request)).alternatives == ()  # p5:16 = 128 GPUs first
    tag = "ml.p5.48xlarge:9 ml.g5.48xlarge:8 ml.g6e.48xlarge:4"
    bounded = within_bounds(read_fallback_options({"trainguard:fallback-types": tag}, KEYS), request, bounds(request))
    assert bounded.alternatives == (Alternative("ml.g6e.48xlarge", 4),)  # 32 GPUs on as many hosts
    assert [line.split(":")[0] for line in bounded.not_followed] == ["9 x ml.p5.48xlarge", "8 x ml.g5.48xlarge"]
    options = read_fallback_options({"trainguard:fallback-types": tag}, KEYS)
    fallback = plan_fallback(Category.CAPACITY, request, JobFacts(False, 0, None), options, bounds(request))
    assert fallback is not None
    assert [p["InstanceType"] for p in fallback.request["ResourceConfig"]["InstancePreferences"]] == [
        "ml.p4d.24xlarge",
        "ml.g6e.48xlarge",
    ]


@pytest.mark.parametrize(
    ("own", "tag", "launchable", "why"),
    [
        # Issue 24: a CPU job's "twice the instances" bound bought 16 H100s.
        (("ml.m5.large", 1), "ml.p5.48xlarge:2", ("ml.m5.large", "ml.p5.48xlarge"), "more instances"),
        (("ml.m5.large", 1), "ml.p5.48xlarge:1", ("ml.m5.large", "ml.p5.48xlarge"), "8 accelerators, more than 2 x"),
        # Issue 24: a type whose GPUs were unknown was bounded by instances only.
        (("ml.g6.xlarge", 1), "ml.p6-b200.48xlarge:1", ("ml.g6.xlarge", "ml.p6-b200.48xlarge"), "8 accelerators"),
        (("ml.g6.xlarge", 2), "ml.p9-future.48xlarge:1", ("ml.p9-future.48xlarge",), "does not know how many"),
        (("ml.p4d.24xlarge", 2), "ml.p5.48xlarge:1", ("ml.p4d.24xlarge",), "not in the deployment's launchable"),
        (("ml.p4d.24xlarge", 2), "ml.p5.48xlarge:1", (), "setting launchable_instance_types is empty"),
    ],
)
def test_the_deployments_bounds_refuse_what_a_tag_asks_beyond_them(
    own: tuple[str, int], tag: str, launchable: tuple[str, ...], why: str
) -> None:
    request = {"ResourceConfig": {"InstanceType": own[0], "InstanceCount": own[1]}}
    options = read_fallback_options({"trainguard:fallback-types": tag, "trainguard:on-demand-after": "1"}, KEYS)
    bounded = within_bounds(options, request, bounds(request, launchable))
    assert bounded.alternatives == () and any(why in line for line in bounded.not_followed), bounded.not_followed
    spot = {**request, "EnableManagedSpotTraining": True}
    for category in (Category.CAPACITY, Category.SPOT_INTERRUPTION):
        fallback = plan_fallback(category, spot, JobFacts(True, 1, None), options, bounds(spot, launchable))
        assert fallback is None or fallback.instance_type == own[0]
    if own[0] not in launchable:  # the job's own type outside the bound: no move to on-demand either
        spot_bounds = bounds(spot, launchable)
        assert plan_fallback(Category.SPOT_INTERRUPTION, spot, JobFacts(True, 1, None), options, spot_bounds) is None


def test_with_the_products_default_bound_a_fallback_tag_buys_nothing_and_the_owner_is_told_why() -> None:
    ports = product_default_ports()
    ports.jobs.add(described_job(reason=CAPACITY, spot=True), {**OPTED_IN, **ALTERNATIVES})
    outcome = handle_job_end(ports, "llama-pretrain")
    assert outcome.kind is OutcomeKind.RELAUNCH_SCHEDULED and "fallback" not in outcome.details
    assert "launchable_instance_types is empty" in ports.notifier.sent[0].body


def test_capacity_words_the_training_script_wrote_buy_the_same_shape_only() -> None:
    """Issue 24: 'AlgorithmError: RuntimeError: insufficient capacity' moved a spot 1 x g5 job to 2 x p6-b200."""
    ports = with_config(product_default_ports(), launchable_instance_types=("ml.g5.xlarge", "ml.p6-b200.48xlarge"))
    description = described_job(reason="AlgorithmError: RuntimeError: insufficient capacity", spot=True)
    description["ResourceConfig"] = {"InstanceType": "ml.g5.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 100}
    tags = {**OPTED_IN, "trainguard:fallback-types": "ml.p6-b200.48xlarge:2", "trainguard:on-demand-after": "1"}
    ports.jobs.add(description, tags)
    outcome = handle_job_end(ports, "llama-pretrain")
    assert outcome.kind is OutcomeKind.RELAUNCH_SCHEDULED and "fallback" not in outcome.details
    handle_scheduled_relaunch(ports, "llama-pretrain")
    [request] = ports.jobs.created
    assert request["ResourceConfig"]["InstanceType"] == "ml.g5.xlarge"
    assert request["ResourceConfig"]["InstanceCount"] == 1 and request["EnableManagedSpotTraining"] is True
    assert "trainguard:spot-failures" not in tags_of(request)


def test_relaunch_after_relaunch_cannot_compound_past_the_lineages_first_launch() -> None:
    """Review of issue 24: measured against the failed job, a spot lineage walking its list doubled at each step
    (1 x g5.12xlarge, then 1 x g5.48xlarge, then 1 x trn1.32xlarge: 4 times the owner's accelerators)."""
    launchable = ("ml.g5.12xlarge", "ml.g5.48xlarge", "ml.trn1.32xlarge")
    ports = with_config(product_default_ports(), launchable_instance_types=launchable)
    root = described_job("llama-pretrain", spot=True)
    root["ResourceConfig"] = {"InstanceType": "ml.g5.12xlarge", "InstanceCount": 1, "VolumeSizeInGB": 100}
    tags = {**OPTED_IN, "trainguard:fallback-types": "ml.g5.48xlarge:1 ml.trn1.32xlarge:1"}
    ports.jobs.add(root, tags)
    fallback = described_job("llama-pretrain-retry1", reason=CAPACITY, spot=True)
    fallback["ResourceConfig"] = {"InstanceType": "ml.g5.48xlarge", "InstanceCount": 1, "VolumeSizeInGB": 100}
    lineage = {
        "trainguard:root-job": "llama-pretrain",
        "trainguard:attempt": "1",
        "trainguard:retry-of": "llama-pretrain",
    }
    ports.jobs.add(fallback, {**tags, **lineage})
    outcome = handle_job_end(ports, "llama-pretrain-retry1")
    assert "fallback" not in outcome.details  # trn1 x 1 = 16 accelerators, 4 x the 4 the lineage started with
    assert "16 accelerators, more than 2 x the 4 the lineage's first job had" in ports.notifier.sent[0].body


def test_a_relaunch_whose_tags_do_not_agree_with_its_name_changes_no_type() -> None:
    """A relaunch's name is trainguard's and fixed; its lineage tags are not: tags that name another root (one
    with a bigger launch, say) do not move the bound."""
    ports = fake_ports()
    big = described_job("someone-elses-big-job")
    big["ResourceConfig"] = {"InstanceType": "ml.p5.48xlarge", "InstanceCount": 16, "VolumeSizeInGB": 100}
    ports.jobs.add(big, OPTED_IN)
    job = described_job("llama-pretrain-retry1", reason=CAPACITY)
    tags = {**OPTED_IN, **ALTERNATIVES, "trainguard:root-job": "someone-elses-big-job", "trainguard:attempt": "1"}
    ports.jobs.add(job, tags)
    outcome = handle_job_end(ports, "llama-pretrain-retry1")
    assert "fallback" not in outcome.details
    assert "cannot tell what this lineage's first job was launched with" in ports.notifier.sent[0].body
