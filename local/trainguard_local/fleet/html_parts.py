"""The HTML report's building blocks (fleet/html_report.py and its sections): a table, a list of terms with their
definitions, and a link that is a link only when its text is a web address. Every text is escaped."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape


def table(rows: Sequence[Sequence[str]], name: str) -> str:
    """A table: its first row is the header."""
    head = "".join(f"<th>{escape(cell)}</th>" for cell in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in rows[1:])
    return f'<table id="{name}-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def terms(pairs: Iterable[tuple[str, str]], name: str) -> str:
    """Terms, each with its definition."""
    items = "".join(f"<dt>{escape(term)}</dt><dd>{escape(text)}</dd>" for term, text in pairs)
    return f'<dl id="{name}">{items}</dl>'


def source(text: str) -> str:
    """A source: a link when it is a web address, else its words (a file of the repository, a document)."""
    if text.startswith("https://"):
        return f'<a href="{escape(text)}">{escape(text)}</a>'
    return escape(text)
