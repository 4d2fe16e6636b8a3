"""How the classifier's regular expressions are shown safe on any input, without a clock's verdict.

By construction: Python's `re` backtracks, so what makes a pattern's cost explode is an unbounded repetition
that contains another repetition (`(a+)+`) or repeats any character (`.*` between words): `unsafe_constructs`
reads a pattern's parse tree and names each. By growth: for a text four times longer, a linear pattern costs
about four times as much and a quadratic one sixteen; `cost_growth` gives the ratio, best of several runs of
each size, so that a busy machine slows both sides alike. Speed itself is measured by `make bench`.
"""

from __future__ import annotations

import re
import re._parser as sre_parse  # the standard library's own parser of pattern syntax (Python 3.11+)
import time
from collections.abc import Callable
from re._constants import ANY, BRANCH, MAX_REPEAT, MAXREPEAT, MIN_REPEAT, POSSESSIVE_REPEAT, SUBPATTERN
from typing import Any

_REPEATS = (MAX_REPEAT, MIN_REPEAT, POSSESSIVE_REPEAT)
LINEAR_GROWTH_LIMIT = 10.0  # for 4x the input: linear is about 4, quadratic 16


def unsafe_constructs(pattern: re.Pattern[str] | str) -> list[str]:
    source = pattern.pattern if isinstance(pattern, re.Pattern) else pattern
    found: list[str] = []
    _walk(sre_parse.parse(source), False, found)
    return found


def _walk(items: Any, in_unbounded: bool, found: list[str]) -> None:
    for op, value in items:
        if op in _REPEATS:
            _, most, sub = value
            if in_unbounded:
                found.append("a repetition inside an unbounded repetition")
            unbounded = most == MAXREPEAT
            if unbounded and any(inner == ANY for inner, _ in sub):
                found.append("an unbounded repetition of any character")
            _walk(sub, in_unbounded or unbounded, found)
        elif op == SUBPATTERN:
            _walk(value[-1], in_unbounded, found)
        elif op == BRANCH:
            for branch in value[1]:
                _walk(branch, in_unbounded, found)


def cost_growth(run: Callable[[str], object], text_of_size: Callable[[int], str], size: int, runs: int = 5) -> float:
    """cost(4 x size) / cost(size), each the best of `runs`."""

    def best(text: str) -> float:
        timings = []
        for _ in range(runs):
            started = time.perf_counter()
            run(text)
            timings.append(time.perf_counter() - started)
        return min(timings)

    return best(text_of_size(4 * size)) / best(text_of_size(size))
