"""Small pieces of trainguard's own wording, shared by the messages and the reasons they quote
(docs/operations.md, "How messages are written")."""

from __future__ import annotations


def format_value(value: float) -> str:
    """A number as people write it: 2,000,000 rather than 2e+06 or 2000000.0, at most three decimals."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.3f}".rstrip("0").rstrip(".")


def counted(count: float, noun: str, plural: str = "") -> str:
    """`count` with what it counts, as people write it: "1 relaunch", "3 relaunches", "1,200 objects"."""
    return f"{format_value(count)} {noun if count == 1 else plural or noun + 's'}"


def sentence(text: str) -> str:
    """trainguard's own clause as a sentence: its first letter capitalised (never the product's name, which is
    written in lower case), a full stop at its end. A text that starts with a name (a job's, a quota's) takes
    `full_stop` instead: a name keeps its case."""
    text = full_stop(text)
    if text[:1].islower() and not text.startswith("trainguard"):
        return text[0].upper() + text[1:]
    return text


def full_stop(text: str) -> str:
    """`text` ending with a full stop (or the question or exclamation mark it has)."""
    text = text.strip()
    return text + ("" if not text or text.endswith((".", "!", "?")) else ".")
