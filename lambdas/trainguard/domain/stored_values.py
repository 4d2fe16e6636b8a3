"""Reading back a value a watch entry stored as JSON: anything that does not read as what was stored is not it (the
caller falls back to its empty value), so an entry written by another version never fails a function."""

from __future__ import annotations

from typing import Any, TypeGuard


def stored_list(value: object) -> list[Any]:
    """`value` if it is a list, else an empty one."""
    return value if isinstance(value, list) else []


def stored_count(value: object) -> TypeGuard[int]:
    """Whether `value` is a whole number from 0 to 10**15 (a step, a count), never a bool."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**15
