"""How the classifier's regular expressions are shown safe on any input, without a clock's verdict.

By construction: Python's `re` backtracks, so what makes a pattern's cost explode is an unbounded repetition
that contains another repetition (`(a+)+`) or repeats any character (`.*` between words): `unsafe_constructs`
reads a pattern's parse tree and names each. By growth: for a text eight times longer, a linear pattern costs
about eight times as much and a quadratic one sixty-four; `cost_growth` gives the ratio of the CPU time of each
(process time, which another process's load does not add to), best of several runs of each size. The limit sits
three times above linear and well below quadratic, so a busy machine's noise does not decide the verdict. Speed
itself is measured by `make bench`.
"""

from __future__ import annotations

import re
import re._parser as sre_parse  # the standard library's own parser of pattern syntax (Python 3.11+)
import time
from collections.abc import Callable
from re._constants import ANY, BRANCH, MAX_REPEAT, MAXREPEAT, MIN_REPEAT, POSSESSIVE_REPEAT, SUBPATTERN
from typing import Any

_REPEATS = (MAX_REPEAT, MIN_REPEAT, POSSESSIVE_REPEAT)
GROWTH_FACTOR = 8  # the longer text is this many times the shorter
LINEAR_GROWTH_LIMIT = 24.0  # for 8x the input: linear is about 8, quadratic 64


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


def cost_growth(run: Callable[[str], object], text: str, runs: int = 5) -> float:
    """cost(a quarter of `text`, repeated GROWTH_FACTOR times) / cost(that quarter), each the best of `runs`."""

    def best(text: str) -> float:
        timings = []
        for _ in range(runs):
            started = time.process_time()
            run(text)
            timings.append(time.process_time() - started)
        return min(timings)

    quarter = text[: max(len(text) // 4, 1)]
    return best(quarter * GROWTH_FACTOR) / max(best(quarter), 1e-6)
