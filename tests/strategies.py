"""Hypothesis strategies for hostile input: JSON garbage, mutated real samples, hostile tags, job names.

Shared so that a later property test (the chaos suite, an adapter test) draws the same hostile input.
"""

from __future__ import annotations

import copy
import string
from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

from trainguard.domain.policy import TagKeys

Path = tuple[str | int, ...]

# --- JSON, and the garbage a broken producer could put in it ---

# Lone surrogates ("\ud800") are valid in a JSON text ("\\ud800") and decode to unencodable strings.
HOSTILE_CHARACTERS = st.one_of(st.characters(), st.characters(categories=["Cs"]))
HOSTILE_TEXT = st.text(HOSTILE_CHARACTERS, max_size=40)
HUGE_TEXT = st.builds(
    lambda piece, count: piece * count,
    st.sampled_from(["x", "é", "😀", "\x00", "-", " ", "\n", "trainguard:", "\u202e"]),
    st.sampled_from([255, 256, 1023, 1024, 1025, 4096, 65_536, 262_145]),
)
JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),  # NaN and infinities too: Python's json module reads them
    HOSTILE_TEXT,
)


def json_values(max_leaves: int = 12) -> st.SearchStrategy[Any]:
    return st.recursive(
        JSON_SCALARS,
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)),
        max_leaves=max_leaves,
    )


def _nest(depth: int, as_dict: bool) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"a": value} if as_dict else [value]
    return value


NESTED_GARBAGE = st.builds(_nest, st.integers(min_value=1, max_value=80), st.booleans())
GARBAGE = st.one_of(json_values(), HUGE_TEXT, HOSTILE_TEXT, NESTED_GARBAGE)

_BY_TYPE: dict[type, st.SearchStrategy[Any]] = {
    type(None): st.none(),
    bool: st.booleans(),
    int: st.integers(min_value=-(2**70), max_value=2**70),
    float: st.floats(),
    str: st.one_of(HOSTILE_TEXT, HUGE_TEXT),
    list: st.lists(JSON_SCALARS, max_size=3),
    dict: st.dictionaries(st.text(max_size=8), JSON_SCALARS, max_size=3),
}


def other_type_than(value: Any) -> st.SearchStrategy[Any]:
    """A JSON value of any type but `value`'s (a bool is not an int here)."""
    return st.one_of([strategy for kind, strategy in _BY_TYPE.items() if kind is not type(value)])


# --- mutations of a real sample: delete, truncate and retype at any depth ---


def paths(doc: Any, prefix: Path = ()) -> list[Path]:
    """Every path into `doc`, the root () first."""
    found = [prefix]
    if isinstance(doc, Mapping):
        for key, value in doc.items():
            found += paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            found += paths(value, (*prefix, index))
    return found


def get_at(doc: Any, path: Path) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def set_at(doc: Any, path: Path, value: Any) -> Any:
    if not path:
        return value
    get_at(doc, path[:-1])[path[-1]] = value
    return doc


def delete_at(doc: Any, path: Path) -> Any:
    if path:
        del get_at(doc, path[:-1])[path[-1]]
    return doc


MUTATIONS = ("delete", "truncate", "retype", "garbage", "huge", "text")


@st.composite
def mutated(draw: st.DrawFn, sample: Any, max_mutations: int = 5, operations: tuple[str, ...] = MUTATIONS) -> Any:
    """`sample` with 1 to `max_mutations` keys deleted, values cut short or replaced by other JSON."""
    doc = copy.deepcopy(sample)
    for _ in range(draw(st.integers(min_value=1, max_value=max_mutations))):
        path = draw(st.sampled_from(paths(doc)))
        current = get_at(doc, path)
        operation = draw(st.sampled_from(operations))
        if operation == "delete":
            doc = delete_at(doc, path) if path else {}
        elif operation == "truncate":
            if not isinstance(current, Mapping | list | str):
                continue
            keep = draw(st.integers(min_value=0, max_value=max(len(current) - 1, 0)))
            cut = dict(list(current.items())[:keep]) if isinstance(current, Mapping) else current[:keep]
            doc = set_at(doc, path, cut)
        elif operation == "retype":
            doc = set_at(doc, path, draw(other_type_than(current)))
        elif operation == "huge":
            doc = set_at(doc, path, draw(HUGE_TEXT))
        elif operation == "text":
            doc = set_at(doc, path, draw(HOSTILE_TEXT))
        else:
            doc = set_at(doc, path, draw(GARBAGE))
    return doc


@st.composite
def without_optional_members(draw: st.DrawFn, value: Any, shape: Any, top_level_too: tuple[str, ...] = ()) -> Any:
    """`value` (a response) with some members left out that `shape` (a botocore output shape) does not
    require, at any depth; `top_level_too` names required top-level members that may go as well."""
    if not isinstance(value, Mapping) or shape.type_name != "structure":
        if isinstance(value, list) and shape.type_name == "list":
            return [draw(without_optional_members(item, shape.member)) for item in value]
        return copy.deepcopy(value)
    result = {}
    for name, item in value.items():
        member = shape.members.get(name)
        may_go = member is None or name not in shape.required_members or name in top_level_too
        if may_go and draw(st.integers(min_value=0, max_value=3)) == 0:
            continue
        result[name] = draw(without_optional_members(item, member)) if member is not None else copy.deepcopy(item)
    return result


# --- tags ---

KEYS = TagKeys()
POLICY_TAGS = (
    "enabled",
    "max-retries",
    "actions",
    "dry-run",
    "restart-without-checkpoint",
    "continue-after-max-runtime",
)
STALL_TAGS = ("stall-minutes", "gpu-idle-minutes", "gpu-idle-percent", "startup-grace-minutes")
LINEAGE_TAGS = ("root-job", "attempt", "retry-of", "blocked-launch")
TRAINGUARD_TAG_KEYS = tuple(KEYS.key(name) for name in (*POLICY_TAGS, *STALL_TAGS, *LINEAGE_TAGS))

# Values that a person, a script or a typo puts in a tag: each one a trap for a lenient parser.
FLAG_TRAPS = (
    "true", "TRUE", "True", " true ", "\ttrue\n", "true\u00a0", "\u3000true", "\u200btrue", "t rue", "true.",
    "\uff54\uff52\uff55\uff45", "'true'", "1", "yes", "on", "y", "enabled", "false", "FALSE", " false ", "", " ",
    "null", "None",
)  # fmt: skip
NUMBER_TRAPS = (
    "-1", "-0", "0", "1", "2", "3", "19", "20", "21", "99", "1e9", "1E1", "٣", "²", "³", "\uff10", "0x3", "0b1",
    "3.0", "+3", "03", "000003", "0000003", "9999999", "2**64", "18446744073709551617", "NaN", "inf", "¹", "①",
    "¹²", "٣٣", "٣ ", "1_0", " 7 ",
)  # fmt: skip
ACTION_TRAPS = (
    "retry", "notify", "stop", "quota", "retry,notify", "retry+notify", "RETRY STOP", "retry  +  quota",
    "retry;stop", "retry\nstop", "retry\u3000stop", "+", "++", "all", "*", "retries", "\u017ftop", "notify ",
)  # fmt: skip
TAG_VALUE_TRAPS = (*FLAG_TRAPS, *NUMBER_TRAPS, *ACTION_TRAPS)
TAG_VALUES = st.one_of(
    st.sampled_from(TAG_VALUE_TRAPS),
    st.integers(min_value=-(10**12), max_value=10**12).map(str),
    st.text(max_size=40),
    st.builds(lambda piece, count: piece * count, st.sampled_from(["7", "x", "é", "😀"]), st.sampled_from([256, 1025])),
)
ENABLED_VALUES = st.one_of(st.sampled_from(FLAG_TRAPS), TAG_VALUES)
# Keys that look like ours but are not: AWS tag keys are case-sensitive.
LOOKALIKE_KEYS = tuple(
    variant
    for key in (KEYS.enabled, KEYS.max_retries, KEYS.actions, KEYS.dry_run, KEYS.attempt)
    for variant in (key.upper(), key.title(), f" {key}", f"{key} ", key.replace(":", "-"), key.replace(":", ": "))
)
OTHER_KEYS = st.one_of(
    st.sampled_from(("aws:cloudformation:stack-name", "AWS:Owner", "Aws:x", "project", "team", *LOOKALIKE_KEYS)),
    st.text(min_size=1, max_size=128),  # ListTags never returns an empty key (min length 1)
)


@st.composite
def hostile_tags(draw: st.DrawFn) -> dict[str, str]:
    """A few or 45-60 tags (CreateTrainingJob takes 50): strangers, look-alikes, and each of trainguard's own
    keys with a hostile value."""
    count = draw(st.sampled_from([0, 1, 3, 45, 46, 47, 48, 60]))
    tags: dict[str, str] = {}
    for index, (key, value) in enumerate(
        draw(st.lists(st.tuples(OTHER_KEYS, TAG_VALUES), min_size=count, max_size=count))
    ):
        tags[f"{key[:120]}#{index}" if key in tags else key] = value  # distinct keys, without a filter
    for key in TRAINGUARD_TAG_KEYS:
        if draw(st.booleans()):
            tags[key] = draw(ENABLED_VALUES if key == KEYS.enabled else TAG_VALUES)
    return tags


# --- names ---

ALNUM = string.ascii_letters + string.digits


@st.composite
def job_names(draw: st.DrawFn, min_size: int = 1, max_size: int = 63) -> str:
    """A name SageMaker accepts: 1-63 characters, [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}, hyphens often."""
    length = draw(st.integers(min_value=min_size, max_value=max_size))
    ends = st.sampled_from(ALNUM)
    if length == 1:
        return draw(ends)
    middle = draw(st.text(st.sampled_from([*ALNUM, *"-" * 20]), min_size=length - 2, max_size=length - 2))
    return draw(ends) + middle + draw(ends)


LINEAGE_ROOTS = st.one_of(
    job_names(),
    st.text(max_size=300),
    st.text(st.sampled_from("-_. aZ9é"), max_size=120),
    HUGE_TEXT,
)
