"""A job's own progress rule by tags (issue 27, item 1): templates a tag value can hold, compiled into patterns that
are bounded by construction; a template that breaks a rule is refused with its reason."""

from __future__ import annotations

import botocore.session
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.regex_safety import GROWTH_FACTOR, LINEAR_GROWTH_LIMIT, cost_growth, unsafe_constructs
from trainguard.domain.policy import TagKeys
from trainguard.domain.progress_lines import read_progress_line
from trainguard.domain.progress_reading import MAX_LINE_CHARS, Reader
from trainguard.domain.progress_rule import ProgressRule, compile_template, read_rule_tags

KEYS = TagKeys()
MEGATRON_LINE = (
    " iteration      201/  250000 | consumed samples:       205824 | elapsed time per iteration (ms): 139113.4 |"
    " learning rate: 1.507E-05 | global batch size:  1024 | lm loss: 2.373574E+00 | loss scale: 1.0 |"
)  # epfLLM/Megatron-LLM#11, as in tests/fixtures/progress_lines/megatron.json


def rule(template: str) -> ProgressRule:
    compiled = compile_template(template)
    assert isinstance(compiled, ProgressRule), compiled
    return compiled


@pytest.mark.parametrize(
    ("template", "line", "step", "loss"),
    [
        ("iteration @step/ @any lm loss: @loss", MEGATRON_LINE, 201, 2.373574),
        ("iteration @step/", MEGATRON_LINE, 201, None),
        ("step: @step loss: @loss", "[titan] INFO - step: 14  loss:  3.24405  grad_norm: 0.8", 14, 3.24405),
        ("Batch @step @any training_loss_step @any @loss", "[Epoch 0 Batch 12 .. 'training_loss_step': 0.5}", 12, 0.5),
        ("global_step=@step loss=@loss", "x global_step=7 loss=nan y", 7, float("inf")),
    ],
)
def test_a_template_reads_its_lines(template: str, line: str, step: int, loss: float | None) -> None:
    read = read_progress_line(line, rule(template))
    assert read.source == Reader.TAG_RULE and read.step == step
    if loss is not None and loss == float("inf"):  # the nan case: a NaN equals nothing
        assert read.loss is not None and read.loss != read.loss
    else:
        assert read.loss == loss


def test_a_template_that_does_not_match_leaves_the_line_to_the_frameworks() -> None:
    assert rule("epoch @step done").read(MEGATRON_LINE) is None
    assert read_progress_line(MEGATRON_LINE, rule("epoch @step done")).source == Reader.MEGATRON


@pytest.mark.parametrize(
    ("template", "reason"),
    [
        ("@step", "literal word"),
        ("at @step", "literal word"),
        ("step @step@loss", "need a space or literal text"),
        ("iteration @foo", "unknown placeholder @foo"),
        ("iteration @ @step", "unknown placeholder @"),
        ("loss @loss", "@step exactly once"),
        ("step @step step @step", "@step exactly once"),
        ("step @step loss @loss loss @loss", "@loss may appear once"),
        ("@any step @step", "between two other parts"),
        ("step @step @any", "between two other parts"),
        ("a @any b @any c @any step @step", "at most 2 times"),
        ("step=(\\d+)", "SageMaker tag value"),
        (".*step (\\d+).*", "SageMaker tag value"),
        ("step\t@step", "SageMaker tag value"),
        ("step @step " + "x" * 300, "longer than 256"),
    ],
)
def test_a_template_that_breaks_a_rule_is_refused_with_the_reason(template: str, reason: str) -> None:
    refused = compile_template(template)
    assert isinstance(refused, str) and reason in refused


def test_the_template_alphabet_is_the_one_sagemaker_accepts_in_a_tag_value() -> None:
    """The TagValue shape of botocore's service model: what a template may hold, and no regular expression."""
    model = botocore.session.get_session().get_service_model("sagemaker")
    shape = model.shape_for("TagValue")
    assert shape.metadata["pattern"] == "([\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]*)" and shape.metadata["max"] == 256
    assert isinstance(compile_template("iter_1 . : / = + - @step Ünïcode 42"), ProgressRule)


def test_the_tags_give_the_rule_and_its_expectations() -> None:
    tags = {
        KEYS.progress_pattern: "iteration @step/",
        KEYS.progress_interval_seconds: "120",
        KEYS.progress_start_seconds: "900",
    }
    read = read_rule_tags(tags, KEYS)
    assert read.rule is not None and read.rule.template == "iteration @step/"
    assert (read.interval_seconds, read.start_seconds, read.problems) == (120, 900, ())
    assert read_rule_tags({}, KEYS) == read_rule_tags({"other": "x"}, KEYS)
    assert read_rule_tags({}, KEYS).rule is None


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        (KEYS.progress_pattern, "step (\\d+)", "could not be read: a SageMaker tag value"),
        (KEYS.progress_interval_seconds, "0", "from 1 s to 86,400 s; using none"),
        (KEYS.progress_interval_seconds, "5m", "from 1 s to 86,400 s; using none"),
        (KEYS.progress_start_seconds, "86401", "from 0 s to 86,400 s; using none"),
    ],
)
def test_a_tag_that_cannot_be_used_is_left_out_and_reported(key: str, value: str, said: str) -> None:
    read = read_rule_tags({key: value}, KEYS)
    assert (read.rule, read.interval_seconds, read.start_seconds) == (None, None, None)
    assert len(read.problems) == 1 and read.problems[0].key == key and said in read.problems[0].describe()


def test_the_prefix_is_the_deployed_one() -> None:
    assert read_rule_tags({"acme:progress-pattern": "iteration @step/"}, TagKeys("acme")).rule is not None


TEMPLATE_PARTS = ["iteration", "step", "loss:", "lm", "=", "/", "|", ":", "@step", "@loss", "@any", "x.y", "-"]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(TEMPLATE_PARTS), min_size=1, max_size=12), st.sampled_from([" ", "", "  "]))
def test_every_template_compiles_to_bounded_patterns_or_is_refused(parts: list[str], joiner: str) -> None:
    compiled = compile_template(joiner.join(parts))
    if isinstance(compiled, str):
        assert compiled
        return
    assert all(unsafe_constructs(part) == [] for part in compiled.parts)
    compiled.read("iteration 12/ 13 | lm loss: 1.5 | " * 50)  # never raises


@pytest.mark.parametrize(
    "template", ["iteration @step/ @any lm loss: @loss", "step @step @any x @any loss: @loss", "ab: @step"]
)
def test_the_cost_of_a_hostile_line_for_a_rule_grows_linearly(template: str) -> None:
    compiled = rule(template)
    text = ("iteration 1/ " + "9" * 20 + " step 1 x " + "a 1" * 5)[:200] * (MAX_LINE_CHARS // 200)
    growth = cost_growth(compiled.read, text)
    assert growth < LINEAR_GROWTH_LIMIT, f"{GROWTH_FACTOR}x the text cost {growth:.1f}x"
